import SatchelCore

/// The store as a container's judge of trials sees it (``TrialRecords``): each verdict names the version judged and
/// changes nothing once that version is no longer on trial, so two views (or a view and the app) deciding the same
/// trial cannot roll back a version that came after it.
extension PackageStore: TrialRecords {
    public func trialVersion(of id: PackageID) throws -> SemanticVersion? {
        try state(of: id)?.trial
    }

    public func confirmTrial(_ id: PackageID, version: SemanticVersion) throws -> Bool {
        var confirmed = false
        try changeState(of: id) { (state, _) throws(StateRefusal) in
            guard state.trial == version else { return }
            try state.confirm()
            confirmed = true
        }
        return confirmed
    }

    public func rollBackTrial(_ id: PackageID, version: SemanticVersion, because failure: TrialFailure) throws -> SemanticVersion? {
        var now: SemanticVersion?
        try changeState(of: id) { (state, available) throws(StateRefusal) in
            guard state.trial == version else { return }
            try state.rollBack(in: available, because: failure)
            now = state.active
        }
        return now
    }
}
