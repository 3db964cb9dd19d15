import Foundation

/// One file of a version as a content-addressed object on the release side (docs/formats.md, "Objects and patches"):
/// `objects/<first two hex digits>/<sha256>`, plus `.gz` when the gzip of the file is smaller than the file.
public struct ContentObject: Hashable, Sendable, Codable {
    /// The published file's size (the gzip's, when compressed).
    public var size: Int64
    /// The published file's SHA-256 (the gzip's, when compressed): what its download is checked against.
    public var sha256: String
    public var gzip: Bool

    public init(size: Int64, sha256: String, gzip: Bool) {
        self.size = size
        self.sha256 = sha256
        self.gzip = gzip
    }

    /// The object's path under the objects URL, for a file whose content is `contentSHA256`.
    public func path(forContent contentSHA256: String) -> String {
        "\(contentSHA256.prefix(2))/\(contentSHA256)" + (gzip ? ".gz" : "")
    }
}

/// How to build one version's manifest from another's (or from nothing): the files that changed, with the object of
/// each, and the rest of the target manifest. A device holding the base builds the target's `satchel.json` byte for
/// byte, checks it as any downloaded manifest (canonical form, `contentHash`, the catalog's hash of its bytes, and
/// the signature it carries), and learns which objects to fetch. Canonical JSON, published gzip-compressed.
public struct ManifestPatch: Sendable, Equatable {
    public struct SetFile: Sendable, Equatable {
        public var file: FileRecord
        public var object: ContentObject
    }

    /// The base version and its `contentHash`; nil for the patch from nothing (every file is set).
    public var from: (version: SemanticVersion, contentHash: String)?
    /// The target manifest's fields other than `files` and `contentHash`, as its canonical JSON holds them.
    public var header: [String: CanonicalJSON]
    public var contentHash: String
    /// Base paths the target does not have, sorted.
    public var removed: [SafePath]
    /// Target files the base lacks or holds with other bytes (all of them from nothing), sorted by path.
    public var set: [SetFile]
    /// The target's `satchel.sig` (its text), when the target is signed.
    public var signature: String?

    public static func == (lhs: ManifestPatch, rhs: ManifestPatch) -> Bool { lhs.canonicalBytes == rhs.canonicalBytes }

    /// The patch that leads from `base` (nil: from nothing) to `target`; `objects` gives each of the target's file
    /// contents' published object.
    public static func make(from base: Manifest?, to target: Manifest, signature: String?, objects: [String: ContentObject]) throws(ManifestPatchError) -> ManifestPatch {
        var header: [String: CanonicalJSON] = [:]
        if case .object(let fields) = target.canonicalJSON { header = fields }
        header["files"] = nil
        header["contentHash"] = nil
        let baseFiles = Dictionary(uniqueKeysWithValues: (base?.files ?? []).map { ($0.path, $0) })
        var set: [SetFile] = []
        for file in target.files where baseFiles[file.path] != file {
            guard let object = objects[file.sha256] else { throw .missingObject(file.sha256) }
            set.append(SetFile(file: file, object: object))
        }
        let targetPaths = Set(target.files.map(\.path))
        return ManifestPatch(
            from: base.map { ($0.version, $0.contentHash) }, header: header, contentHash: target.contentHash,
            removed: (base?.files ?? []).map(\.path).filter { !targetPaths.contains($0) }, set: set, signature: signature)
    }

    /// The target manifest's exact bytes, built on `base` (the installed version the patch names, or nil for the
    /// patch from nothing), and the manifest they decode to.
    public func apply(to base: Manifest?) throws(ManifestPatchError) -> (bytes: [UInt8], manifest: Manifest) {
        switch (from, base) {
        case (nil, _): break
        case (let from?, let base?):
            guard base.version == from.version, base.contentHash == from.contentHash else {
                throw .baseMismatch(expected: "\(from.version) (\(from.contentHash))", actual: "\(base.version) (\(base.contentHash))")
            }
        case (let from?, nil): throw .baseMismatch(expected: from.version.description, actual: "nothing")
        }
        var files = Dictionary(uniqueKeysWithValues: ((from == nil ? nil : base)?.files ?? []).map { ($0.path, $0) })
        for path in removed {
            guard files.removeValue(forKey: path) != nil else { throw .malformed("removes \(path), which the base does not have") }
        }
        for entry in set { files[entry.file.path] = entry.file }
        var object = header
        object["files"] = .array(files.values.sorted { $0.path < $1.path }.map(Self.fileJSON))
        object["contentHash"] = .string(contentHash)
        let bytes = CanonicalJSON.object(object).bytes
        let manifest: Manifest
        do { manifest = try Manifest.decode(bytes) } catch { throw .invalidResult(error) }
        return (bytes, manifest)
    }

    // MARK: Serialisation

    public var canonicalBytes: [UInt8] {
        var root: [String: CanonicalJSON] = [
            "header": .object(header), "contentHash": .string(contentHash),
            "removed": .array(removed.map { .string($0.value) }),
            "set": .array(set.map { entry in
                guard case .object(var fields) = Self.fileJSON(entry.file) else { return .object([:]) }
                fields["object"] = .object(["size": .integer(entry.object.size), "sha256": .string(entry.object.sha256), "gzip": .bool(entry.object.gzip)])
                return .object(fields)
            }),
        ]
        if let from {
            root["from"] = .string(from.version.description)
            root["fromContentHash"] = .string(from.contentHash)
        }
        if let signature { root["signature"] = .string(signature) }
        return CanonicalJSON.object(root).bytes
    }

    static func fileJSON(_ file: FileRecord) -> CanonicalJSON {
        .object(["path": .string(file.path.value), "size": .integer(file.size), "sha256": .string(file.sha256), "mime": .string(file.mime)])
    }

    /// Largest patch accepted (a whole manifest's worth).
    public static let maxBytes = Manifest.maxBytes + (4 << 20)

    public static func decode(_ bytes: [UInt8]) throws(ManifestPatchError) -> ManifestPatch {
        guard bytes.count <= maxBytes else { throw .malformed("\(bytes.count) bytes, more than \(maxBytes)") }
        struct Wire: Decodable {
            struct File: Decodable {
                let path: String
                let size: Int64
                let sha256: String
                let mime: String
                let object: ContentObject
            }
            let from: SemanticVersion?
            let fromContentHash: String?
            let header: [String: CanonicalJSON]
            let contentHash: String
            let removed: [String]
            let set: [File]
            let signature: String?
        }
        let wire: Wire
        do { wire = try JSONDecoder().decode(Wire.self, from: Data(bytes)) } catch { throw .malformed("\(error)") }
        guard (wire.from == nil) == (wire.fromContentHash == nil) else { throw .malformed("from and fromContentHash go together") }
        var patch = ManifestPatch(from: nil, header: wire.header, contentHash: wire.contentHash, removed: [], set: [], signature: wire.signature)
        if let version = wire.from, let hash = wire.fromContentHash { patch.from = (version, hash) }
        do {
            patch.removed = try wire.removed.map { path throws(SafePathError) in try SafePath(validating: path) }
            patch.set = try wire.set.map { file throws(SafePathError) in
                SetFile(file: FileRecord(path: try SafePath(validating: file.path), size: file.size, sha256: file.sha256, mime: file.mime), object: file.object)
            }
        } catch { throw .malformed("a path: \(error)") }
        for entry in patch.set where !Digests.isSHA256Hex(entry.object.sha256) || entry.object.size < 0 {
            throw .malformed("the object of \(entry.file.path) is not a size and a SHA-256")
        }
        guard patch.canonicalBytes == bytes else { throw .malformed("not in canonical form") }
        return patch
    }
}

public enum ManifestPatchError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformed(String)
    /// The patch leads from another version (or other content) than the one offered.
    case baseMismatch(expected: String, actual: String)
    /// What the patch built is not a valid manifest.
    case invalidResult(ManifestError)
    /// A target file has no published object (the release side's fault).
    case missingObject(String)

    public var description: String {
        switch self {
        case .malformed(let why): "manifest patch is malformed: \(why)"
        case .baseMismatch(let expected, let actual): "manifest patch applies to \(expected), not \(actual)"
        case .invalidResult(let error): "manifest patch builds no valid manifest: \(error)"
        case .missingObject(let sha): "no object was published for content \(sha)"
        }
    }
}

/// How long a cache (a CDN, the server's own) may keep each kind of file of a release folder: objects are named by
/// their content and never change, nor do trust versions once published (`trust/<n>.json`, docs/formats.md, "Trust");
/// bundles and patches are named by version; the catalog and its signatures change with every release and must be
/// fetched again soon. `no-transform` everywhere: a compressed copy made on the way would no longer match the sizes
/// and hashes the catalog lists, or the bytes a trust document's signatures cover.
public enum ReleaseCaching {
    public static func cacheControl(forPublished path: String) -> String {
        let relative = path.hasPrefix("/") ? String(path.dropFirst()) : path
        // Steps too: named by their bytes' hash, a name never gets other bytes.
        if relative.hasPrefix("objects/") || relative.hasPrefix("diffs/") || relative.hasPrefix("steps/") {
            return "public, max-age=31536000, immutable, no-transform"
        }
        if isTrustDocument(relative) { return "public, max-age=31536000, immutable, no-transform" }
        if relative.hasPrefix("patches/") || relative.hasSuffix(".zip") || relative.hasSuffix(".tar.gz") { return "public, max-age=86400, no-transform" }
        if relative.hasSuffix(Catalog.fileName) || relative.hasSuffix(Catalog.signatureFileName) || relative.hasSuffix(Catalog.fileName + SignatureFile.suffix) {
            return "public, max-age=60, no-transform"
        }
        return "no-cache"
    }

    /// `…/trust/<n>.json`, wherever production's catalog is in the published folder.
    static func isTrustDocument(_ relative: String) -> Bool {
        let parts = relative.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[parts.count - 2] == "trust", parts.last!.hasSuffix(".json") else { return false }
        let digits = parts.last!.dropLast(5)
        return !digits.isEmpty && digits.allSatisfy { $0.isASCII && $0.isNumber }
    }
}
