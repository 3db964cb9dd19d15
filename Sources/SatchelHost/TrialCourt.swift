import SatchelCore
import SatchelEngine

/// What the app hears when a view's judge decided a trial (``TrialJudge``): the version, the verdict, and what the
/// store did with it.
public struct TrialReport: Sendable, Equatable {
    /// What the verdict changed.
    public enum Outcome: Sendable, Equatable {
        /// The trial is confirmed.
        case confirmed
        /// The version is failed with the verdict's reason, and `serving` serves instead (already re-read by the
        /// engine, unless ``TrialReport/engineError`` says why not).
        case rolledBack(serving: SemanticVersion)
        /// The version is failed with the verdict's reason but still served: nothing safer exists (a first install, no
        /// built-in). It is not judged again.
        case failedWithoutFallback
        /// The version was no longer on trial (another view, the app or another process decided first): nothing
        /// changed.
        case alreadyDecided
        /// The store could not record the verdict (its error); nothing changed.
        case storeError(String)
    }

    public let id: PackageID
    public let version: SemanticVersion
    public let verdict: TrialJudge.Verdict
    public let outcome: Outcome
    /// Why the engine could not re-read the active versions after a rollback (its views would show the old version
    /// until the next launch); nil when it did.
    public let engineError: String?

    public init(id: PackageID, version: SemanticVersion, verdict: TrialJudge.Verdict, outcome: Outcome, engineError: String? = nil) {
        self.id = id
        self.version = version
        self.verdict = verdict
        self.outcome = outcome
        self.engineError = engineError
    }

    /// `confirmed` or `rolled-back` (the viewer's `trial.decision`): the verdict, whatever the store did with it.
    public var decision: String {
        switch verdict {
        case .confirmed: "confirmed"
        case .rolledBack: "rolled-back"
        }
    }

    /// The failure's reason and detail, after a rollback.
    public var failure: TrialFailure? {
        if case .rolledBack(let failure) = verdict { return failure }
        return nil
    }

    /// The version served after the verdict, when the verdict changed it or kept it (nil: it did not decide).
    public var serving: SemanticVersion? {
        switch outcome {
        case .confirmed, .failedWithoutFallback: version
        case .rolledBack(let serving): serving
        case .alreadyDecided, .storeError: nil
        }
    }

    /// Whether views of the package must load again to show another version.
    public var fallbackToShow: Bool {
        if case .rolledBack = outcome { return true }
        return false
    }
}

/// The part of judging trials both WebKit adapters share, so they cannot drift: which version on trial serves a URL,
/// and what a verdict does to the store and the engine. The adapter then does what only it can: drop warm views and
/// reload every view showing the package (``showsPackage(_:url:)``), tell the other views' judges, tell the app.
public struct TrialCourt: Sendable {
    public let engine: ResourceEngine
    public let records: any TrialRecords
    public let configuration: TrialJudge.Configuration

    public init(engine: ResourceEngine, records: any TrialRecords, configuration: TrialJudge.Configuration = TrialJudge.Configuration()) {
        self.engine = engine
        self.records = records
        self.configuration = configuration
    }

    /// The version on trial that the engine serves `url` from, with its origins; nil when the URL is no package's
    /// (the live website of a package's host, on http or https, is not), or its package is not on trial, or the engine
    /// serves another version (pinned at launch, before the trial).
    public func subject(for url: String) -> TrialJudge.Subject? {
        guard let package = package(serving: url) else { return nil }
        let manifest = package.manifest
        guard let trial = try? records.trialVersion(of: manifest.id), trial == manifest.version else { return nil }
        return TrialJudge.Subject(id: manifest.id, version: manifest.version, schemes: engine.configuration.customSchemes, hosts: manifest.scope.hosts)
    }

    /// Whether the package itself answers `url`: a file it holds under an offline-first route, or anything under an
    /// offline-only one (a missing file is then the package's 404). An answer the network gives (a network route, a
    /// file the package leaves to the network) failing is not the release's fault.
    public func packageAnswers(_ url: String) -> Bool {
        guard let routed = routed(url), routed.outside == nil else { return false }
        switch routed.strategy {
        case .offlineOnly: return true
        case .offlineFirst: return routed.isInPackage
        case .networkFirst, .networkOnly: return false
        }
    }

    /// Whether `url` is a page of package `id` on a custom scheme (a view showing it reloads after a rollback).
    public func showsPackage(_ id: PackageID, url: String) -> Bool {
        package(serving: url)?.manifest.id == id
    }

    private func routed(_ url: String) -> RoutedRequest? {
        // Only the custom schemes: the engine also routes http(s) URLs of a package's hosts (a proxy's requests), but a
        // page of the live website is not the package's.
        guard let colon = url.firstIndex(of: ":"), engine.configuration.customSchemes.contains(url[..<colon].lowercased()) else { return nil }
        guard case .routed(let routed) = engine.route(ResourceRequest(url: url)) else { return nil }
        return routed
    }

    /// Carries a verdict out: confirms the trial, or fails it with its reason and re-reads the active versions (an
    /// engine pinned at launch too: the fallback must show now, not at the next launch). A verdict on a version no
    /// longer on trial changes nothing. It takes the store's lock: call it off the main thread.
    public func carryOut(_ subject: TrialJudge.Subject, _ verdict: TrialJudge.Verdict) -> TrialReport {
        let outcome: TrialReport.Outcome
        do {
            switch verdict {
            case .confirmed:
                outcome = try records.confirmTrial(subject.id, version: subject.version) ? .confirmed : .alreadyDecided
            case .rolledBack(let failure):
                switch try records.rollBackTrial(subject.id, version: subject.version, because: failure) {
                case .rolledBack(let serving): outcome = .rolledBack(serving: serving)
                case .failedWithoutFallback: outcome = .failedWithoutFallback
                case .notOnTrial: outcome = .alreadyDecided
                }
            }
        } catch {
            outcome = .storeError("\(error)")
        }
        var engineError: String?
        if case .rolledBack = outcome {
            do { try engine.reload() } catch { engineError = "\(error)" }
        }
        return TrialReport(id: subject.id, version: subject.version, verdict: verdict, outcome: outcome, engineError: engineError)
    }

    /// A message of the hook's `trial.js` (`{kind, message, source, network, token}`) as the judge's signal; nil when
    /// its proof does not hold (a frame without the hook's secret made it), its kind is unknown, or it is a failed
    /// load of a file the package does not answer itself (``packageAnswers(_:)``). Without proofs (an engine that
    /// accepts unproven bodies) only an adapter that knows the sending frame's origin may take messages at all.
    public func signal(kind: String?, message: String?, source: String?, network: Bool, token: String?) -> TrialJudge.PageSignal? {
        guard let kind else { return nil }
        let message = message ?? "", source = source ?? ""
        if let check = engine.proofCheck {
            let binding = kind + "\n" + message + "\n" + source + "\n" + (network ? "1" : "0")
            do { try check.verify(token.map { Substring($0) }, channel: .trial, binding: binding) } catch { return nil }
        }
        if kind == "resource", !packageAnswers(source) { return nil }
        switch kind {
        case "paint": return .painted
        case "ready": return .ready
        case "error": return .error(message: message, source: source)
        case "rejection": return .rejection(message: message, source: source, network: network)
        case "resource": return .resourceFailed(url: source)
        default: return nil
        }
    }

    private func package(serving url: String) -> ServedPackage? {
        guard let label = routed(url)?.package else { return nil }
        return engine.servedPackages.first { $0.label == label }
    }
}
