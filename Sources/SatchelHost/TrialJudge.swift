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

    /// The version judged, and the origins its pages are served from (`satchel://m.shop.com`): its own scripts are
    /// those of these origins.
    public struct Subject: Hashable, Sendable {
        public var id: PackageID
        public var version: SemanticVersion
        public var origins: Set<String>

        public init(id: PackageID, version: SemanticVersion, origins: Set<String>) {
            self.id = id
            self.version = version
            self.origins = Set(origins.map { $0.lowercased() })
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
        /// When the page being judged began navigating (a hidden or waiting page restarts it).
        var since: ContinuousClock.Instant
        var loaded: ContinuousClock.Instant?
        var painted: ContinuousClock.Instant?
        var ready: ContinuousClock.Instant?
        var errors = 0
        var firstError: String?
        var terminations = 0
    }

    public let configuration: Configuration
    private var trial: Trial?
    /// Versions this view decided.
    private var decided: [Subject: Verdict] = [:]

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// The verdict this view reached for `subject`, if any.
    public func verdict(for subject: Subject) -> Verdict? { decided[subject] }

    /// The subject judged now, if any.
    public var judging: Subject? { trial?.subject }

    /// A navigation of the view started; `subject` is the version on trial that serves its URL (nil: none does).
    public mutating func navigationStarted(subject: Subject?, now: ContinuousClock.Instant) -> [Action] {
        guard let subject, decided[subject] == nil else {
            trial = nil
            return []
        }
        if var same = trial, same.subject == subject {
            // A new document of the same version (a link, a recovery's reload): its own load, the counts kept.
            same.since = now
            same.loaded = nil
            same.painted = nil
            same.ready = nil
            trial = same
        } else {
            trial = Trial(subject: subject, since: now)
        }
        return [.scheduleCheck(after: configuration.loadTimeout)]
    }

    /// The entry document's status (the navigation's response).
    public mutating func entryStatus(_ code: Int) -> [Action] {
        guard trial != nil, code >= 400 else { return [] }
        return rollBack(.entryStatus(code))
    }

    /// The navigation finished (its load event).
    public mutating func loadFinished(now: ContinuousClock.Instant) -> [Action] {
        guard trial != nil, trial?.loaded == nil else { return [] }
        trial?.loaded = now
        return nextCheck(now: now)
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
            guard Self.counts(signal, origins: current.subject.origins), let message = Self.message(of: signal) else { return [] }
            current.errors += 1
            if current.firstError == nil { current.firstError = message }
            trial = current
            return current.errors >= configuration.maxScriptErrors ? rollBack(.scriptError(current.firstError ?? message)) : []
        }
        trial = current
        return nextCheck(now: now)
    }

    /// The check ``Action/scheduleCheck(after:)`` asked for. `paused`: the view is hidden (its process may be
    /// suspended) or the page waits on a dialog; the load's clock starts over.
    public mutating func check(now: ContinuousClock.Instant, paused: Bool = false) -> [Action] {
        guard let current = trial else { return [] }
        if paused, healthySince(current) == nil {
            trial?.since = now
            return [.scheduleCheck(after: configuration.loadTimeout)]
        }
        if let healthy = healthySince(current) {
            let waited = now - healthy
            guard waited >= configuration.grace else { return [.scheduleCheck(after: configuration.grace - waited)] }
            trial = nil
            decided[current.subject] = .confirmed
            return [.confirm(current.subject)]
        }
        let waited = now - current.since
        guard waited >= configuration.loadTimeout else { return [.scheduleCheck(after: configuration.loadTimeout - waited)] }
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
    /// rejection not caused by a failed request and not traced to another origin's script, or a package file that
    /// failed to load. A cross-origin "Script error." names no script, so it never counts.
    public static func counts(_ signal: PageSignal, origins: Set<String>) -> Bool {
        switch signal {
        case .painted, .ready: false
        case .error(_, let source): isOwn(source, origins: origins)
        case .rejection(_, let source, let network): !network && (source.isEmpty || isOwn(source, origins: origins))
        case .resourceFailed(let url): isOwn(url, origins: origins)
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

    /// Whether `url` is served from one of `origins` (`scheme://host[:port]`, compared lower-cased).
    static func isOwn(_ url: String, origins: Set<String>) -> Bool {
        guard let schemeEnd = url.range(of: "://") else { return false }
        let afterScheme = url[schemeEnd.upperBound...]
        let authority = afterScheme.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.isEmpty else { return false }
        return origins.contains((url[..<schemeEnd.upperBound] + authority).lowercased())
    }

    /// When the page became healthy (loaded, painted, ready as required); nil until it is.
    private func healthySince(_ trial: Trial) -> ContinuousClock.Instant? {
        guard let loaded = trial.loaded, let painted = trial.painted else { return nil }
        if configuration.requireReady {
            guard let ready = trial.ready else { return nil }
            return max(loaded, painted, ready)
        }
        return max(loaded, painted)
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
