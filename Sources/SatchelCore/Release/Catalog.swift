import Foundation

/// A release catalog, `catalog.json` (docs/formats.md, "Catalog"): what an updater may install, hosted as a
/// static file beside the bundles. Like the manifest, it has one canonical serialisation, so
/// `catalog.json.sig` signs exactly ``canonicalBytes`` and two runs of `satchel catalog` agree byte for byte.
///
/// The initialiser and ``decode(_:)`` check every rule, so code holding a `Catalog` never re-checks it.
public struct Catalog: Hashable, Sendable {
    public static let schemaVersion = 1
    public static let fileName = "catalog.json"
    public static let signatureFileName = "catalog.json.sig"
    /// Catalogs are small; a larger answer is not a catalog.
    public static let maxBytes = DocumentLimits.catalog

    public let schema: Int
    /// After this instant an updater refuses the catalog, so an old one cannot be replayed.
    public let expires: Timestamp
    /// Sorted by id, then version (newest last). Every updater, this one and older ones, reads these.
    public let packages: [CatalogEntry]
    /// Grows with each publication; an updater refuses a catalog whose serial is below the last one it accepted
    /// (0 for a catalog written before serials).
    public let serial: Int64
    /// Where devices POST their reports (docs/formats.md, "Device reports"), when set.
    public let reportURL: String?
    /// Versions that are not (or no longer) for every device: staged, halted or revoked. A field older updaters
    /// ignore, which is the point: they never see these versions (docs/formats.md, "Rollouts").
    public let rollouts: [Rollout]
    /// Versions in `packages` that `satchel rollout advance` still judges from device reports, and may halt (moving
    /// them to `rollouts`). For the release side only: updaters never act on it (docs/formats.md, "Rollouts").
    public let watches: [ReleaseWatch]
    /// The trust version the catalog was signed under (docs/formats.md, "Trust"): a device with root keys walks its
    /// trust documents to it, one version at a time, before checking the catalog's signatures against that version's
    /// catalog role. Nil in catalogs published without trust documents; updaters from before trust ignore it.
    public let trust: Int64?

    public init(
        expires: Timestamp, packages: [CatalogEntry], serial: Int64 = 0, reportURL: String? = nil, rollouts: [Rollout] = [],
        watches: [ReleaseWatch] = [], trust: Int64? = nil
    ) throws(CatalogError) {
        schema = Self.schemaVersion
        self.trust = trust
        if let trust, trust < 1 { throw .invalidEntry("trust", reason: "\(trust) must be 1 or more") }
        self.expires = expires
        self.serial = serial
        self.reportURL = reportURL
        self.rollouts = rollouts.sorted { ($0.entry.id.value, $0.entry.version) < ($1.entry.id.value, $1.entry.version) }
        self.watches = watches.sorted { ($0.id.value, $0.version) < ($1.id.value, $1.version) }
        guard serial >= 0 else { throw .invalidEntry("serial", reason: "\(serial) must not be negative") }
        if let reportURL, reportURL.isEmpty || reportURL.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) {
            throw .invalidEntry("reports", reason: "\(reportURL.debugDescription) is not a URL")
        }
        // The canonical order is the catalog's to keep, whatever order entries and deltas were built in.
        self.packages = packages.map { entry in
            var entry = entry
            entry.deltas.sort { $0.from < $1.from }
            return entry
        }.sorted { ($0.id.value, $0.version) < ($1.id.value, $1.version) }
        var seen = Set<String>()
        for entry in self.packages {
            guard seen.insert("\(entry.id) \(entry.version)").inserted else {
                throw .duplicateEntry(id: entry.id.value, version: entry.version.description)
            }
            try entry.check()
        }
        for rollout in self.rollouts {
            let entry = rollout.entry
            guard seen.insert("\(entry.id) \(entry.version)").inserted else {
                throw .duplicateEntry(id: entry.id.value, version: entry.version.description)
            }
            try entry.check()
            guard (0...1000).contains(rollout.permille), rollout.state != .staged || rollout.permille < 1000 else {
                throw .invalidEntry("\(entry.id) \(entry.version)", reason: "rollout permille \(rollout.permille) must be 0-999 while staged, 0-1000 otherwise")
            }
        }
        // A watch only means something for a version every device may install: a staged one has its rollout's step.
        var watched = Set<String>()
        for watch in self.watches {
            guard self.packages.contains(where: watch.watches) else {
                throw .invalidEntry("\(watch.id) \(watch.version)", reason: "is watched but not in packages")
            }
            guard watched.insert("\(watch.id) \(watch.version)").inserted else {
                throw .invalidEntry("\(watch.id) \(watch.version)", reason: "is watched twice")
            }
        }
    }

    /// The rollouts of `id`, oldest version first.
    public func rollouts(for id: PackageID) -> [Rollout] { rollouts.filter { $0.entry.id == id } }

    /// The same catalog with other packages, rollouts, watches, serial, expiry or trust version (every rule checked
    /// again); what is not given is kept, the trust version the catalog names included.
    public func with(
        packages: [CatalogEntry]? = nil, rollouts: [Rollout]? = nil, watches: [ReleaseWatch]? = nil, serial: Int64? = nil,
        expires: Timestamp? = nil, trust: Int64? = nil
    ) throws(CatalogError) -> Catalog {
        try Catalog(
            expires: expires ?? self.expires, packages: packages ?? self.packages, serial: serial ?? self.serial, reportURL: reportURL,
            rollouts: rollouts ?? self.rollouts, watches: watches ?? self.watches, trust: trust ?? self.trust)
    }

    /// The watch on `entry`'s version, when it has one.
    public func watch(of entry: CatalogEntry) -> ReleaseWatch? { watches.first { $0.watches(entry) } }

    /// Whether the catalog may no longer be trusted at `now`.
    public func isExpired(at now: Timestamp) -> Bool { now >= expires }

    /// Every version of `id` the catalog offers, oldest first.
    public func entries(for id: PackageID) -> [CatalogEntry] { packages.filter { $0.id == id } }

    /// The ids the catalog offers, in order.
    public var packageIDs: [PackageID] {
        var ids: [PackageID] = []
        for entry in packages + rollouts.map(\.entry) where !ids.contains(entry.id) { ids.append(entry.id) }
        return ids.sorted { $0.value < $1.value }
    }

    // MARK: Serialisation

    public var canonicalBytes: [UInt8] {
        var object: [String: CanonicalJSON] = [
            "schema": .integer(Int64(schema)),
            "expires": .string(expires.description),
            "packages": .array(packages.map(\.canonicalJSON)),
        ]
        if serial > 0 { object["serial"] = .integer(serial) }
        if let reportURL { object["reports"] = .string(reportURL) }
        if !rollouts.isEmpty { object["rollouts"] = .array(rollouts.map(\.canonicalJSON)) }
        if !watches.isEmpty { object["watches"] = .array(watches.map(\.canonicalJSON)) }
        if let trust { object["trust"] = .integer(trust) }
        return CanonicalJSON.object(object).bytes
    }

    /// Parses and checks catalog bytes. Unlike manifests, non-canonical catalogs are accepted: a release team
    /// may write or edit one by hand; the signature covers whatever bytes were published.
    public static func decode(_ bytes: [UInt8]) throws(CatalogError) -> Catalog {
        let wire = try VersionedDocument.decode(Wire.self, from: bytes, maxBytes: maxBytes, schema: schemaVersion, as: CatalogError.self)
        func entry(_ entry: Wire.Entry) -> CatalogEntry {
            CatalogEntry(
                id: entry.id, version: entry.version, url: entry.url, size: entry.size, sha256: entry.sha256,
                minRuntime: entry.minRuntime,
                deltas: entry.deltas.map { CatalogDelta(from: $0.from, url: $0.url, size: $0.size, sha256: $0.sha256) },
                content: entry.content, signatures: entry.signatures ?? [])
        }
        return try Catalog(
            expires: wire.expires, packages: wire.packages.map(entry), serial: wire.serial ?? 0, reportURL: wire.reports,
            rollouts: (wire.rollouts ?? []).map { Rollout(entry: entry($0.entry), permille: $0.permille, state: $0.state, since: $0.since) },
            watches: (wire.watches ?? []).map { ReleaseWatch(id: $0.id, version: $0.version, since: $0.since) }, trust: wire.trust)
    }

    private struct Wire: VersionedWire {
        struct Entry: Decodable {
            let id: PackageID
            let version: SemanticVersion
            let url: String
            let size: Int64
            let sha256: String
            let minRuntime: SemanticVersion?
            let deltas: [Delta]
            let content: CatalogContent?
            let signatures: [KeyedSignature]?
        }
        struct Delta: Decodable {
            let from: SemanticVersion
            let url: String
            let size: Int64
            let sha256: String
        }
        struct RolloutWire: Decodable {
            let entry: Entry
            let permille: Int
            let state: RolloutState
            let since: Timestamp
        }
        struct WatchWire: Decodable {
            let id: PackageID
            let version: SemanticVersion
            let since: Timestamp
        }
        let schema: Int
        let expires: Timestamp
        let packages: [Entry]
        let serial: Int64?
        let reports: String?
        let rollouts: [RolloutWire]?
        let watches: [WatchWire]?
        let trust: Int64?
    }
}

/// One installable version in a catalog: the full bundle, and the deltas that lead to it.
public struct CatalogEntry: Hashable, Sendable {
    public var id: PackageID
    public var version: SemanticVersion
    /// Absolute, or relative to the catalog's own URL.
    public var url: String
    public var size: Int64
    public var sha256: String
    public var minRuntime: SemanticVersion?
    /// Sorted by base version in a ``Catalog``.
    public var deltas: [CatalogDelta]
    /// The version as content-addressed objects and manifest patches (docs/formats.md, "Objects and patches"); nil in
    /// catalogs written before them, and ignored by updaters written before them.
    public var content: CatalogContent?
    /// Keyed signatures of the bundle's `satchel.json` bytes, copied by `satchel catalog` from `<bundle>.sigs`
    /// (docs/formats.md, "Threshold signatures"): counted with the bundle's own `satchel.sig` against the trust
    /// version's `bundles` role, whichever way the version arrives (bundle, delta or objects). One per key, sorted by
    /// key id; empty (and not written) when the bundle has none. Updaters from before trust ignore it.
    public var signatures: [KeyedSignature] {
        didSet { signatures = KeyedSignature.normalised(signatures) }
    }

    public init(
        id: PackageID, version: SemanticVersion, url: String, size: Int64, sha256: String, minRuntime: SemanticVersion? = nil,
        deltas: [CatalogDelta] = [], content: CatalogContent? = nil, signatures: [KeyedSignature] = []
    ) {
        self.signatures = KeyedSignature.normalised(signatures)
        self.content = content
        self.id = id
        self.version = version
        self.url = url
        self.size = size
        self.sha256 = sha256
        self.minRuntime = minRuntime
        self.deltas = deltas
    }

    /// Whether a runtime (the app's Satchel runtime version) may install this version.
    public func isCompatible(withRuntime runtime: SemanticVersion?) -> Bool {
        guard let minRuntime, let runtime else { return true }
        return !(runtime < minRuntime)
    }

    /// The delta from `base`, if the catalog has one.
    public func delta(from base: SemanticVersion) -> CatalogDelta? { deltas.first { $0.from == base } }

    func check() throws(CatalogError) {
        let name = "\(id) \(version)"
        try Self.checkDownload(url: url, size: size, sha256: sha256, in: name)
        var bases = Set<SemanticVersion>()
        for delta in deltas {
            guard delta.from != version else { throw .invalidEntry(name, reason: "has a delta from itself") }
            guard bases.insert(delta.from).inserted else { throw .invalidEntry(name, reason: "lists the delta from \(delta.from) twice") }
            try Self.checkDownload(url: delta.url, size: delta.size, sha256: delta.sha256, in: "\(name) (delta from \(delta.from))")
        }
        if let content {
            guard Digests.isSHA256Hex(content.manifest) else { throw .invalidEntry(name, reason: "content.manifest must be 64 lower-case hex digits") }
            guard !content.objects.isEmpty, !content.objects.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else {
                throw .invalidEntry(name, reason: "content.objects must be a URL")
            }
            var froms = Set<SemanticVersion?>()
            for patch in content.patches {
                guard froms.insert(patch.from).inserted else { throw .invalidEntry(name, reason: "lists the patch from \(patch.from?.description ?? "nothing") twice") }
                try Self.checkDownload(url: patch.url, size: patch.size, sha256: patch.sha256, in: "\(name) (patch from \(patch.from?.description ?? "nothing"))")
            }
            var stepBases = Set<SemanticVersion>()
            for step in content.steps ?? [] {
                guard step.from != version else { throw .invalidEntry(name, reason: "has a step from itself") }
                guard stepBases.insert(step.from).inserted else { throw .invalidEntry(name, reason: "lists the step from \(step.from) twice") }
                try Self.checkDownload(url: step.url, size: step.size, sha256: step.sha256, in: "\(name) (step from \(step.from))")
            }
            if let diffs = content.diffs {
                try Self.checkDownload(url: diffs.url, size: diffs.size, sha256: diffs.sha256, in: "\(name) (diff index)")
                guard diffs.base.hasSuffix("/"), !diffs.base.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else {
                    throw .invalidEntry(name, reason: "content.diffs.base must be a URL ending in /")
                }
            }
        }
    }

    /// The largest size a catalog may list for a download (1 PiB): far above any bundle, far below overflow.
    static let maxDownloadSize: Int64 = 1 << 50

    private static func checkDownload(url: String, size: Int64, sha256: String, in name: String) throws(CatalogError) {
        guard !url.isEmpty, !url.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else {
            throw .invalidEntry(name, reason: "url \(url.debugDescription) is empty or has spaces or control characters")
        }
        // Bounded so that sums of sizes and request weights (bytes + requests × 25,000) never overflow.
        guard size > 0, size <= maxDownloadSize else { throw .invalidEntry(name, reason: "size \(size) must be positive and at most 2^50") }
        guard Digests.isSHA256Hex(sha256) else { throw .invalidEntry(name, reason: "sha256 must be 64 lower-case hex digits") }
    }

    public var canonicalJSON: CanonicalJSON {
        var object: [String: CanonicalJSON] = [
            "id": .string(id.value), "version": .string(version.description), "url": .string(url),
            "size": .integer(size), "sha256": .string(sha256),
            "deltas": .array(deltas.map { delta in
                .object([
                    "from": .string(delta.from.description), "url": .string(delta.url), "size": .integer(delta.size),
                    "sha256": .string(delta.sha256),
                ])
            }),
        ]
        if let minRuntime { object["minRuntime"] = .string(minRuntime.description) }
        if !signatures.isEmpty { object["signatures"] = .array(signatures.map(\.canonicalJSON)) }
        if let content {
            object["content"] = .object([
                "manifest": .string(content.manifest), "objects": .string(content.objects),
                "patches": .array(content.patches.map { patch in
                    var fields: [String: CanonicalJSON] = ["url": .string(patch.url), "size": .integer(patch.size), "sha256": .string(patch.sha256)]
                    if let from = patch.from { fields["from"] = .string(from.description) }
                    return .object(fields)
                }),
            ])
            if let diffs = content.diffs, case .object(var fields) = object["content"] {
                fields["diffs"] = .object([
                    "base": .string(diffs.base), "url": .string(diffs.url), "size": .integer(diffs.size), "sha256": .string(diffs.sha256),
                ])
                object["content"] = .object(fields)
            }
            if let steps = content.steps, !steps.isEmpty, case .object(var fields) = object["content"] {
                fields["steps"] = .array(steps.map { step in
                    .object(["from": .string(step.from.description), "url": .string(step.url), "size": .integer(step.size), "sha256": .string(step.sha256)])
                })
                object["content"] = .object(fields)
            }
        }
        return .object(object)
    }
}

/// Where a version's content-addressed objects and manifest patches are (docs/formats.md, "Objects and patches").
public struct CatalogContent: Hashable, Sendable, Decodable {
    /// SHA-256 of the version's `satchel.json` bytes: what a manifest rebuilt from a patch must hash to.
    public var manifest: String
    /// The objects' base URL (absolute, or relative to the catalog), ending in `/`.
    public var objects: String
    /// Patches to this version's manifest: from each other published version, and one from nothing (no `from`).
    public var patches: [CatalogPatch]
    /// This version's per-file diffs (docs/formats.md, "Diffs"); nil when none were published. Updaters from before
    /// diffs ignore it.
    public var diffs: CatalogDiffs?
    /// Ready-made steps to this version (docs/formats.md, "Steps"), sorted by `from`: from its predecessor and from
    /// built-ins, named on a package's newest entries only; nil when none. Updaters from before steps ignore it.
    public var steps: [CatalogStep]? {
        didSet { steps = steps.map { $0.sorted { $0.from < $1.from } } }
    }

    public init(manifest: String, objects: String, patches: [CatalogPatch], diffs: CatalogDiffs? = nil, steps: [CatalogStep]? = nil) {
        self.manifest = manifest
        self.objects = objects
        self.diffs = diffs
        self.steps = steps.map { $0.sorted { $0.from < $1.from } }
        self.patches = patches.sorted { ($0.from.map { [$0] } ?? []).lexicographicallyPrecedes($1.from.map { [$0] } ?? []) }
    }

    /// The patch from `base` (nil: the one from nothing).
    public func patch(from base: SemanticVersion?) -> CatalogPatch? { patches.first { $0.from == base } }
}

/// Where a version's per-file diffs are: the index (gzip-compressed ``FileDiffIndex``) and the diffs' base URL.
public struct CatalogDiffs: Hashable, Sendable, Decodable {
    /// The diffs' base URL (absolute, or relative to the catalog), ending in `/`.
    public var base: String
    /// The index file.
    public var url: String
    public var size: Int64
    public var sha256: String

    public init(base: String, url: String, size: Int64, sha256: String) {
        self.base = base
        self.url = url
        self.size = size
        self.sha256 = sha256
    }
}

/// One step file (``UpdateStep``): everything a device holding `from` needs for the entry's version, in one download.
public struct CatalogStep: Hashable, Sendable, Decodable {
    public var from: SemanticVersion
    public var url: String
    public var size: Int64
    public var sha256: String

    public init(from: SemanticVersion, url: String, size: Int64, sha256: String) {
        self.from = from
        self.url = url
        self.size = size
        self.sha256 = sha256
    }
}

/// One manifest patch file (gzip-compressed `ManifestPatch`).
public struct CatalogPatch: Hashable, Sendable, Decodable {
    public var from: SemanticVersion?
    public var url: String
    public var size: Int64
    public var sha256: String

    public init(from: SemanticVersion?, url: String, size: Int64, sha256: String) {
        self.from = from
        self.url = url
        self.size = size
        self.sha256 = sha256
    }
}

/// A delta bundle in a catalog, leading from `from` to the entry's version.
public struct CatalogDelta: Hashable, Sendable {
    public var from: SemanticVersion
    public var url: String
    public var size: Int64
    public var sha256: String

    public init(from: SemanticVersion, url: String, size: Int64, sha256: String) {
        self.from = from
        self.url = url
        self.size = size
        self.sha256 = sha256
    }
}

/// Why a catalog was refused; each case names the field or entry at fault.
public enum CatalogError: Error, Equatable, Sendable, CustomStringConvertible, VersionedDocumentError {
    case malformed(String)
    case tooLarge(Int)
    case missingField(String)
    case invalidField(FieldError)
    case unsupportedSchema(Int)
    case duplicateEntry(id: String, version: String)
    case invalidEntry(String, reason: String)

    public var description: String {
        switch self {
        case .malformed(let why): "catalog is malformed: \(why)"
        case .tooLarge(let size): "catalog is \(size) bytes, more than the \(Catalog.maxBytes) allowed"
        case .missingField(let field): "catalog lacks the field \(field)"
        case .invalidField(let error): "catalog has an \(error)"
        case .unsupportedSchema(let schema): "catalog schema \(schema) is not supported (this Satchel reads schema \(Catalog.schemaVersion))"
        case .duplicateEntry(let id, let version): "catalog lists \(id) \(version) twice"
        case .invalidEntry(let name, let reason): "catalog entry \(name): \(reason)"
        }
    }
}
