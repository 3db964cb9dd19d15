import SatchelCore

/// The store as a container's judge of trials sees it (``TrialRecords``): each verdict names the version judged and
/// changes nothing once that version is no longer on trial, so two views (or a view and the app) deciding the same
/// trial cannot roll back a version that came after it.
extension PackageStore: TrialRecords {
    /// A trial already failed where nothing could replace it is not judged again.
    public func trialVersion(of id: PackageID) throws -> SemanticVersion? {
        guard let state = try state(of: id), let trial = state.trial, !state.failed.contains(trial) else { return nil }
        return trial
    }

    public func confirmTrial(_ id: PackageID, version: SemanticVersion) throws -> Bool {
        var confirmed = false
        try changeState(of: id) { (state, _) throws(StateRefusal) in
            guard state.trial == version, !state.failed.contains(version) else { return }
            try state.confirm()
            confirmed = true
        }
        return confirmed
    }

    public func rollBackTrial(_ id: PackageID, version: SemanticVersion, because failure: TrialFailure) throws -> TrialRollbackOutcome {
        var outcome = TrialRollbackOutcome.notOnTrial
        try changeState(of: id) { (state, available) throws(StateRefusal) in
            guard state.trial == version, !state.failed.contains(version) else { return }
            guard state.fallback(in: available) != nil else {
                // As a trial past its launches with nothing to fall back to: failed, still served, its reason kept.
                state.markFailed(version, because: failure)
                outcome = .failedWithoutFallback
                return
            }
            try state.rollBack(in: available, because: failure)
            outcome = .rolledBack(serving: state.active)
        }
        return outcome
    }
}
