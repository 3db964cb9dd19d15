import SatchelCore

/// Whether a package version on trial works, judged from the page it serves: a state machine that returns actions,
/// beside ``WebProcessRecovery``; the WebKit adapters feed it and carry the actions out. One per web view.
///
/// A page of a version on trial is judged from its navigation's start:
/// - **confirmed** once it has loaded, painted something (its first contentful paint) and, when the app requires it,
///   called `window.satchel.ready()`, and then ``Configuration/grace`` passed with no failure;
/// - **rolled back** at the first of:
///   - a web-process termination (`crashed`, `exceeded-memory-limit`, or `unresponsive` when the container ended a
///     hung page), ``Configuration/maxTerminations`` of them;
///   - ``Configuration/maxScriptErrors`` errors that count (``counts(_:origins:)``): an uncaught error or unhandled
///     rejection from the package's own scripts, or a script or stylesheet of the package that failed to load
///     (`script-error`, with the first one's first line);
///   - a page not loaded, painted and ready (as required) within ``Configuration/loadTimeout`` of its navigation's
///     start, or the container's own load timeout (`load-timeout`);
///   - the entry document answered with an error status (`entry-status`, with the code).
///
/// Errors count only until the grace period ends: what a page does later is its users' business, not the release's.
/// A navigation within the same version (a link, a recovery's reload) goes on judging the same trial, counts kept; a
/// navigation away from it leaves the trial undecided (the next page of it is judged again). Once decided, a version
/// is not judged again by this view; the store keeps a confirmed one from ever being judged again anywhere.
public struct TrialJudge: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// How long after the page loaded and painted (and called `ready()`, when required) it must stay healthy.
        public var grace: Duration
        /// How long a page has, from its navigation's start, to load, paint and call `ready()` (when required).
        public var loadTimeout: Duration
        /// Whether the page must call `window.satchel.ready()` to be confirmed.
        public var requireReady: Bool
        /// Errors that count, within the trial, before it is rolled back.
        public var maxScriptErrors: Int
        /// Web-process terminations (crashes, memory, hangs), within the trial, before it is rolled back.
        public var maxTerminations: Int

        public init(
            grace: Duration = .seconds(3), loadTimeout: Duration = .seconds(30), requireReady: Bool = false, maxScriptErrors: Int = 1,
            maxTerminations: Int = 1
        ) {
            self.grace = grace
            self.loadTimeout = loadTimeout
            self.requireReady = requireReady
            self.maxScriptErrors = max(1, maxScriptErrors)
            self.maxTerminations = max(1, maxTerminations)
        }
    }

    /// The version judged, and where its pages are served from: the engine's custom schemes and the package's host
    /// patterns (`*.shop.com` included). Its own scripts are those of these origins.
    public struct Subject: Hashable, Sendable {
        public var id: PackageID
        public var version: SemanticVersion
        public var schemes: Set<String>
        public var hosts: [HostPattern]

        public init(id: PackageID, version: SemanticVersion, schemes: Set<String>, hosts: [HostPattern]) {
            self.id = id
            self.version = version
            self.schemes = Set(schemes.map { $0.lowercased() })
            self.hosts = hosts
        }

        /// Whether `url` is served from one of the package's origins (scheme and host compared lower-cased, any port).
        public func owns(_ url: String) -> Bool {
            guard let schemeEnd = url.range(of: "://") else { return false }
            let scheme = url[..<schemeEnd.lowerBound].lowercased()
            let authority = url[schemeEnd.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
            let hostAndPort = authority.split(separator: "@").last.map(String.init) ?? ""
            let host = (hostAndPort.split(separator: ":", maxSplits: 1).first.map(String.init) ?? "").lowercased()
            return !host.isEmpty && schemes.contains(scheme) && hosts.contains { $0.matches(host) }
        }
    }

    /// What the page says about itself (the hook's `trial.js`).
    public enum PageSignal: Sendable, Equatable {
        /// The first contentful paint.
        case painted
        /// `window.satchel.ready()`.
        case ready
        /// An uncaught error: its message and the script it came from (empty: unknown, as for a cross-origin
        /// "Script error.").
        case error(message: String, source: String)
        /// An unhandled rejection: its reason's message, the script its stack names first (empty: unknown), and whether
        /// a failed fetch or XHR caused it.
        case rejection(message: String, source: String, network: Bool)
        /// A script or stylesheet that did not load.
        case resourceFailed(url: String)
    }

    public enum Verdict: Sendable, Equatable {
        case confirmed
        case rolledBack(TrialFailure)
    }

    public enum Action: Sendable, Equatable {
        /// Confirm the trial of the subject's version (``TrialRecords/confirmTrial(_:version:)``) and tell the app.
        case confirm(Subject)
        /// Roll the subject's version back (``TrialRecords/rollBackTrial(_:version:because:)``), then show the
        /// fallback: re-pin the engine, drop warm views, reload every view showing the package; and tell the app.
        case rollBack(Subject, TrialFailure)
        /// Call ``check(now:paused:)`` after `after`.
        case scheduleCheck(after: Duration)
    }

    private struct Trial {
        let subject: Subject
        /// When the navigation being judged began (a pause restarts it).
        var since: ContinuousClock.Instant
        /// The health of the document being judged (reset when a navigation commits a new one).
        var loaded: ContinuousClock.Instant?
        var painted: ContinuousClock.Instant?
        var ready: ContinuousClock.Instant?
        /// The last pause ended: the grace period counts from here, too.
        var resumed: ContinuousClock.Instant?
        /// A document of the version was committed (shown) in this view.
        var committed = false
        var errors = 0
        var firstError: String?
        var terminations = 0
    }

    public let configuration: Configuration
    private var trial: Trial?
    /// The navigation failed: WebKit's end of load that follows is not a document that loaded.
    private var failedLoad = false
    /// Hidden, or waiting on a dialog: the clocks stand still.
    private var paused = false
    /// Versions this view decided.
    private var decided: [Subject: Verdict] = [:]

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// The verdict this view reached for `subject`, if any.
    public func verdict(for subject: Subject) -> Verdict? { decided[subject] }

    /// The subject judged now, if any.
    public var judging: Subject? { trial?.subject }

    /// A navigation of the view started; `subject` is the version on trial that serves its URL (nil: none does). The
    /// document shown until now keeps its health until the new one commits (the navigation may fail, or be a
    /// download); the load's clock starts now.
    public mutating func navigationStarted(subject: Subject?, now: ContinuousClock.Instant) -> [Action] {
        failedLoad = false
        if let current = trial, current.subject == subject {
            trial?.since = now
            return [.scheduleCheck(after: configuration.loadTimeout)]
        }
        guard let subject, decided[subject] == nil else { return [] }
        if trial == nil {
            trial = Trial(subject: subject, since: now)
            return [.scheduleCheck(after: configuration.loadTimeout)]
        }
        return []
    }

    /// The navigation committed a new document; `subject` is the version on trial that serves it (looked up again:
    /// a redirect may have led elsewhere). Another version, or none, ends the judging of the old one undecided (its next
    /// page is judged again); the same version goes on judging the new document, counts kept.
    public mutating func navigationCommitted(subject: Subject?, now: ContinuousClock.Instant) -> [Action] {
        failedLoad = false
        guard let subject, decided[subject] == nil else {
            trial = nil
            return []
        }
        if var same = trial, same.subject == subject {
            same.loaded = nil
            same.painted = nil
            same.ready = nil
            same.committed = true
            trial = same
            return []
        }
        var fresh = Trial(subject: subject, since: now)
        fresh.committed = true
        trial = fresh
        return [.scheduleCheck(after: configuration.loadTimeout)]
    }

    /// The navigation failed or was cancelled (a download, the app's policy, a stop): the document shown stays, and
    /// its health with it; a trial begun by this navigation alone stays for its load timeout to decide.
    public mutating func navigationFailed() {
        failedLoad = true
        // Nothing of the version was ever shown: nothing to judge (a cancelled first load is no verdict on it).
        if trial?.committed == false { trial = nil }
    }

    /// The entry document's status (the navigation's response), when the package answered it: a status the network
    /// gave (an API route, a page served from the network while it is down) is not the release's.
    public mutating func entryStatus(_ code: Int, answeredByPackage: Bool) -> [Action] {
        guard trial != nil, answeredByPackage, code >= 400 else { return [] }
        return rollBack(.entryStatus(code))
    }

    /// The navigation finished (its load event). After a failed navigation WebKit ends the load too: that is no
    /// document loading.
    public mutating func loadFinished(now: ContinuousClock.Instant) -> [Action] {
        if failedLoad {
            failedLoad = false
            return []
        }
        guard trial != nil, trial?.loaded == nil else { return [] }
        trial?.loaded = now
        return nextCheck(now: now)
    }

    /// The view was hidden, or its page began waiting on a dialog: nothing is timed until ``resumed(now:)``.
    public mutating func pause() {
        paused = true
    }

    /// Shown again, or the dialog answered: the load's clock and the grace period start over from now (a page that
    /// was suspended had no chance to load or to fail meanwhile).
    public mutating func resumed(now: ContinuousClock.Instant) -> [Action] {
        guard paused else { return [] }
        paused = false
        guard trial != nil else { return [] }
        trial?.since = now
        trial?.resumed = now
        return [.scheduleCheck(after: .zero)]
    }

    /// The container's recovery ended the page: a termination, or its load timeout.
    public mutating func recovery(_ reason: WebProcessRecovery.Reason) -> [Action] {
        guard var current = trial else { return [] }
        let failure: TrialFailure
        switch reason {
        case .terminatedByAPI: return []
        case .loadTimeout: return rollBack(.loadTimeout("the navigation did not finish"))
        case .crashed: failure = .crashed
        case .exceededMemoryLimit: failure = .exceededMemoryLimit
        case .unresponsive: failure = .unresponsive
        }
        current.terminations += 1
        trial = current
        return current.terminations >= configuration.maxTerminations ? rollBack(failure) : []
    }

    /// What the page said (``PageSignal``).
    public mutating func signal(_ signal: PageSignal, now: ContinuousClock.Instant) -> [Action] {
        guard var current = trial else { return [] }
        switch signal {
        case .painted:
            if current.painted == nil { current.painted = now }
        case .ready:
            if current.ready == nil { current.ready = now }
        case .error, .rejection, .resourceFailed:
            // Counted until the grace period is over (then the trial is decided, and nothing is judged).
            guard Self.counts(signal, for: current.subject), let message = Self.message(of: signal) else { return [] }
            current.errors += 1
            if current.firstError == nil { current.firstError = message }
            trial = current
            return current.errors >= configuration.maxScriptErrors ? rollBack(.scriptError(current.firstError ?? message)) : []
        }
        trial = current
        return nextCheck(now: now)
    }

    /// The check ``Action/scheduleCheck(after:)`` asked for. While paused nothing is decided (``resumed(now:)``
    /// schedules the next check).
    public mutating func check(now: ContinuousClock.Instant) -> [Action] {
        guard let current = trial, !paused else { return [] }
        if let healthy = healthySince(current) {
            let waited = now - healthy
            guard waited >= configuration.grace else { return [.scheduleCheck(after: configuration.grace - waited)] }
            trial = nil
            decided[current.subject] = .confirmed
            return [.confirm(current.subject)]
        }
        let waited = now - current.since
        guard waited >= configuration.loadTimeout else { return [.scheduleCheck(after: configuration.loadTimeout - waited)] }
        // A document that was healthy, with a navigation still under way: the new one has its own load timeout.
        let missing = [
            current.loaded == nil ? "load" : nil, current.painted == nil ? "first contentful paint" : nil,
            configuration.requireReady && current.ready == nil ? "ready()" : nil,
        ].compactMap { $0 }
        return rollBack(.loadTimeout("no " + missing.joined(separator: ", ") + " within the load timeout"))
    }

    /// Another view (or the app) decided this version: this view stops judging it.
    public mutating func settled(_ subject: Subject, _ verdict: Verdict) {
        decided[subject] = verdict
        if trial?.subject == subject { trial = nil }
    }

    /// Whether a page's error counts against the release: an error from one of the package's own scripts, a
    /// rejection not caused by a failed request whose stack names one of the package's scripts, or a file of the
    /// package that failed to load (the adapter passes only those the package answers: ``TrialCourt``). A
    /// cross-origin "Script error.", and a rejection that names no script (a third-party SDK's string, a failed
    /// `response.json()` of an API that is down), never count: the release's own code is what is judged.
    public static func counts(_ signal: PageSignal, for subject: Subject) -> Bool {
        switch signal {
        case .painted, .ready: false
        case .error(_, let source): subject.owns(source)
        case .rejection(_, let source, let network): !network && subject.owns(source)
        case .resourceFailed(let url): subject.owns(url)
        }
    }

    /// The first line of what went wrong, for the failure's detail.
    static func message(of signal: PageSignal) -> String? {
        switch signal {
        case .painted, .ready: nil
        case .error(let message, _), .rejection(let message, _, _): message.isEmpty ? "an error without a message" : message
        case .resourceFailed(let url): "failed to load " + url
        }
    }

    /// When the page became healthy (loaded, painted, ready as required, and not paused since); nil until it is.
    private func healthySince(_ trial: Trial) -> ContinuousClock.Instant? {
        guard let loaded = trial.loaded, let painted = trial.painted else { return nil }
        var since = max(loaded, painted)
        if configuration.requireReady {
            guard let ready = trial.ready else { return nil }
            since = max(since, ready)
        }
        return trial.resumed.map { max(since, $0) } ?? since
    }

    private mutating func nextCheck(now: ContinuousClock.Instant) -> [Action] {
        guard let current = trial, let healthy = healthySince(current) else { return [] }
        return [.scheduleCheck(after: max(.zero, configuration.grace - (now - healthy)))]
    }

    private mutating func rollBack(_ failure: TrialFailure) -> [Action] {
        guard let current = trial else { return [] }
        trial = nil
        decided[current.subject] = .rolledBack(failure)
        return [.rollBack(current.subject, failure)]
    }
}
