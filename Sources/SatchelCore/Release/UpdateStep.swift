import Foundation

/// One download that takes a device holding one version (the base) to another (docs/formats.md, "Steps"): the manifest
/// patch from the base, then per content the base lacks either a per-file diff from a content of the base or the
/// content's whole object. It is the objects way of a device that holds only the base, published ready-made, so that
/// the most common update (from the release just before) costs one request instead of one per file.
///
/// A step file is `SSTP`, a version byte (1), the header's length (4 bytes, big-endian), the header (gzip of this
/// type's canonical JSON), then the patch's bytes and each part's bytes in header order, with nothing after. This
/// type is the header and the layout it implies; pure (the gzip and the file are its readers' and writers' business).
public struct UpdateStep: Sendable, Equatable {
    /// What the step carries for one content the base lacks.
    public struct Part: Hashable, Sendable {
        /// SHA-256 of the content the part makes (a file of the target holds it).
        public var to: String
        /// For a diff, SHA-256 of the base's content it applies to; nil for a whole object.
        public var from: String?
        /// For a whole object, whether its bytes are a gzip of the content (as the published object is).
        public var gzip: Bool
        /// The part's bytes in the step file.
        public var size: Int64

        public static func diff(from: String, to: String, size: Int64) -> Part { Part(to: to, from: from, gzip: false, size: size) }
        public static func object(_ to: String, size: Int64, gzip: Bool) -> Part { Part(to: to, from: nil, gzip: gzip, size: size) }

        public var isDiff: Bool { from != nil }

        var canonicalJSON: CanonicalJSON {
            var fields: [String: CanonicalJSON] = ["to": .string(to), "size": .integer(size)]
            if let from { fields["from"] = .string(from) } else { fields["gzip"] = .bool(gzip) }
            return .object(fields)
        }
    }

    /// Where the patch and each part sit in a step file.
    public struct Layout: Sendable, Equatable {
        /// Offset and size of the manifest patch (gzip-compressed ``ManifestPatch``).
        public var patch: (offset: Int64, size: Int64)
        /// Offset of each part, in ``UpdateStep/parts`` order.
        public var parts: [Int64]

        public static func == (lhs: Layout, rhs: Layout) -> Bool {
            lhs.patch.offset == rhs.patch.offset && lhs.patch.size == rhs.patch.size && lhs.parts == rhs.parts
        }
    }

    public static let magic: [UInt8] = Array("SSTP".utf8)
    public static let formatVersion: UInt8 = 1
    /// Magic, version and the header's length: what a reader reads first.
    public static let prefixSize = 9
    /// The largest header accepted, uncompressed (``DocumentLimits/stepHeader``); compressed, at most this plus gzip's
    /// worst case growth.
    public static let maxHeaderBytes = DocumentLimits.stepHeader
    public static let maxCompressedHeaderBytes = maxHeaderBytes + maxHeaderBytes / 1024 + 64
    /// The file name's extension.
    public static let fileExtension = "step"

    /// The target version.
    public var id: PackageID
    public var version: SemanticVersion
    /// The base: the version (and its `contentHash`) a device must hold.
    public var from: SemanticVersion
    public var fromContentHash: String
    /// The size of the manifest patch, the first bytes after the header.
    public var patchSize: Int64
    /// Sorted by `to`; no content twice.
    public private(set) var parts: [Part]

    public init(id: PackageID, version: SemanticVersion, from: SemanticVersion, fromContentHash: String, patchSize: Int64, parts: [Part]) {
        self.id = id
        self.version = version
        self.from = from
        self.fromContentHash = fromContentHash
        self.patchSize = patchSize
        var seen = Set<String>()
        self.parts = parts.filter { seen.insert($0.to).inserted }.sorted { $0.to < $1.to }
    }

    /// The part that makes `content`, if the step carries it.
    public func part(making content: String) -> Part? { parts.first { $0.to == content } }

    /// The header's canonical JSON (before gzip).
    public var canonicalBytes: [UInt8] {
        CanonicalJSON.object([
            "id": .string(id.value), "version": .string(version.description), "from": .string(from.description),
            "fromContentHash": .string(fromContentHash), "patch": .integer(patchSize), "parts": .array(parts.map(\.canonicalJSON)),
        ]).bytes
    }

    /// The first ``prefixSize`` bytes of a step file whose gzip-compressed header is `headerLength` bytes.
    public static func prefix(headerLength: Int) -> [UInt8] {
        let length = UInt32(headerLength)
        return magic + [formatVersion, UInt8(length >> 24), UInt8((length >> 16) & 0xFF), UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF)]
    }

    /// The compressed header's length, read from a file's first ``prefixSize`` bytes; refused when the magic, the version
    /// or the length is wrong (a length past ``maxCompressedHeaderBytes`` is refused before anything is read).
    public static func headerLength(prefix bytes: [UInt8]) throws(UpdateStepError) -> Int {
        guard bytes.count >= prefixSize else { throw .truncated("the file is \(bytes.count) bytes, shorter than the \(prefixSize)-byte prefix") }
        guard Array(bytes[0..<4]) == magic else { throw .badMagic }
        guard bytes[4] == formatVersion else { throw .unsupportedVersion(bytes[4]) }
        let length = bytes[5..<9].reduce(0) { $0 << 8 | Int($1) }
        guard length > 0, length <= maxCompressedHeaderBytes else {
            throw .malformed("a header of \(length) bytes (at most \(maxCompressedHeaderBytes) compressed)")
        }
        return length
    }

    /// Where the patch and each part are in a file of `fileSize` bytes whose compressed header is `headerLength` bytes:
    /// the sizes MUST add up to exactly the file.
    public func layout(headerLength: Int, fileSize: Int64) throws(UpdateStepError) -> Layout {
        var offset = Int64(Self.prefixSize) + Int64(headerLength)
        let patch = (offset: offset, size: patchSize)
        offset += patchSize
        var offsets: [Int64] = []
        for part in parts {
            offsets.append(offset)
            // Each size is at most 2^50 (decode), so the sum of a header's worth cannot overflow.
            offset += part.size
        }
        guard offset == fileSize else { throw .sizeMismatch(declared: offset, actual: fileSize) }
        return Layout(patch: patch, parts: offsets)
    }

    /// Reads a header in canonical form only (an unknown field, another order, a part twice or out of order are
    /// refused: the updater then takes the objects way, as an updater from before steps does).
    public static func decode(_ bytes: [UInt8]) throws(UpdateStepError) -> UpdateStep {
        guard bytes.count <= maxHeaderBytes else { throw .malformed("a header of \(bytes.count) bytes, more than \(maxHeaderBytes)") }
        struct Wire: Decodable {
            struct Part: Decodable {
                let to: String
                let from: String?
                let gzip: Bool?
                let size: Int64
            }
            let id: PackageID
            let version: SemanticVersion
            let from: SemanticVersion
            let fromContentHash: String
            let patch: Int64
            let parts: [Part]
        }
        let wire: Wire
        do { wire = try JSONDecoder().decode(Wire.self, from: Data(bytes)) } catch { throw .malformed("\(error)") }
        guard Digests.isSHA256Hex(wire.fromContentHash) else { throw .malformed("fromContentHash must be 64 lower-case hex digits") }
        guard wire.from != wire.version else { throw .malformed("a step from \(wire.from) to itself") }
        guard wire.patch > 0, wire.patch <= Int64(ManifestPatch.maxBytes) else {
            throw .malformed("a patch of \(wire.patch) bytes (1 to \(ManifestPatch.maxBytes))")
        }
        var parts: [Part] = []
        for part in wire.parts {
            guard Digests.isSHA256Hex(part.to) else { throw .malformed("a part's to must be 64 lower-case hex digits") }
            guard part.size >= 0, part.size <= CatalogEntry.maxDownloadSize else { throw .malformed("a part of \(part.size) bytes") }
            switch (part.from, part.gzip) {
            case (let from?, nil):
                guard Digests.isSHA256Hex(from) else { throw .malformed("a diff's from must be 64 lower-case hex digits") }
                guard from != part.to else { throw .malformed("a diff from \(from) to itself") }
                guard part.size > 0 else { throw .malformed("an empty diff to \(part.to)") }
                parts.append(.diff(from: from, to: part.to, size: part.size))
            case (nil, let gzip?):
                parts.append(.object(part.to, size: part.size, gzip: gzip))
            default:
                throw .malformed("the part to \(part.to) must have either from (a diff) or gzip (an object)")
            }
        }
        let step = UpdateStep(
            id: wire.id, version: wire.version, from: wire.from, fromContentHash: wire.fromContentHash, patchSize: wire.patch, parts: parts)
        // Sorted, no content twice, and every field known and in order: the canonical bytes are the bytes read.
        guard step.canonicalBytes == bytes else { throw .malformed("not in canonical form") }
        return step
    }
}

public enum UpdateStepError: Error, Equatable, Sendable, CustomStringConvertible {
    case badMagic
    case unsupportedVersion(UInt8)
    case truncated(String)
    case malformed(String)
    /// The header's sizes do not add up to the file's.
    case sizeMismatch(declared: Int64, actual: Int64)

    public var description: String {
        switch self {
        case .badMagic: "not a step file (no SSTP magic)"
        case .unsupportedVersion(let version): "step file version \(version) (this reader knows 1)"
        case .truncated(let why): "step file is truncated: \(why)"
        case .malformed(let why): "step header is malformed: \(why)"
        case .sizeMismatch(let declared, let actual): "step header declares \(declared) bytes in all, the file is \(actual)"
        }
    }
}
