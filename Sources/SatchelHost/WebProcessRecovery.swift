/// What a web view's container does when its web content process dies or stops responding (the white screen): the
/// decisions, as a state machine that returns actions; the WebKit adapters carry them out. One per web view.
///
/// On a termination: end the view's scheme tasks, then load again the URL it was showing (from the package, through
/// the same scheme handler), and once that load finished tell the page why, so it can restore its state. When the
/// view keeps dying (``Configuration/maxTerminations`` within ``Configuration/window``), the next termination shows
/// the package's offline page instead of reloading into another crash.
///
/// A view that stops responding for ``Configuration/unresponsiveTimeout`` is terminated, and recovered the same way.
/// Two signals say so: WebKit's own flag (WebKitGTK's `is-web-process-responsive`), which WebKit only moves when it
/// waits for an answer to input (measured: a page spinning in a loop stayed "responsive" for 15 s with no input, even
/// while scripts were evaluated in it), and the container's heartbeat: every ``Configuration/heartbeat`` it asks the
/// page to evaluate a trivial script, and a probe unanswered for the timeout means the process is stuck.
///
/// Three states give no hang verdict, because a silent page there is not a stuck one:
/// - **off screen** (a warm view waiting in a pool, a view of a hidden window or a backgrounded app): iOS suspends the
///   web processes of views it does not show, so a probe there may wait for as long as the view is hidden. The adapter
///   says whether the view is shown at each beat; a hidden view gets no probe, and one outstanding is forgotten.
/// - **mid-navigation**: WebKit answers no script until the new document exists, so a probe sent then may never be
///   answered (on Apple's WebKit its callback never comes). No probe goes out while a navigation is under way;
///   instead a navigation that does not finish within ``Configuration/loadTimeout`` is stopped and shows the offline
///   page, reported as `load-timeout` (the trial judge of a release counts it the same way).
/// - **a script dialog open** (``dialogOpened()``): the page waits for the app's answer.
public struct WebProcessRecovery: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Terminations within ``window`` after which the view gets the offline page instead of a reload.
        public var maxTerminations: Int
        public var window: Duration
        /// How long a view may stay unresponsive before its web process is terminated.
        public var unresponsiveTimeout: Duration
        /// How often the container probes the page; nil: no probes (WebKit's flag alone). An app pauses probes while
        /// its views cannot answer (on iOS, a suspended app's web processes are suspended too).
        public var heartbeat: Duration?
        /// How long a navigation may take, from its start to its load event, before it is stopped as `load-timeout`
        /// (the offline page instead of a white view); nil: no bound.
        public var loadTimeout: Duration?

        public init(
            maxTerminations: Int = 3, window: Duration = .seconds(60), unresponsiveTimeout: Duration = .seconds(5),
            heartbeat: Duration? = .seconds(2), loadTimeout: Duration? = .seconds(30)
        ) {
            self.maxTerminations = max(1, maxTerminations)
            self.window = window
            self.unresponsiveTimeout = unresponsiveTimeout
            self.heartbeat = heartbeat
            self.loadTimeout = loadTimeout
        }
    }

    /// Why the web process ended (WebKit's reasons, and the container's own).
    public enum Reason: String, Sendable, Equatable {
        case crashed
        case exceededMemoryLimit = "exceeded-memory-limit"
        case terminatedByAPI = "terminated-by-api"
        /// The container terminated it after it stopped responding.
        case unresponsive
        /// Not a termination: a navigation that did not finish within ``Configuration/loadTimeout`` was stopped.
        case loadTimeout = "load-timeout"
    }

    /// What the container did about a termination, for the app's callback.
    public enum Recovery: Sendable, Equatable {
        /// Loaded the URL again.
        case reloaded(url: String)
        /// Showed the offline page: the view died too often to try again.
        case showedOfflinePage(url: String)
        /// The view showed nothing yet (a warm view waiting for its page): nothing to restore, the next load starts
        /// a new web process.
        case nothingToRestore

        /// For reports and logs: `reloaded`, `offline-page`, `nothing-to-restore`.
        public var name: String {
            switch self {
            case .reloaded: "reloaded"
            case .showedOfflinePage: "offline-page"
            case .nothingToRestore: "nothing-to-restore"
            }
        }
    }

    public enum Action: Sendable, Equatable {
        /// End every scheme task of the view (upstream requests cancelled, bodies closed).
        case stopTasks
        /// Load `url` again.
        case reload(url: String)
        /// Show the offline page of the package that answers `url` (a built-in error page when none has one).
        case showOfflinePage(url: String)
        /// Terminate the view's web process (it stopped responding); a termination follows.
        case terminateWebProcess
        /// Call ``responsivenessCheck(now:)`` after `after`, on the view's executor.
        case scheduleResponsivenessCheck(after: Duration)
        /// Evaluate a trivial script in the page and call ``probeAnswered(_:)`` with `id` when it returns.
        case sendProbe(id: Int)
        /// Call ``heartbeatDue(now:visible:)`` after `after`.
        case scheduleHeartbeat(after: Duration)
        /// Call ``loadCheck(now:)`` after `after`.
        case scheduleLoadCheck(after: Duration)
        /// Stop the navigation under way (the offline page follows).
        case stopLoading
        /// Tell the page, once the recovery load finished, that it was recovered and why (``pageNotice(_:)``).
        case notifyPage(reason: Reason)
        /// Tell the app: the reason, the URL the view was showing, and what was done.
        case report(reason: Reason, url: String?, recovery: Recovery)
    }

    /// The script that tells a recovered page why it was loaded again: `window.satchelRecovered = {reason}` and the
    /// event `satchel:recovered` with the same `detail` (both adapters run it in the main frame).
    public static func pageNotice(_ reason: Reason) -> String {
        "window.satchelRecovered = {reason: '\(reason.rawValue)'}; "
            + "window.dispatchEvent(new CustomEvent('satchel:recovered', {detail: window.satchelRecovered}));"
    }

    /// The heartbeat's script: anything the page answers at once.
    public static let probeScript = "0"

    public let configuration: Configuration
    /// Terminations in the window, oldest first.
    private var terminations: [ContinuousClock.Instant] = []
    /// Set when WebKit said the view became unresponsive, until it responds again or is terminated.
    private var unresponsiveSince: ContinuousClock.Instant?
    /// The heartbeat's probe waiting for its answer.
    private var probe: (id: Int, sent: ContinuousClock.Instant)?
    private var probesSent = 0
    private var heartbeatRunning = false
    /// A recovery load under way: the page hears about it when it finished.
    private var pendingNotice: Reason?
    /// The container terminated the process itself: the termination that follows is counted as unresponsive.
    private var terminatingForUnresponsiveness = false
    /// The navigation under way: its URL and when it started.
    private var navigation: (url: String, since: ContinuousClock.Instant)?
    /// Script dialogs waiting for an answer: the page's main thread waits with them.
    private var dialogsOpen = 0

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// The view exists: starts the heartbeat (once).
    public mutating func started() -> [Action] {
        guard let interval = configuration.heartbeat, !heartbeatRunning else { return [] }
        heartbeatRunning = true
        return [.scheduleHeartbeat(after: interval)]
    }

    /// The view's web process ended. `url` is the URL the view was showing (nil: nothing was loaded yet).
    public mutating func processTerminated(_ reported: Reason, url: String?, now: ContinuousClock.Instant) -> [Action] {
        let reason = terminatingForUnresponsiveness ? .unresponsive : reported
        terminatingForUnresponsiveness = false
        unresponsiveSince = nil
        probe = nil
        navigation = nil
        // Dialogs of the dead page are answered by the adapter; the new page starts with none.
        dialogsOpen = 0
        guard let url else {
            pendingNotice = nil
            return [.stopTasks, .report(reason: reason, url: nil, recovery: .nothingToRestore)]
        }
        terminations = terminations.filter { now - $0 < configuration.window } + [now]
        if terminations.count <= configuration.maxTerminations {
            pendingNotice = reason
            return [.stopTasks, .reload(url: url), .report(reason: reason, url: url, recovery: .reloaded(url: url))]
        }
        pendingNotice = nil
        return [.stopTasks, .showOfflinePage(url: url), .report(reason: reason, url: url, recovery: .showedOfflinePage(url: url))]
    }

    /// A navigation of the view to `url` started (a load, a reload, a link): probes wait for its end, and its load
    /// timeout starts. A probe already out is forgotten (it may never be answered now).
    public mutating func navigationStarted(url: String, now: ContinuousClock.Instant) -> [Action] {
        navigation = (url, now)
        probe = nil
        guard let timeout = configuration.loadTimeout else { return [] }
        return [.scheduleLoadCheck(after: timeout)]
    }

    /// A script dialog is waiting for the app's answer (``ScriptDialogs``): the page waits on it, so neither probes nor
    /// WebKit's flag judge it hung, and a load it holds up is not timed out, until ``dialogClosed()``.
    public mutating func dialogOpened() {
        dialogsOpen += 1
        probe = nil
    }

    public mutating func dialogClosed(now: ContinuousClock.Instant = .now) {
        dialogsOpen = max(0, dialogsOpen - 1)
        // The time the page waited on the dialog is not the load's: its timeout starts over.
        if dialogsOpen == 0, navigation != nil { navigation?.since = now }
    }

    /// A navigation failed or was cancelled (the page that was there stays, or an error page shows): no longer
    /// navigating.
    public mutating func navigationFailed() {
        navigation = nil
    }

    /// The check scheduled by ``navigationStarted(url:now:)``: a navigation still under way after the load timeout is
    /// stopped and the view shows the offline page (reported as `load-timeout`, not counted as a termination).
    public mutating func loadCheck(now: ContinuousClock.Instant, visible: Bool = true) -> [Action] {
        guard let navigation, let timeout = configuration.loadTimeout else { return [] }
        // Hidden (its process may be suspended) or waiting on a dialog: not the load's time; the timeout starts over.
        if dialogsOpen > 0 || !visible {
            self.navigation?.since = now
            return [.scheduleLoadCheck(after: timeout)]
        }
        let waited = now - navigation.since
        guard waited >= timeout else { return [.scheduleLoadCheck(after: timeout - waited)] }
        self.navigation = nil
        pendingNotice = nil
        let url = navigation.url
        return [.stopLoading, .stopTasks, .showOfflinePage(url: url), .report(reason: .loadTimeout, url: url, recovery: .showedOfflinePage(url: url))]
    }

    /// A load of the view finished: after a recovery reload, the page hears why it was reloaded.
    public mutating func loadFinished() -> [Action] {
        navigation = nil
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

    /// The check scheduled by ``responsivenessChanged(_:now:)``: still unresponsive for the whole timeout, while shown,
    /// means terminate. A hidden view is checked again later (its process may be suspended, not stuck).
    public mutating func responsivenessCheck(now: ContinuousClock.Instant, visible: Bool = true) -> [Action] {
        guard let since = unresponsiveSince, !terminatingForUnresponsiveness else { return [] }
        guard visible, dialogsOpen == 0 else { return [.scheduleResponsivenessCheck(after: configuration.unresponsiveTimeout)] }
        guard now - since >= configuration.unresponsiveTimeout else {
            return [.scheduleResponsivenessCheck(after: configuration.unresponsiveTimeout - (now - since))]
        }
        return terminate()
    }

    /// The heartbeat's timer fired, `visible` saying whether the view is shown now: a probe unanswered for the timeout
    /// means terminate; otherwise the next probe goes out (or the outstanding one is checked again when its time is
    /// up). Hidden, or mid-navigation: no probe, and none is outstanding.
    public mutating func heartbeatDue(now: ContinuousClock.Instant, visible: Bool) -> [Action] {
        guard let interval = configuration.heartbeat, heartbeatRunning else { return [] }
        if terminatingForUnresponsiveness { return [.scheduleHeartbeat(after: interval)] }
        if !visible || navigation != nil || dialogsOpen > 0 {
            probe = nil
            return [.scheduleHeartbeat(after: interval)]
        }
        if let probe {
            let waited = now - probe.sent
            if waited >= configuration.unresponsiveTimeout { return terminate() + [.scheduleHeartbeat(after: interval)] }
            return [.scheduleHeartbeat(after: min(interval, configuration.unresponsiveTimeout - waited))]
        }
        probesSent += 1
        probe = (probesSent, now)
        return [.sendProbe(id: probesSent), .scheduleHeartbeat(after: min(interval, configuration.unresponsiveTimeout))]
    }

    /// The page answered probe `id` (an answer to an older probe, or from a process since replaced, changes nothing).
    public mutating func probeAnswered(_ id: Int) {
        if probe?.id == id { probe = nil }
    }

    /// Stops the heartbeat (the app is going to the background, where its web processes may be suspended); a
    /// scheduled beat does nothing. ``started()`` starts it again.
    public mutating func pauseHeartbeat() {
        heartbeatRunning = false
        probe = nil
    }

    private mutating func terminate() -> [Action] {
        terminatingForUnresponsiveness = true
        probe = nil
        unresponsiveSince = nil
        return [.terminateWebProcess]
    }
}
