import Foundation
import SatchelCore

/// `packages/<id>/state.json` (docs/formats.md, "Store layout"): which version is served, whether it is on
/// trial and for how many launches, and the versions a fallback may return to.
///
/// The rules that change it (install, activate, confirm, rollback, a launch, remove, gc, and which versions stay
/// on disk) are pure functions of this value, in `PackageState+Rules.swift`; ``PackageStore`` only reads, writes
/// and deletes. Written canonically (``CanonicalJSON``), replaced atomically.
///
/// The file is `{"active","confirmed"?,"failed"?,"failureReasons"?,"history","launches","trial"?,"unconfirmed"?}`:
/// - `history` lists the versions that served and did not fail, oldest first: confirmed versions, and versions
///   that were superseded while on trial without running out of launches. (Stores written before `unconfirmed`
///   existed only ever put confirmed versions there, which reads the same.) A confirmed active version is in it;
///   a trial is not, until it is confirmed or superseded.
/// - `unconfirmed` names the history entries that served only on trial (omitted when empty).
/// - `failed` names versions whose trial ran out of launches or that a rollback left (omitted when empty); no rule
///   chooses them again by itself.
/// - `failureReasons` says why some of them failed: `[{"version","why","detail"?}]`, sorted by version (omitted when
///   empty). A failed version without one failed before reasons were kept, or ran out of launches under a runtime
///   that did not record them; it reads as `trial`.
/// - `confirmed` is the newest confirmed entry of `history`; it is written for readers and derived when read.
public struct PackageState: Equatable, Sendable {
    /// The version served.
    public var active: SemanticVersion
    /// The active version while it is on trial (then equal to ``active``).
    public var trial: SemanticVersion?
    /// Launches counted since the trial began.
    public var launches: Int
    /// Versions that served and did not fail, oldest first, each once.
    public var history: [SemanticVersion]
    /// The ``history`` entries that served only on trial.
    public var unconfirmed: Set<SemanticVersion>
    /// Versions never chosen again automatically.
    public var failed: Set<SemanticVersion> {
        didSet { failureReasons = failureReasons.filter { failed.contains($0.key) } }
    }
    /// Why versions of ``failed`` failed, where it is known (never a version outside it).
    public private(set) var failureReasons: [SemanticVersion: TrialFailure]

    public init(
        active: SemanticVersion, trial: SemanticVersion?, launches: Int, history: [SemanticVersion],
        unconfirmed: Set<SemanticVersion> = [], failed: Set<SemanticVersion> = [], failureReasons: [SemanticVersion: TrialFailure] = [:]
    ) {
        self.active = active
        self.trial = trial
        self.launches = launches
        self.history = history
        self.unconfirmed = unconfirmed
        self.failed = failed
        self.failureReasons = failureReasons.filter { failed.contains($0.key) }
    }

    /// Marks `version` failed for `reason`.
    mutating func markFailed(_ version: SemanticVersion, because reason: TrialFailure) {
        failed.insert(version)
        failureReasons[version] = reason
    }

    /// Why `version` failed here: its recorded reason, else `trial` (it failed before reasons were kept); nil when it
    /// has not failed.
    public func failureReason(of version: SemanticVersion) -> TrialFailure? {
        guard failed.contains(version) else { return nil }
        return failureReasons[version] ?? .trial
    }

    public var isTrial: Bool { trial != nil }

    /// The newest confirmed version (the active one when it is confirmed).
    public var confirmed: SemanticVersion? { history.last { !unconfirmed.contains($0) } }

    var canonicalBytes: [UInt8] {
        var object: [String: CanonicalJSON] = [
            "active": .string(active.description),
            "launches": .integer(Int64(launches)),
            "history": .array(history.map { .string($0.description) }),
        ]
        if let confirmed { object["confirmed"] = .string(confirmed.description) }
        if let trial { object["trial"] = .string(trial.description) }
        if !unconfirmed.isEmpty { object["unconfirmed"] = .array(unconfirmed.sorted().map { .string($0.description) }) }
        if !failed.isEmpty { object["failed"] = .array(failed.sorted().map { .string($0.description) }) }
        if !failureReasons.isEmpty {
            object["failureReasons"] = .array(failureReasons.sorted { $0.key < $1.key }.map { version, reason in
                var fields: [String: CanonicalJSON] = ["version": .string(version.description), "why": .string(reason.why)]
                if let detail = reason.detail { fields["detail"] = .string(detail) }
                return .object(fields)
            })
        }
        return CanonicalJSON.object(object).bytes
    }

    static func decode(_ bytes: [UInt8], path: String) throws(StoreError) -> PackageState {
        struct Wire: Decodable {
            let active: SemanticVersion
            let trial: SemanticVersion?
            let launches: Int
            let history: [SemanticVersion]
            let unconfirmed: [SemanticVersion]?
            let failed: [SemanticVersion]?
            let failureReasons: [Reason]?
        }
        struct Reason: Decodable {
            let version: SemanticVersion
            let why: String
            let detail: String?
        }
        do {
            let wire = try JSONDecoder().decode(Wire.self, from: Data(bytes))
            guard wire.launches >= 0 else { throw StoreError.corruptState(path: path, reason: "negative launch count") }
            if let trial = wire.trial, trial != wire.active {
                throw StoreError.corruptState(path: path, reason: "trial \(trial) is not the active version \(wire.active)")
            }
            guard Set(wire.history).count == wire.history.count else {
                throw StoreError.corruptState(path: path, reason: "history lists a version twice")
            }
            let failed = Set(wire.failed ?? [])
            if let both = wire.history.first(where: failed.contains) {
                throw StoreError.corruptState(path: path, reason: "\(both) is both in history and failed")
            }
            let unconfirmed = Set(wire.unconfirmed ?? [])
            if let stray = unconfirmed.first(where: { !wire.history.contains($0) }) {
                throw StoreError.corruptState(path: path, reason: "unconfirmed \(stray) is not in history")
            }
            // Reasons only explain: one that names a version that has not failed, or is not a report word, is dropped
            // (the version then reads as `trial`) rather than making the whole state unreadable.
            var reasons: [SemanticVersion: TrialFailure] = [:]
            for reason in wire.failureReasons ?? [] where failed.contains(reason.version) {
                reasons[reason.version] = try? TrialFailure(why: reason.why, detail: reason.detail)
            }
            return PackageState(
                active: wire.active, trial: wire.trial, launches: wire.launches, history: wire.history, unconfirmed: unconfirmed, failed: failed,
                failureReasons: reasons)
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
    /// The change counter (``StoreGeneration``).
    var generation: String { root + "/generation" }
    /// The active scopes as last read (``ScopeCache``).
    var scopeCache: String { root + "/scopes.cache" }
    /// The marker saying that a package may hold leftovers for the next open to recover.
    func recoveryMarker(_ id: PackageID) -> String { staging + "/" + Self.recoveryPrefix + id.value }
    static let recoveryPrefix = "recover-"
    var lockFile: String { root + "/lock" }
    var staging: String { root + "/staging" }
    var packages: String { root + "/packages" }
    var pins: String { root + "/pins" }
    /// Serialises taking a pin against deleting versions (see ``PackageStore/pin(_:)``).
    var pinLock: String { pins + "/lock" }
    /// One record per built-in package: the identity of the bundle last verified in full.
    var builtIns: String { root + "/builtins" }
    func builtInRecord(_ id: PackageID) -> String { builtIns + "/" + id.value + ".json" }
    func package(_ id: PackageID) -> String { packages + "/" + id.value }
    func versions(_ id: PackageID) -> String { package(id) + "/versions" }
    /// The folder of one installed version: its files plus `satchel.json` and `satchel.sig`.
    public func version(_ id: PackageID, _ version: SemanticVersion) -> String { versions(id) + "/" + version.description }
    func state(_ id: PackageID) -> String { package(id) + "/state.json" }
    /// The keyed signatures that counted when a version was installed with trust (a ``SignatureFile``), beside its folder,
    /// never in it: a package may hold a file named like anything.
    func signatures(_ id: PackageID) -> String { package(id) + "/signatures" }
    func signatures(_ id: PackageID, _ version: SemanticVersion) -> String { signatures(id) + "/" + version.description + SignatureFile.suffix }
    /// The updater's folder (``SatchelUpdate``'s downloads, catalogs and record).
    public var downloads: String { root + "/downloads" }
    /// The trust documents the device accepted, `<n>.json` each, byte for byte as published.
    public var trust: String { downloads + "/trust" }
}
