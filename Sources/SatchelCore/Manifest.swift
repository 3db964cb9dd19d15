import Foundation

/// One file of a package as the manifest lists it.
public struct FileRecord: Hashable, Sendable {
    public var path: SafePath
    public var size: Int64
    /// Lower-case hex SHA-256 of the file's bytes; also its strong ETag.
    public var sha256: String
    /// From ``MIMETable`` at pack time; the engine serves it as the Content-Type.
    public var mime: String

    public init(path: SafePath, size: Int64, sha256: String, mime: String) {
        self.path = path
        self.size = size
        self.sha256 = sha256
        self.mime = mime
    }
}

/// `satchel.json`, the manifest of a package (docs/formats.md, "Manifest", schema 1).
///
/// A value of this type is always valid: ``init(id:version:createdAt:scope:entry:spaFallback:offlinePage:routes:cachePolicies:minRuntime:files:)``
/// and ``decode(_:)`` check every rule, so a store or engine holding a `Manifest` never re-checks it.
/// ``canonicalBytes`` is the one serialisation; the signature covers exactly those bytes.
public struct Manifest: Hashable, Sendable {
    public static let schemaVersion = 1
    public static let fileName = "satchel.json"
    public static let signatureFileName = "satchel.sig"
    public static let deltaFileName = "satchel-delta.json"
    /// Names a package may not use at its root: the bundle and the store keep their own files there.
    public static let reservedRootNames: Set<String> = [fileName, signatureFileName, deltaFileName]
    /// A manifest larger than this is refused before it is parsed: at about 160 bytes per file record, the
    /// ``BundleLimits/maxFiles`` files of a front end with paths of typical length.
    public static let maxBytes = DocumentLimits.manifest

    public let schema: Int
    public let id: PackageID
    public let version: SemanticVersion
    public let createdAt: Timestamp
    public let scope: Scope
    public let entry: SafePath
    public let spaFallback: Bool
    public let offlinePage: SafePath?
    public let routes: [Route]
    /// How the network leg of the URLs under each prefix uses the app's HTTP cache; empty (omitted) for most
    /// packages. A runtime older than ``SatchelRuntime/cachePolicies`` refuses the field, so it needs that `minRuntime`.
    public let cachePolicies: [CacheRoute]
    public let minRuntime: SemanticVersion?
    /// Sorted by the UTF-8 bytes of their paths.
    public let files: [FileRecord]
    public let contentHash: String

    /// Builds a manifest from its parts: sorts the files, computes the contentHash, checks every rule.
    public init(
        id: PackageID, version: SemanticVersion, createdAt: Timestamp, scope: Scope,
        entry: SafePath = try! SafePath(validating: "index.html"), spaFallback: Bool = false,
        offlinePage: SafePath? = nil, routes: [Route] = [], cachePolicies: [CacheRoute] = [], minRuntime: SemanticVersion? = nil,
        files: [FileRecord]
    ) throws(ManifestError) {
        let sorted = files.sorted { $0.path < $1.path }
        try self.init(
            schema: Self.schemaVersion, id: id, version: version, createdAt: createdAt, scope: scope, entry: entry,
            spaFallback: spaFallback, offlinePage: offlinePage, routes: routes, cachePolicies: cachePolicies, minRuntime: minRuntime,
            files: sorted, contentHash: Digests.contentHash(of: sorted.map { ($0.path, $0.sha256) }))
        // What a reader would refuse unparsed must not be made: the manifest's bytes are bounded too.
        let bytes = canonicalBytes.count
        guard bytes <= Self.maxBytes else { throw .limit(.manifestTooLarge(bytes: bytes, limit: Self.maxBytes)) }
    }

    private init(
        schema: Int, id: PackageID, version: SemanticVersion, createdAt: Timestamp, scope: Scope, entry: SafePath,
        spaFallback: Bool, offlinePage: SafePath?, routes: [Route], cachePolicies: [CacheRoute], minRuntime: SemanticVersion?,
        files: [FileRecord], contentHash: String
    ) throws(ManifestError) {
        self.schema = schema
        self.id = id
        self.version = version
        self.createdAt = createdAt
        self.scope = scope
        self.entry = entry
        self.spaFallback = spaFallback
        self.offlinePage = offlinePage
        self.routes = routes
        self.cachePolicies = cachePolicies
        self.minRuntime = minRuntime
        self.files = files
        self.contentHash = contentHash
        try validate()
    }

    /// The file record for `path`, by binary search over the sorted list.
    public func file(at path: SafePath) -> FileRecord? {
        var low = 0
        var high = files.count
        while low < high {
            let mid = (low + high) / 2
            if files[mid].path < path { low = mid + 1 } else { high = mid }
        }
        return low < files.count && files[low].path == path ? files[low] : nil
    }

    /// Total bytes of all files.
    public var totalSize: Int64 { files.reduce(0) { $0 + $1.size } }

    // MARK: Rules

    private func validate() throws(ManifestError) {
        guard schema == Self.schemaVersion else { throw .unsupportedSchema(schema) }
        guard !files.isEmpty else { throw .noFiles }
        do { try BundleLimits.check(files.lazy.map { (path: $0.path.value, size: $0.size) }) } catch { throw .limit(error) }
        var collisionKeys: [String: SafePath] = [:]
        var folders = Set<String>()
        var previous: SafePath?
        for file in files {
            if let previous, !(previous < file.path) {
                throw previous == file.path ? .duplicatePath(file.path.value) : .filesNotSorted(file.path.value)
            }
            previous = file.path
            if file.path.segments.count == 1, Self.reservedRootNames.contains(file.path.value) {
                throw .reservedPath(file.path.value)
            }
            if let other = collisionKeys.updateValue(file.path, forKey: file.path.collisionKey) {
                throw .pathCollision(other.value, file.path.value)
            }
            guard file.size >= 0 else {
                throw .invalidField(FieldError(field: "files.size", value: String(file.size), reason: "must not be negative"))
            }
            guard Digests.isSHA256Hex(file.sha256) else {
                throw .invalidField(FieldError(field: "files.sha256", value: file.sha256, reason: "must be 64 lower-case hex digits (\(file.path))"))
            }
            guard Self.isMIMEType(file.mime) else {
                throw .invalidField(FieldError(field: "files.mime", value: file.mime, reason: "must look like type/subtype (\(file.path))"))
            }
            folders.formUnion(file.path.parentFolders)
        }
        // A name cannot be both a file and a folder on disk.
        for file in files where folders.contains(file.path.value) {
            throw .fileShadowsFolder(file.path.value)
        }
        guard file(at: entry) != nil else { throw .entryMissing(entry.value) }
        if let offlinePage, file(at: offlinePage) == nil { throw .offlinePageMissing(offlinePage.value) }
        var prefixes = Set<String>()
        for route in routes where !prefixes.insert(route.prefix).inserted {
            throw .invalidField(FieldError(field: "routes.prefix", value: route.prefix, reason: "is listed twice"))
        }
        var cachePrefixes = Set<String>()
        for route in cachePolicies where !cachePrefixes.insert(route.prefix).inserted {
            throw .invalidField(FieldError(field: "cachePolicies.prefix", value: route.prefix, reason: "is listed twice"))
        }
        if !cachePolicies.isEmpty, minRuntime.map({ $0 < SatchelRuntime.cachePolicies }) ?? true {
            throw .invalidField(FieldError(
                field: "minRuntime", value: minRuntime?.description ?? "(none)",
                reason: "must be \(SatchelRuntime.cachePolicies) or newer in a manifest with cachePolicies (older runtimes refuse the field)"))
        }
        let expected = Digests.contentHash(of: files.map { ($0.path, $0.sha256) })
        guard contentHash == expected else { throw .contentHashMismatch(claimed: contentHash, computed: expected) }
    }

    /// `type/subtype`: one slash with something on each side, printable ASCII without `;` (one pass, no splitting:
    /// a large manifest checks thousands).
    private static func isMIMEType(_ text: String) -> Bool {
        var slashes = 0
        var slashAt = -1
        var count = 0
        for byte in text.utf8 {
            guard byte > 0x20, byte < 0x7F, byte != UInt8(ascii: ";") else { return false }
            if byte == UInt8(ascii: "/") {
                slashes += 1
                slashAt = count
            }
            count += 1
        }
        return slashes == 1 && slashAt > 0 && slashAt < count - 1
    }

    // MARK: Serialisation

    /// The canonical bytes of `satchel.json` (see ``CanonicalJSON``). Optional fields are omitted when absent.
    public var canonicalBytes: [UInt8] { canonicalJSON.bytes }

    public var canonicalJSON: CanonicalJSON {
        let scopeObject: [String: CanonicalJSON] = [
            "hosts": .array(scope.hosts.map { .string($0.value) }),
            "pathPrefix": .string(scope.pathPrefix.value),
        ]
        var root: [String: CanonicalJSON] = [
            "schema": .integer(Int64(schema)),
            "id": .string(id.value),
            "version": .string(version.description),
            "createdAt": .string(createdAt.description),
            "scope": .object(scopeObject),
            "entry": .string(entry.value),
            "spaFallback": .bool(spaFallback),
            "routes": .array(routes.map { route in
                var object: [String: CanonicalJSON] = ["prefix": .string(route.prefix), "strategy": .string(route.strategy.rawValue)]
                if let timeout = route.timeoutMs { object["timeoutMs"] = .integer(Int64(timeout)) }
                return .object(object)
            }),
            "files": .array(files.map { file in
                .object([
                    "path": .string(file.path.value), "size": .integer(file.size),
                    "sha256": .string(file.sha256), "mime": .string(file.mime),
                ])
            }),
            "contentHash": .string(contentHash),
        ]
        if let offlinePage { root["offlinePage"] = .string(offlinePage.value) }
        if !cachePolicies.isEmpty {
            root["cachePolicies"] = .array(cachePolicies.map { route in
                var object: [String: CanonicalJSON] = ["prefix": .string(route.prefix), "policy": .string(route.policy.rawValue)]
                if let maxAge = route.maxAge { object["maxAge"] = .integer(Int64(maxAge)) }
                return .object(object)
            })
        }
        if let minRuntime { root["minRuntime"] = .string(minRuntime.description) }
        return .object(root)
    }

    /// How many times the 8 bytes `"sha256"` occur: one unaligned 8-byte load per position, cheap even unoptimised
    /// (a manifest at the limit is about 12 MB).
    private static func recordKeys(in bytes: [UInt8]) -> Int {
        let key = Array(#""sha256""#.utf8).withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
        return bytes.withUnsafeBytes { raw in
            guard raw.count >= 8 else { return 0 }
            var count = 0
            var index = 0
            let last = raw.count - 8
            while index <= last {
                if raw.loadUnaligned(fromByteOffset: index, as: UInt64.self) == key {
                    count += 1
                    index += 8
                } else {
                    index += 1
                }
            }
            return count
        }
    }

    /// Parses and checks `satchel.json` bytes. With `requireCanonical`, bytes that are valid but not in
    /// canonical form are refused too: a signed manifest must be the exact bytes the packer wrote.
    public static func decode(_ bytes: [UInt8], requireCanonical: Bool = true) throws(ManifestError) -> Manifest {
        // Too many files is known from one pass over the bytes, before a JSON tree of them is built: every file record
        // has one `"sha256"` key, and the name cannot occur unescaped inside a JSON string.
        if bytes.count <= maxBytes, bytes.count > BundleLimits.maxFiles * 64 {
            let records = recordKeys(in: bytes)
            if records > BundleLimits.maxFiles { throw .limit(.tooManyFiles(count: records, limit: BundleLimits.maxFiles)) }
        }
        let wire = try VersionedDocument.decode(Wire.self, from: bytes, maxBytes: maxBytes, schema: schemaVersion, as: ManifestError.self)
        var files: [FileRecord] = []
        files.reserveCapacity(wire.files.count)
        for file in wire.files {
            let path: SafePath
            do { path = try SafePath(validating: file.path) } catch { throw .unsafePath(error) }
            files.append(FileRecord(path: path, size: file.size, sha256: file.sha256, mime: file.mime))
        }
        let entry: SafePath
        let offlinePage: SafePath?
        do {
            entry = try SafePath(validating: wire.entry)
            offlinePage = try wire.offlinePage.map { path throws(SafePathError) in try SafePath(validating: path) }
        } catch { throw .unsafePath(error) }
        let manifest = try Manifest(
            schema: wire.schema, id: wire.id, version: wire.version, createdAt: wire.createdAt, scope: wire.scope,
            entry: entry, spaFallback: wire.spaFallback, offlinePage: offlinePage, routes: wire.routes,
            cachePolicies: wire.cachePolicies ?? [], minRuntime: wire.minRuntime, files: files, contentHash: wire.contentHash)
        if requireCanonical, manifest.canonicalBytes != bytes {
            // Readers refuse fields they do not know (docs/formats.md, "Schema rules for older readers"): say which.
            if let field = VersionedDocument.unknownField(in: bytes, canonical: manifest.canonicalBytes) { throw .unknownField(field) }
            throw .notCanonical
        }
        return manifest
    }

    private struct Wire: VersionedWire {
        struct File: Decodable {
            let path: String
            let size: Int64
            let sha256: String
            let mime: String
        }
        let schema: Int
        let id: PackageID
        let version: SemanticVersion
        let createdAt: Timestamp
        let scope: Scope
        let entry: String
        let spaFallback: Bool
        let offlinePage: String?
        let routes: [Route]
        let cachePolicies: [CacheRoute]?
        let minRuntime: SemanticVersion?
        let files: [File]
        let contentHash: String
    }
}

/// Why a manifest was refused. Each case names the field or path at fault.
public enum ManifestError: Error, Equatable, Sendable, CustomStringConvertible, VersionedDocumentError {
    case malformed(String)
    case tooLarge(Int)
    case missingField(String)
    case invalidField(FieldError)
    case unsupportedSchema(Int)
    case unsafePath(SafePathError)
    case noFiles
    case duplicatePath(String)
    case filesNotSorted(String)
    case pathCollision(String, String)
    case reservedPath(String)
    case fileShadowsFolder(String)
    case entryMissing(String)
    case offlinePageMissing(String)
    case contentHashMismatch(claimed: String, computed: String)
    case notCanonical
    /// A field this runtime does not know: a manifest of a newer format (its bundle's catalog entry should carry a
    /// `minRuntime` that keeps older runtimes away).
    case unknownField(String)
    /// Past one of ``BundleLimits``.
    case limit(BundleLimitError)

    public var description: String {
        switch self {
        case .malformed(let why): "manifest is malformed: \(why)"
        case .tooLarge(let size): "manifest is \(size) bytes, more than the \(Manifest.maxBytes) allowed"
        case .limit(let error): "manifest refused: \(error)"
        case .missingField(let field): "manifest lacks the field \(field)"
        case .invalidField(let error): "manifest has an \(error)"
        case .unsupportedSchema(let schema): "manifest schema \(schema) is not supported (this Satchel reads schema \(Manifest.schemaVersion))"
        case .unsafePath(let error): "manifest lists an unsafe \(error)"
        case .noFiles: "manifest lists no files"
        case .duplicatePath(let path): "manifest lists \(path.debugDescription) twice"
        case .filesNotSorted(let path): "manifest files are not sorted by UTF-8 bytes at \(path.debugDescription)"
        case .pathCollision(let a, let b): "paths \(a.debugDescription) and \(b.debugDescription) collide after NFC and case folding"
        case .reservedPath(let path): "\(path.debugDescription) is reserved for Satchel's own files"
        case .unknownField(let field): "manifest holds the field \(field), which this Satchel does not know (a newer manifest format: the bundle needs a newer runtime)"
        case .fileShadowsFolder(let path): "\(path.debugDescription) is both a file and a folder"
        case .entryMissing(let path): "entry \(path.debugDescription) is not one of the package's files"
        case .offlinePageMissing(let path): "offline page \(path.debugDescription) is not one of the package's files"
        case .contentHashMismatch(let claimed, let computed): "contentHash \(claimed) does not match the files (computed \(computed))"
        case .notCanonical: "manifest is not in canonical form (sorted keys, no whitespace)"
        }
    }
}
