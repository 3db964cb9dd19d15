import SatchelCore

/// What the rules need to know besides the state: which versions exist to be served. A version whose folder is
/// gone is never chosen, and the built-in version is the floor: always there, never failed, and nothing older
/// than it is ever served.
public struct AvailableVersions: Sendable, Equatable {
    /// Versions with a folder in the store.
    public var installed: Set<SemanticVersion>
    /// The version of the package's built-in bundle, if the app ships one.
    public var builtIn: SemanticVersion?

    public init(installed: Set<SemanticVersion>, builtIn: SemanticVersion? = nil) {
        self.installed = installed
        self.builtIn = builtIn
    }

    public func contains(_ version: SemanticVersion) -> Bool { installed.contains(version) || version == builtIn }

    /// Not below the floor.
    public func allows(_ version: SemanticVersion) -> Bool { builtIn.map { version >= $0 } ?? true }
}

/// Why a rule refused a transition. ``PackageStore`` turns these into ``StoreError``s naming the package.
public enum StateRefusal: Error, Equatable, Sendable {
    case notOnTrial
    /// Nothing earlier served and did not fail, and there is no built-in to return to.
    case noFallback
    /// The version is older than the package's built-in, which is the floor.
    case belowBuiltIn(SemanticVersion, builtIn: SemanticVersion)
    case unavailable(SemanticVersion)
    case active(SemanticVersion)
    /// Built-ins are read-only: part of the app, not of the store.
    case builtIn(SemanticVersion)
    /// The version is kept by the rule: what the active version falls back to, or the newest confirmed one.
    case kept(SemanticVersion, because: KeepReason)

    public enum KeepReason: String, Sendable, Equatable {
        case fallback
        case lastConfirmed
    }
}

/// What a launch did to one package.
public enum LaunchOutcome: Equatable, Sendable {
    case notOnTrial
    /// The trial goes on; this is its launch count.
    case counted(Int)
    /// The trial ran out of launches; it is marked failed and the fallback serves instead.
    case rolledBack(from: SemanticVersion, to: SemanticVersion)
    /// The trial ran out with nothing to fall back to: marked failed but still served (nothing safer exists).
    case exhaustedWithoutFallback(SemanticVersion)
}

extension PackageState {
    // MARK: Starting points

    /// A package installed for the first time, with no built-in below it.
    public static func firstInstall(_ version: SemanticVersion) -> PackageState {
        PackageState(active: version, trial: version, launches: 0, history: [])
    }

    /// A package that only its built-in provides: served, confirmed (it shipped with the app).
    public static func builtIn(_ version: SemanticVersion) -> PackageState {
        PackageState(active: version, trial: nil, launches: 0, history: [version])
    }

    /// The state to apply rules to: the stored one brought up to the floor, or the built-in's own.
    public static func effective(stored: PackageState?, builtIn: SemanticVersion?) -> PackageState? {
        guard let stored else { return builtIn.map(PackageState.builtIn) }
        return stored.raised(toFloor: builtIn)
    }

    /// An app update may ship a built-in newer than what was served: the built-in then serves, confirmed, and
    /// whatever is older than it leaves the state (it will never be served again, so its folder can go).
    public func raised(toFloor builtIn: SemanticVersion?) -> PackageState {
        guard let builtIn else { return self }
        var state = self
        state.history.removeAll { $0 < builtIn }
        state.unconfirmed = state.unconfirmed.filter { $0 >= builtIn }
        state.failed = state.failed.filter { $0 >= builtIn }
        if state.active < builtIn {
            state.active = builtIn
            state.trial = nil
            state.launches = 0
        }
        if state.active == builtIn {
            // The built-in is confirmed by definition, never on trial, never failed.
            state.trial = nil
            state.failed.remove(builtIn)
            state.unconfirmed.remove(builtIn)
            if !state.history.contains(builtIn) { state.history.append(builtIn) }
        }
        return state
    }

    // MARK: Reading the rules

    /// Whether `version` served as a confirmed version (the built-in counts as one).
    public func isConfirmed(_ version: SemanticVersion, in available: AvailableVersions) -> Bool {
        version == available.builtIn || (history.contains(version) && !unconfirmed.contains(version))
    }

    /// Where the active version falls back to: the newest entry of ``history`` (confirmed, or superseded while on
    /// trial) other than the active one that has not failed, still exists and is not below the floor; else the
    /// built-in. Nil when there is nowhere to go.
    public func fallback(in available: AvailableVersions) -> SemanticVersion? {
        if let entry = history.last(where: { $0 != active && !failed.contains($0) && available.contains($0) && available.allows($0) }) {
            return entry
        }
        if let builtIn = available.builtIn, builtIn != active { return builtIn }
        return nil
    }

    /// Versions no rule may drop: the active one, its fallback and the newest confirmed one (when it exists).
    public func protectedVersions(in available: AvailableVersions) -> Set<SemanticVersion> {
        var versions: Set<SemanticVersion> = [active]
        if let fallback = fallback(in: available) { versions.insert(fallback) }
        if let confirmed, available.contains(confirmed) { versions.insert(confirmed) }
        return versions
    }

    /// Every version the state refers to.
    public var referencedVersions: Set<SemanticVersion> {
        Set(history).union(failed).union([active])
    }

    /// The keep set: the versions whose folders must stay on disk, given the state (nil: the package is gone)
    /// and the versions running engines have pinned. gc, remove and recovery all delete exactly the folders
    /// outside it, after gc and remove have applied their own transitions to the state.
    public static func retained(by state: PackageState?, pinned: Set<SemanticVersion>) -> Set<SemanticVersion> {
        (state?.referencedVersions ?? []).union(pinned)
    }

    // MARK: Transitions

    /// A bundle of `version` was installed (or was already there): it becomes active on trial. The version it
    /// replaces stays a fallback if it served without failing. Installing the active version again is nothing,
    /// unless it had failed: a reinstall gives it a new trial. Installing the built-in's own version activates the
    /// built-in.
    /// - Returns: whether the state changed.
    @discardableResult
    public mutating func install(_ version: SemanticVersion, in available: AvailableVersions) throws(StateRefusal) -> Bool {
        if let builtIn = available.builtIn, version < builtIn { throw .belowBuiltIn(version, builtIn: builtIn) }
        if version == available.builtIn { return try activate(version, in: available) }
        if version == active {
            guard failed.contains(version) else { return false }
            enter(version, onTrial: true)
            return true
        }
        leave(failing: false, in: available)
        enter(version, onTrial: true)
        return true
    }

    /// An explicit choice of an installed version. One that served confirmed (and has not failed since) is
    /// active as confirmed; any other starts a trial, a failed one included: explicit choices may pick it.
    @discardableResult
    public mutating func activate(_ version: SemanticVersion, in available: AvailableVersions) throws(StateRefusal) -> Bool {
        guard available.contains(version) else { throw .unavailable(version) }
        if let builtIn = available.builtIn, version < builtIn { throw .belowBuiltIn(version, builtIn: builtIn) }
        let confirmedBefore = isConfirmed(version, in: available) && !failed.contains(version)
        if version == active {
            guard failed.contains(version) else { return false }
            enter(version, onTrial: true)
            return true
        }
        leave(failing: false, in: available)
        enter(version, onTrial: !confirmedBefore)
        if confirmedBefore, !history.contains(version) { history.append(version) }
        return true
    }

    /// The app says the trial works: the active version becomes the newest confirmed one.
    public mutating func confirm() throws(StateRefusal) {
        guard trial != nil else { throw .notOnTrial }
        trial = nil
        launches = 0
        history.removeAll { $0 == active }
        history.append(active)
        unconfirmed.remove(active)
        failed.remove(active)
    }

    /// Returns to the fallback. The version left is marked failed (never chosen again automatically), so a
    /// second rollback goes further back instead of forth again.
    /// - Returns: the version rolled back from.
    /// - Parameter reason: why, when it is known (a trial judged by its container); without one the version reads as
    ///   failed for `trial`.
    @discardableResult
    public mutating func rollBack(in available: AvailableVersions, because reason: TrialFailure? = nil) throws(StateRefusal) -> SemanticVersion {
        guard let target = fallback(in: available) else { throw .noFallback }
        let from = active
        fallBack(to: target, in: available, because: reason)
        return from
    }

    /// One app launch: a trial counts it; a trial past `maxTrialLaunches` is marked failed and falls back, so a
    /// crash loop ends even if the app never gets to confirm.
    /// A trial that already ran out with nowhere to go is not counted again: its state stays as it is (so a launch
    /// rewrites nothing), until a fallback exists, to which it then goes.
    public mutating func beginLaunch(maxTrialLaunches: Int, in available: AvailableVersions) -> LaunchOutcome {
        guard trial != nil else { return .notOnTrial }
        if failed.contains(active), launches > maxTrialLaunches {
            guard let target = fallback(in: available) else { return .exhaustedWithoutFallback(active) }
            let from = active
            fallBack(to: target, in: available)
            return .rolledBack(from: from, to: target)
        }
        launches += 1
        guard launches > maxTrialLaunches else { return .counted(launches) }
        let from = active
        guard let target = fallback(in: available) else {
            failed.insert(active)
            return .exhaustedWithoutFallback(active)
        }
        fallBack(to: target, in: available)
        return .rolledBack(from: from, to: target)
    }

    /// Forgets one version (its folder goes unless an engine pins it). The active version, the built-in and the
    /// versions the rule protects (``protectedVersions(in:)``) are refused.
    public mutating func remove(_ version: SemanticVersion, in available: AvailableVersions) throws(StateRefusal) {
        guard version != active else { throw .active(version) }
        guard version != available.builtIn else { throw .builtIn(version) }
        if version == fallback(in: available) { throw .kept(version, because: .fallback) }
        if version == confirmed { throw .kept(version, because: .lastConfirmed) }
        forget(version)
    }

    /// Forgets every version the rule does not protect except the `keep` newest other history entries: failed
    /// versions, versions below the floor or without a folder, older fallbacks.
    /// - Returns: the versions forgotten.
    @discardableResult
    public mutating func collectGarbage(keep: Int, in available: AvailableVersions) -> Set<SemanticVersion> {
        let protected = protectedVersions(in: available)
        let candidates = history.filter { !protected.contains($0) && available.contains($0) && available.allows($0) }
        let kept = protected.union(candidates.suffix(max(0, keep)))
        let forgotten = referencedVersions.subtracting(kept)
        for version in forgotten { forget(version) }
        return forgotten
    }

    // MARK: Steps

    /// Moves to the fallback: the active version is marked failed, and history entries after the target (which
    /// the fallback skipped: failed, gone or below the floor) are dropped with it. A target that only ever served
    /// on trial is on trial again: it never proved itself.
    private mutating func fallBack(to target: SemanticVersion, in available: AvailableVersions, because reason: TrialFailure? = nil) {
        let confirmedTarget = isConfirmed(target, in: available)
        leave(failing: true, because: reason, in: available)
        if let index = history.lastIndex(of: target) { history.removeSubrange((index + 1)...) }
        unconfirmed = unconfirmed.filter(history.contains)
        enter(target, onTrial: !confirmedTarget)
    }

    /// The active version stops being served. A trial that did not fail was superseded: it served, so it joins
    /// the history as unconfirmed. With `failing`, it is marked failed instead (the built-in never is).
    private mutating func leave(failing: Bool, because reason: TrialFailure? = nil, in available: AvailableVersions) {
        if active == available.builtIn { return }
        if failing {
            forget(active)
            failed.insert(active)
            if let reason { markFailed(active, because: reason) }
        } else if trial != nil, !failed.contains(active) {
            history.removeAll { $0 == active }
            history.append(active)
            unconfirmed.insert(active)
        }
    }

    private mutating func enter(_ version: SemanticVersion, onTrial: Bool) {
        active = version
        trial = onTrial ? version : nil
        launches = 0
        failed.remove(version)
        if onTrial {
            history.removeAll { $0 == version }
            unconfirmed.remove(version)
        }
    }

    private mutating func forget(_ version: SemanticVersion) {
        history.removeAll { $0 == version }
        unconfirmed.remove(version)
        failed.remove(version)
    }
}
