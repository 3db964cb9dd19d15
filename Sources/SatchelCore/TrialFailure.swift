import Foundation

/// Why a version's trial failed on a device: a short word the fleet counts (`why`, sent in device reports) and, kept
/// on the device only, a detail (a script error's first line, an entry document's status). Reports never carry the
/// detail: it may hold page text.
public struct TrialFailure: Hashable, Sendable, CustomStringConvertible {
    /// A lower-case word (`a-z`, `0-9`, `-`, 1-40 bytes, a letter first): what a device report's `why` may hold.
    public let why: String
    /// One line, at most ``maxDetailBytes`` of UTF-8; nil when the reason says it all.
    public let detail: String?

    public static let maxDetailBytes = 200

    /// The web process crashed while the version was on trial.
    public static let crashed = TrialFailure(unchecked: "crashed")
    /// WebKit killed the web process for its memory use.
    public static let exceededMemoryLimit = TrialFailure(unchecked: "exceeded-memory-limit")
    /// The page stopped answering; the container terminated its web process.
    public static let unresponsive = TrialFailure(unchecked: "unresponsive")
    /// The trial ran out of launches unconfirmed, or the app rolled it back without a reason (the word devices sent
    /// before reasons existed).
    public static let trial = TrialFailure(unchecked: "trial")

    /// The package's own script threw (an uncaught error or an unhandled rejection), or one of its scripts failed to
    /// load: the message's first line.
    public static func scriptError(_ message: String) -> TrialFailure { TrialFailure(unchecked: "script-error", detail: message) }
    /// The page did not load (or paint, or call `ready()` when the app requires it) within the load timeout.
    public static func loadTimeout(_ what: String?) -> TrialFailure { TrialFailure(unchecked: "load-timeout", detail: what) }
    /// The entry document was answered with an error status.
    public static func entryStatus(_ code: Int) -> TrialFailure { TrialFailure(unchecked: "entry-status", detail: String(code)) }

    /// A reason as read back (from a store's state or an app): refuses a `why` that is not a report word.
    public init(why: String, detail: String? = nil) throws(TrialFailureError) {
        guard Self.isWord(why) else { throw .notAWord(why) }
        self.init(unchecked: why, detail: detail)
    }

    private init(unchecked why: String, detail: String? = nil) {
        self.why = why
        self.detail = detail.flatMap(Self.firstLine)
    }

    /// What device reports and `satchel rollout status` accept as a reason.
    public static func isWord(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return (1...40).contains(bytes.count) && (0x61...0x7A).contains(bytes[0])
            && bytes.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D }
    }

    /// The first non-empty line, trimmed and cut to ``maxDetailBytes`` on a character boundary; nil when none.
    static func firstLine(_ text: String) -> String? {
        guard let line = text.split(whereSeparator: \.isNewline).lazy.map({ $0.trimmingCharacters(in: .whitespaces) }).first(where: { !$0.isEmpty })
        else { return nil }
        var cut = ""
        for character in line {
            guard cut.utf8.count + String(character).utf8.count <= maxDetailBytes else { break }
            cut.append(character)
        }
        return cut
    }

    public var description: String { detail.map { "\(why): \($0)" } ?? why }
}

public enum TrialFailureError: Error, Equatable, Sendable, CustomStringConvertible {
    case notAWord(String)

    public var description: String {
        switch self {
        case .notAWord(let text): "trial failure reason \(text.debugDescription) must be 1-40 of a-z, 0-9 and '-', starting with a letter"
        }
    }
}

/// What a container asks of the store that holds its packages to judge a trial: which version of a package is on
/// trial, and to end that trial either way. `PackageStore` implements it; each call names the version judged, so a
/// verdict that comes after the trial ended (another view decided, the app confirmed) changes nothing.
public protocol TrialRecords: Sendable {
    /// The version of `id` on trial, nil when none is.
    func trialVersion(of id: PackageID) throws -> SemanticVersion?
    /// Confirms the trial of `version`; false when it was not on trial (any more).
    func confirmTrial(_ id: PackageID, version: SemanticVersion) throws -> Bool
    /// Ends the trial of `version` as failed, recording `failure`.
    func rollBackTrial(_ id: PackageID, version: SemanticVersion, because failure: TrialFailure) throws -> TrialRollbackOutcome
}

/// What a rollback of a trial did in the store.
public enum TrialRollbackOutcome: Sendable, Equatable {
    /// The version failed; `serving` serves instead.
    case rolledBack(serving: SemanticVersion)
    /// The version failed but is still served: there is nothing to fall back to. Its trial ends (it is not judged
    /// again); an update or an explicit choice replaces it.
    case failedWithoutFallback
    /// `version` was not on trial (any more): nothing changed.
    case notOnTrial
}
