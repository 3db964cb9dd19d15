/// What a container asks of the store when a launch begins to show the app's pages (decision 0036): count that launch
/// against every version on trial. `PackageStore` implements it.
///
/// A launch that shows pages, not a process launch: a process the system starts in the background to refresh (a
/// `BGAppRefreshTask`) opens the store and may update, but shows nothing, so it must not spend a trial's launches.
/// The container (SatchelHost's `PageLaunch`, wired by both WebKit adapters) calls this once, before it answers its first
/// page, and pins the versions that launch shows right after; nothing else in an app calls it, the updater least of all.
public protocol LaunchRecords: Sendable {
    /// Counts one launch that shows pages: every trial counts it, and a trial past its launches is failed and falls
    /// back, persistently, so a version that breaks the app before it can be judged is gone after a few launches.
    func countPageLaunch() throws -> LaunchCount
}

/// What counting a launch that shows pages did to the versions on trial.
public struct LaunchCount: Sendable, Equatable {
    /// A trial that ran out of launches unconfirmed and fell back.
    public struct Rollback: Sendable, Equatable {
        public let id: PackageID
        /// The version that failed.
        public let from: SemanticVersion
        /// The version active now.
        public let to: SemanticVersion

        public init(id: PackageID, from: SemanticVersion, to: SemanticVersion) {
            self.id = id
            self.from = from
            self.to = to
        }
    }

    /// Trials still running, with the launches each has had, this one included.
    public var trials: [PackageID: Int]
    public var rolledBack: [Rollback]
    /// Trials past their launches with nothing to fall back to: failed, and still served.
    public var exhaustedWithoutFallback: [PackageID]

    public init(trials: [PackageID: Int] = [:], rolledBack: [Rollback] = [], exhaustedWithoutFallback: [PackageID] = []) {
        self.trials = trials
        self.rolledBack = rolledBack
        self.exhaustedWithoutFallback = exhaustedWithoutFallback
    }
}
