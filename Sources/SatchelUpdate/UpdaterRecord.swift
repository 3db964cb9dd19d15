import Foundation
import SatchelCore
import SatchelStore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the updater keeps about this store between runs, in `downloads/updater.json` (docs/formats.md, "Store
/// layout"): the random install id behind cohorts and tokens (never sent), and why versions failed here when the store's
/// state cannot say. (The channel is the store's own.) The same file holds the catalog serial floors (`serials`,
/// `serialTrust`), which are ``KeptTrust``'s: this record keeps them as they are on disk when it saves.
public struct UpdaterRecord: Hashable, Sendable, Codable {
    public static let fileName = "updater.json"

    /// 32 random bytes, hex.
    public var installID: String
    /// "<id> <version>" -> why (`revoked`, `verification`, `install-store`).
    public var failures: [String: Failure]

    /// Why a version failed on this device, as `downloads/updater.json` and the device report spell it.
    ///
    /// A word this runtime does not know stays as it was read (``other(_:)``) and is written back unchanged: another
    /// runtime (older, or newer with a kind added) may share the store, and an unknown word must neither make the
    /// record unreadable (that would cost the install id, so the cohorts, and the serial floors) nor be lost.
    public enum Failure: Sendable, Codable, Hashable, CustomStringConvertible {
        /// The catalog revoked the version and the device went back to its fallback.
        case revoked
        /// The download, its manifest or its signatures did not check out (``Updater/failureKind(_:)``).
        case verification
        /// The store refused the install for a reason of its own (the disk, the lock, the layout).
        case installStore
        /// A word written by another runtime; never one of the cases above (``init(rawValue:)`` maps those).
        case other(String)

        public init(rawValue: String) {
            switch rawValue {
            case "revoked": self = .revoked
            case "verification": self = .verification
            case "install-store": self = .installStore
            default: self = .other(rawValue)
            }
        }

        public var rawValue: String {
            switch self {
            case .revoked: "revoked"
            case .verification: "verification"
            case .installStore: "install-store"
            case .other(let word): word
            }
        }

        public var description: String { rawValue }

        // By the word, so that `.other("revoked")`, made by hand, is `.revoked`, as it would be once read back.
        public static func == (lhs: Failure, rhs: Failure) -> Bool { lhs.rawValue == rhs.rawValue }
        public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }

        public init(from decoder: any Decoder) throws {
            self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }
    }

    public init(installID: String, failures: [String: Failure]) {
        self.installID = installID
        self.failures = failures
    }

    /// The record in `folder`, or a new one with a fresh install id, saved at once so that no token made from it is
    /// ever sent under an id the store then forgets (when there is none, or it does not parse: the worst that costs
    /// is new cohorts and a serial floor of zero).
    public static func load(from folder: String) throws(UpdateError) -> UpdaterRecord {
        if let data = FileManager.default.contents(atPath: folder + "/" + fileName),
            let record = try? JSONDecoder().decode(UpdaterRecord.self, from: data), record.installIDBytes != nil
        {
            return record
        }
        var random = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }
        let record = UpdaterRecord(installID: bytes.map { String(format: "%02x", $0) }.joined(), failures: [:])
        try record.save(to: folder)
        return record
    }

    var installIDBytes: [UInt8]? {
        let digits = Array(installID.utf8)
        guard digits.count == 64 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: 64, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }

    public var cohorts: ReleaseCohort { ReleaseCohort(installID: installIDBytes ?? []) }

    /// Written atomically: a crash leaves the old record or the new one. The keys this record does not own (the
    /// serial floors, and any a newer runtime wrote) are kept as the file holds them now.
    public func save(to folder: String) throws(UpdateError) {
        try ResumableDownload.makeFolder(folder)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let own = try? encoder.encode(self), var merged = (try? JSONSerialization.jsonObject(with: own)) as? [String: Any] else { return }
        let path = folder + "/" + Self.fileName
        if let data = FileManager.default.contents(atPath: path), let onDisk = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] {
            for (key, value) in onDisk where merged[key] == nil { merged[key] = value }
        }
        guard let data = try? JSONSerialization.data(withJSONObject: merged, options: [.sortedKeys]) else { return }
        let temporary = path + ".\(getpid()).tmp"
        do { try data.write(to: URL(fileURLWithPath: temporary)) } catch { throw .system("write", temporary) }
        guard rename(temporary, path) == 0 else { throw .system("rename", temporary) }
    }

    static func key(_ id: PackageID, _ version: SemanticVersion) -> String { "\(id) \(version)" }
}

/// Builds what this device reports (``DeviceReport``) from the store, the updater's record and a catalog.
struct DeviceReporter {
    let store: PackageStore
    let record: UpdaterRecord
    let channel: ReleaseChannel
    let runtime: SemanticVersion?
    /// Failed versions reported per package, newest first.
    static let failedPerPackage = 4

    func report(offering catalog: Catalog?) -> DeviceReport {
        let cohorts = record.cohorts
        var items: [DeviceReport.Item] = []
        for id in (try? store.packageIDs()) ?? [] {
            if let catalog, let offered = UpdatePlan.offered(id, in: catalog, runtime: runtime) {
                items.append(.init(id: id, role: .offered, version: offered, token: cohorts.token(id, offered), cohort: cohorts.cohort(id, offered)))
            }
            guard let state = try? store.state(of: id) else { continue }
            let stored = (try? store.storedState(of: id)) ?? nil
            items.append(.init(
                id: id, role: .active, version: state.active, token: cohorts.token(id, state.active),
                state: (stored == nil ? ServingState.builtIn : state.trial != nil ? .trial : .confirmed).rawValue))
            var failed = Set(state.failed)
            for (key, _) in record.failures {
                let parts = key.split(separator: " ")
                if parts.count == 2, parts[0] == id.value, let version = try? SemanticVersion(String(parts[1])) { failed.insert(version) }
            }
            for version in failed.sorted(by: >).prefix(Self.failedPerPackage) {
                items.append(.init(
                    id: id, role: .failed, version: version, token: cohorts.token(id, version),
                    why: Self.why(version, state: state, recorded: record.failures[UpdaterRecord.key(id, version)])))
            }
        }
        return DeviceReport(channel: channel, items: items)
    }

    /// A failed version's reason for the report: the store's (a judged trial: `crashed`, `script-error`, …) when it
    /// holds one, else the updater's (`revoked`, `verification`, `install-store`, or a word another runtime wrote),
    /// else `trial`. Never the detail: reports carry no page text.
    static func why(_ version: SemanticVersion, state: PackageState, recorded: UpdaterRecord.Failure?) -> String {
        if let reason = state.failureReason(of: version), reason != .trial { return reason.why }
        return recorded?.rawValue ?? TrialFailure.trial.why
    }
}
