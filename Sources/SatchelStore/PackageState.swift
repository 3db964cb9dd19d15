import Foundation
import SatchelCore

/// `packages/<id>/state.json` (DESIGN.md, Formats: Store layout): which version is active, which was last
/// confirmed, whether the active one is on trial and for how many launches, and the confirmed history that
/// rollback walks back through.
///
/// Written canonically (``CanonicalJSON``), replaced atomically: write temporary, fsync, rename, fsync folder.
public struct PackageState: Equatable, Sendable {
    /// The version served.
    public var active: SemanticVersion
    /// The last version confirmed; nil until a first version is confirmed.
    public var confirmed: SemanticVersion?
    /// The active version while it is on trial (then equal to ``active``).
    public var trial: SemanticVersion?
    /// Launches counted since the trial began.
    public var launches: Int
    /// Confirmed versions, oldest first, each once (confirming again moves a version to the end).
    public var history: [SemanticVersion]

    public init(active: SemanticVersion, confirmed: SemanticVersion?, trial: SemanticVersion?, launches: Int, history: [SemanticVersion]) {
        self.active = active
        self.confirmed = confirmed
        self.trial = trial
        self.launches = launches
        self.history = history
    }

    public var isTrial: Bool { trial != nil }

    /// Every version the state still refers to; the store keeps these and may drop the rest.
    public var referencedVersions: Set<SemanticVersion> {
        var versions = Set(history)
        versions.insert(active)
        if let confirmed { versions.insert(confirmed) }
        if let trial { versions.insert(trial) }
        return versions
    }

    /// The newest confirmed version other than the active one: where a rollback goes.
    public var rollbackTarget: SemanticVersion? { history.last { $0 != active } }

    var canonicalBytes: [UInt8] {
        var object: [String: CanonicalJSON] = [
            "active": .string(active.description),
            "launches": .integer(Int64(launches)),
            "history": .array(history.map { .string($0.description) }),
        ]
        if let confirmed { object["confirmed"] = .string(confirmed.description) }
        if let trial { object["trial"] = .string(trial.description) }
        return CanonicalJSON.object(object).bytes
    }

    static func decode(_ bytes: [UInt8], path: String) throws(StoreError) -> PackageState {
        struct Wire: Decodable {
            let active: SemanticVersion
            let confirmed: SemanticVersion?
            let trial: SemanticVersion?
            let launches: Int
            let history: [SemanticVersion]
        }
        do {
            let wire = try JSONDecoder().decode(Wire.self, from: Data(bytes))
            guard wire.launches >= 0 else { throw StoreError.corruptState(path: path, reason: "negative launch count") }
            if let trial = wire.trial, trial != wire.active {
                throw StoreError.corruptState(path: path, reason: "trial \(trial) is not the active version \(wire.active)")
            }
            return PackageState(active: wire.active, confirmed: wire.confirmed, trial: wire.trial, launches: wire.launches, history: wire.history)
        } catch let error as StoreError {
            throw error
        } catch {
            throw .corruptState(path: path, reason: "\(error)")
        }
    }
}

/// Where everything lives inside a store folder.
public struct StoreLayout: Sendable {
    /// The layout version written to `store.json`.
    public static let version = 1
    public let root: String

    public init(root: String) {
        self.root = root.count > 1 && root.hasSuffix("/") ? String(root.dropLast()) : root
    }

    var storeFile: String { root + "/store.json" }
    var lockFile: String { root + "/lock" }
    var staging: String { root + "/staging" }
    var packages: String { root + "/packages" }
    var pins: String { root + "/pins" }
    func package(_ id: PackageID) -> String { packages + "/" + id.value }
    func versions(_ id: PackageID) -> String { package(id) + "/versions" }
    /// The folder of one installed version: its files plus `satchel.json` and `satchel.sig`.
    public func version(_ id: PackageID, _ version: SemanticVersion) -> String { versions(id) + "/" + version.description }
    func state(_ id: PackageID) -> String { package(id) + "/state.json" }
}
