import SatchelCore
import SatchelEngine

/// What the app hears when a view's judge decided a trial (``TrialJudge``): the version, the verdict, and the
/// version served now.
public struct TrialReport: Sendable, Equatable {
    public let id: PackageID
    public let version: SemanticVersion
    public let verdict: TrialJudge.Verdict
    /// After a rollback, the version the store serves instead (nil: the verdict came after the trial had ended, and
    /// changed nothing).
    public let serving: SemanticVersion?

    public init(id: PackageID, version: SemanticVersion, verdict: TrialJudge.Verdict, serving: SemanticVersion?) {
        self.id = id
        self.version = version
        self.verdict = verdict
        self.serving = serving
    }

    /// `confirmed` or `rolled-back` (the viewer's `trial.decision`).
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

    /// The version on trial that the engine serves `url` from, with its origins; nil when the URL is no package's,
    /// or its package is not on trial, or the engine serves another version (pinned at launch, before the trial).
    public func subject(for url: String) -> TrialJudge.Subject? {
        guard let package = package(serving: url) else { return nil }
        let manifest = package.manifest
        guard let trial = try? records.trialVersion(of: manifest.id), trial == manifest.version else { return nil }
        let origins = engine.configuration.customSchemes.flatMap { scheme in manifest.scope.hosts.map { "\(scheme)://\($0.value)" } }
        return TrialJudge.Subject(id: manifest.id, version: manifest.version, origins: Set(origins))
    }

    /// Whether `url` is answered by package `id` (a view showing it reloads after a rollback).
    public func showsPackage(_ id: PackageID, url: String) -> Bool {
        package(serving: url)?.manifest.id == id
    }

    /// Carries a verdict out: confirms the trial, or rolls it back with its reason and re-reads the active versions
    /// (an engine pinned at launch too: the fallback must show now, not at the next launch). A verdict on a version
    /// no longer on trial changes nothing (``TrialReport/serving`` is nil for a rollback then).
    public func carryOut(_ subject: TrialJudge.Subject, _ verdict: TrialJudge.Verdict) -> TrialReport {
        switch verdict {
        case .confirmed:
            _ = try? records.confirmTrial(subject.id, version: subject.version)
            return TrialReport(id: subject.id, version: subject.version, verdict: verdict, serving: subject.version)
        case .rolledBack(let failure):
            let serving = try? records.rollBackTrial(subject.id, version: subject.version, because: failure)
            if serving != nil { try? engine.reload() }
            return TrialReport(id: subject.id, version: subject.version, verdict: verdict, serving: serving ?? nil)
        }
    }

    /// A message of the hook's `trial.js` (`{kind, message, source, network, token}`) as the judge's signal; nil when
    /// its proof does not hold (a frame without the hook's secret made it) or its kind is unknown.
    public func signal(kind: String?, message: String?, source: String?, network: Bool, token: String?) -> TrialJudge.PageSignal? {
        guard let kind else { return nil }
        let message = message ?? "", source = source ?? ""
        if let check = engine.proofCheck {
            let binding = kind + "\n" + message + "\n" + source + "\n" + (network ? "1" : "0")
            do { try check.verify(token.map { Substring($0) }, channel: .trial, binding: binding) } catch { return nil }
        }
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
        guard case .routed(let routed) = engine.route(ResourceRequest(url: url)), let label = routed.package else { return nil }
        return engine.servedPackages.first { $0.label == label }
    }
}
