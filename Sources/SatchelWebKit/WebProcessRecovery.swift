/// What a web view's container does when its web content process dies or stops responding (the white screen): the
/// decisions, as a state machine that returns actions; the WebKit adapters carry them out. One per web view.
///
/// On a termination: end the view's scheme tasks, then load again the URL it was showing (from the package, through
/// the same scheme handler), and once that load finished tell the page why, so it can restore its state. When the
/// view keeps dying (``Configuration/maxTerminations`` within ``Configuration/window``), the next termination shows
/// the package's offline page instead of reloading into another crash. A view that stops responding for
/// ``Configuration/unresponsiveTimeout`` is terminated, and recovered the same way.
public struct WebProcessRecovery: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Terminations within ``window`` after which the view gets the offline page instead of a reload.
        public var maxTerminations: Int
        public var window: Duration
        /// How long a view may stay unresponsive before its web process is terminated.
        public var unresponsiveTimeout: Duration

        public init(maxTerminations: Int = 3, window: Duration = .seconds(60), unresponsiveTimeout: Duration = .seconds(5)) {
            self.maxTerminations = max(1, maxTerminations)
            self.window = window
            self.unresponsiveTimeout = unresponsiveTimeout
        }
    }

    /// Why the web process ended (WebKit's reasons, and the container's own).
    public enum Reason: String, Sendable, Equatable {
        case crashed
        case exceededMemoryLimit = "exceeded-memory-limit"
        case terminatedByAPI = "terminated-by-api"
        /// The container terminated it after it stopped responding.
        case unresponsive
    }

    /// What the container did about a termination, for the app's callback.
    public enum Recovery: Sendable, Equatable {
        /// Loaded the URL again.
        case reloaded(url: String)
        /// Showed the offline page: the view died too often to try again, or there was nothing to reload.
        case showedOfflinePage(url: String?)
    }

    public enum Action: Sendable, Equatable {
        /// End every scheme task of the view (upstream requests cancelled, bodies closed).
        case stopTasks
        /// Load `url` again.
        case reload(url: String)
        /// Show the offline page of the package that answers `url` (a built-in error page when none has one).
        case showOfflinePage(url: String?)
        /// Terminate the view's web process (it stopped responding); a termination follows.
        case terminateWebProcess
        /// Call back after `after` (the responsiveness check), on the view's executor.
        case scheduleResponsivenessCheck(after: Duration)
        /// Tell the page, once the recovery load finished, that it was recovered and why.
        case notifyPage(reason: Reason)
        /// Tell the app: the reason, the URL the view was showing, and what was done.
        case report(reason: Reason, url: String?, recovery: Recovery)
    }

    public let configuration: Configuration
    /// Terminations in the window, oldest first.
    private var terminations: [ContinuousClock.Instant] = []
    /// Set when the view became unresponsive, until it responds again or is terminated.
    private var unresponsiveSince: ContinuousClock.Instant?
    /// A recovery load under way: the page hears about it when it finished.
    private var pendingNotice: Reason?
    /// The container terminated the process itself: the termination that follows is counted as unresponsive.
    private var terminatingForUnresponsiveness = false

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// The view's web process ended. `url` is the URL the view was showing (nil: nothing was loaded yet).
    public mutating func processTerminated(_ reported: Reason, url: String?, now: ContinuousClock.Instant) -> [Action] {
        let reason = terminatingForUnresponsiveness ? .unresponsive : reported
        terminatingForUnresponsiveness = false
        unresponsiveSince = nil
        terminations = terminations.filter { now - $0 < configuration.window } + [now]
        let recovery: Recovery
        var actions: [Action] = [.stopTasks]
        if let url, terminations.count <= configuration.maxTerminations {
            recovery = .reloaded(url: url)
            pendingNotice = reason
            actions.append(.reload(url: url))
        } else {
            recovery = .showedOfflinePage(url: url)
            pendingNotice = nil
            actions.append(.showOfflinePage(url: url))
        }
        actions.append(.report(reason: reason, url: url, recovery: recovery))
        return actions
    }

    /// A load of the view finished: after a recovery reload, the page hears why it was reloaded.
    public mutating func loadFinished() -> [Action] {
        guard let reason = pendingNotice else { return [] }
        pendingNotice = nil
        return [.notifyPage(reason: reason)]
    }

    /// WebKit's responsiveness flag changed.
    public mutating func responsivenessChanged(_ responsive: Bool, now: ContinuousClock.Instant) -> [Action] {
        if responsive {
            unresponsiveSince = nil
            return []
        }
        guard unresponsiveSince == nil else { return [] }
        unresponsiveSince = now
        return [.scheduleResponsivenessCheck(after: configuration.unresponsiveTimeout)]
    }

    /// The check scheduled by ``responsivenessChanged(_:now:)``: still unresponsive for the whole timeout means
    /// terminate.
    public mutating func responsivenessCheck(now: ContinuousClock.Instant) -> [Action] {
        guard let since = unresponsiveSince, !terminatingForUnresponsiveness else { return [] }
        guard now - since >= configuration.unresponsiveTimeout else {
            return [.scheduleResponsivenessCheck(after: configuration.unresponsiveTimeout - (now - since))]
        }
        terminatingForUnresponsiveness = true
        return [.terminateWebProcess]
    }
}
