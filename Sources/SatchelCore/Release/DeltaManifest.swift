import Foundation

/// `satchel-delta.json`, the third entry of a delta bundle (docs/formats.md, "Delta bundle"): which installed
/// version the delta applies to, that version's contentHash (so a different package that happens to carry the
/// same version number is refused), and the paths the target no longer has.
///
/// The delta carries the target's own `satchel.json` and `satchel.sig`, so what gets installed is checked
/// against the target manifest exactly as a full bundle is; this file only says how to get there.
public struct DeltaManifest: Hashable, Sendable {
    public static let fileName = "satchel-delta.json"
    public static let maxBytes = DocumentLimits.deltaManifest

    public let from: SemanticVersion
    public let fromContentHash: String
    /// Sorted by UTF-8 bytes.
    public let deleted: [SafePath]

    public init(from: SemanticVersion, fromContentHash: String, deleted: [SafePath]) throws(DeltaManifestError) {
        guard Digests.isSHA256Hex(fromContentHash) else {
            throw .invalidField(FieldError(field: "fromContentHash", value: fromContentHash, reason: "must be 64 lower-case hex digits"))
        }
        self.from = from
        self.fromContentHash = fromContentHash
        self.deleted = deleted.sorted()
        if let duplicate = zip(self.deleted, self.deleted.dropFirst()).first(where: { $0 == $1 }) {
            throw .duplicatePath(duplicate.0.value)
        }
    }

    /// Checks that the delta matches its base and target: `deleted` must be exactly the base's paths the
    /// target lacks. A delta built from another pair of versions fails here, before anything is written.
    public func check(base: Manifest, target: Manifest) throws(DeltaManifestError) {
        guard base.version == from else { throw .baseMismatch(reason: "base is \(base.version), the delta is from \(from)") }
        guard base.contentHash == fromContentHash else {
            throw .baseMismatch(reason: "base contentHash is \(base.contentHash), the delta expects \(fromContentHash)")
        }
        guard base.id == target.id else { throw .baseMismatch(reason: "base is package \(base.id), the delta is for \(target.id)") }
        let targetPaths = Set(target.files.map(\.path))
        let expected = base.files.map(\.path).filter { !targetPaths.contains($0) }
        guard expected == deleted else {
            let listed = Set(deleted)
            if let missing = expected.first(where: { !listed.contains($0) }) {
                throw .deletedListWrong(reason: "\(missing.value.debugDescription) is gone from the target but not listed as deleted")
            }
            let wrong = deleted.first { !expected.contains($0) }!
            throw .deletedListWrong(reason: "\(wrong.value.debugDescription) is listed as deleted but is not a base-only file")
        }
    }

    public var canonicalBytes: [UInt8] {
        CanonicalJSON.object([
            "from": .string(from.description),
            "fromContentHash": .string(fromContentHash),
            "deleted": .array(deleted.map { .string($0.value) }),
        ]).bytes
    }

    public static func decode(_ bytes: [UInt8]) throws(DeltaManifestError) -> DeltaManifest {
        guard bytes.count <= maxBytes else { throw .malformed("\(fileName) is \(bytes.count) bytes, more than \(maxBytes)") }
        struct Wire: Decodable {
            let from: SemanticVersion
            let fromContentHash: String
            let deleted: [String]
        }
        let wire: Wire
        do { wire = try JSONProblem.decode(Wire.self, from: bytes) } catch {
            switch error {
            case .malformed(let why): throw .malformed("\(fileName) is malformed: \(why)")
            case .missingField(let field): throw .malformed("\(fileName) lacks the field \(field)")
            case .invalidField(let field): throw .invalidField(field)
            }
        }
        var deleted: [SafePath] = []
        for path in wire.deleted {
            do { deleted.append(try SafePath(validating: path)) } catch { throw .unsafePath(error) }
        }
        let manifest = try DeltaManifest(from: wire.from, fromContentHash: wire.fromContentHash, deleted: deleted)
        guard manifest.canonicalBytes == bytes else {
            if let field = VersionedDocument.unknownField(in: bytes, canonical: manifest.canonicalBytes) {
                throw .malformed("\(fileName) holds the field \(field), which this Satchel does not know")
            }
            throw .malformed("\(fileName) is not in canonical form")
        }
        return manifest
    }
}

public enum DeltaManifestError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformed(String)
    case invalidField(FieldError)
    case unsafePath(SafePathError)
    case duplicatePath(String)
    case baseMismatch(reason: String)
    case deletedListWrong(reason: String)

    public var description: String {
        switch self {
        case .malformed(let why): why
        case .invalidField(let error): "\(DeltaManifest.fileName) has an \(error)"
        case .unsafePath(let error): "\(DeltaManifest.fileName) lists an unsafe \(error)"
        case .duplicatePath(let path): "\(DeltaManifest.fileName) lists \(path.debugDescription) twice"
        case .baseMismatch(let reason): "delta does not apply to the installed base: \(reason)"
        case .deletedListWrong(let reason): "delta's deleted list is wrong: \(reason)"
        }
    }
}
