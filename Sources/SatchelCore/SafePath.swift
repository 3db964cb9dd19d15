import Foundation

/// A relative, `/`-separated path inside a package, checked once by the one rule that the packer, the
/// installer and the engine share (docs/formats.md, "Paths").
///
/// A `SafePath` is always in Unicode NFC form, never absolute, and has no empty, `.` or `..` segment, no
/// backslash, NUL or other control character. Two paths that differ only by case or normalisation have the
/// same ``collisionKey``; a package may not hold both, because case-insensitive file systems (APFS, NTFS)
/// would merge them on install.
public struct SafePath: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The NFC-normalised path text, as written in manifests and archives.
    public let value: String

    /// The longest path, in UTF-8 bytes, that a package may hold. Below PATH_MAX with room for a store root.
    public static let maxBytes = 1024
    /// The longest segment, in UTF-8 bytes: the file-name limit of every common file system.
    public static let maxSegmentBytes = 255

    /// Accepts `raw` only when it is already valid and in NFC form: for manifests and archive entries, which
    /// a conforming packer wrote normalised.
    public init(validating raw: String) throws(SafePathError) {
        try Self.check(raw)
        // ASCII text is already NFC; Foundation's normaliser was most of the time of decoding a large manifest.
        if !raw.utf8.allSatisfy({ $0 < 0x80 }), raw.precomposedStringWithCanonicalMapping.utf8.elementsEqual(raw.utf8) == false {
            throw SafePathError(path: raw, reason: .notNFC)
        }
        value = raw
    }

    /// Normalises `raw` to NFC and then validates it: for names read from a source folder or a URL.
    public init(normalizing raw: String) throws(SafePathError) {
        // ASCII text is already NFC; skipping Foundation's normaliser matters on the engine's hot path.
        let nfc = raw.utf8.allSatisfy { $0 < 0x80 } ? raw : raw.precomposedStringWithCanonicalMapping
        try Self.check(nfc)
        value = nfc
    }

    /// The key under which two paths collide: NFC, then Unicode case folding.
    public var collisionKey: String {
        // For ASCII, Unicode case folding is A-Z to a-z and NFC changes nothing: the same key, without Foundation.
        if value.utf8.allSatisfy({ $0 < 0x80 }) {
            return String(decoding: value.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
        }
        return value.folding(options: [.caseInsensitive], locale: nil).precomposedStringWithCanonicalMapping
    }

    public var segments: [Substring] { value.split(separator: "/", omittingEmptySubsequences: false) }

    /// The last segment.
    public var fileName: Substring { segments.last ?? Substring(value) }

    /// The extension of the file name, lower-cased, without the dot; empty when there is none.
    public var fileExtension: String {
        let name = fileName
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "" }
        return name[name.index(after: dot)...].lowercased()
    }

    /// Each folder that contains this path, outermost first: `a/b/c.txt` gives `a`, `a/b`.
    public var parentFolders: [String] {
        // Each prefix up to a slash, found on the UTF-8 view: decoding a 5,000-file manifest calls this for every file.
        var result: [String] = []
        let utf8 = value.utf8
        var start = utf8.startIndex
        while let slash = utf8[start...].firstIndex(of: UInt8(ascii: "/")) {
            result.append(String(value[..<slash]))
            start = utf8.index(after: slash)
        }
        return result
    }

    public var description: String { value }

    /// Orders by the UTF-8 bytes of the path, the order that manifests and content hashes use.
    public static func < (lhs: SafePath, rhs: SafePath) -> Bool {
        lhs.value.utf8.lexicographicallyPrecedes(rhs.value.utf8)
    }

    /// One pass over the UTF-8 bytes: the engine runs this for every request.
    private static func check(_ path: String) throws(SafePathError) {
        let utf8 = path.utf8
        if utf8.isEmpty { throw SafePathError(path: path, reason: .empty) }
        if utf8.count > maxBytes { throw SafePathError(path: path, reason: .tooLong) }
        if utf8.first == UInt8(ascii: "/") { throw SafePathError(path: path, reason: .absolute) }
        var segmentLength = 0
        var dots = 0  // the segment so far is only dots
        var onlyDots = true
        func endSegment() throws(SafePathError) {
            if segmentLength == 0 { throw SafePathError(path: path, reason: .emptySegment) }
            if onlyDots, dots <= 2 { throw SafePathError(path: path, reason: .dotSegment) }
            if segmentLength > maxSegmentBytes { throw SafePathError(path: path, reason: .segmentTooLong) }
        }
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "/"):
                try endSegment()
                segmentLength = 0
                dots = 0
                onlyDots = true
                continue
            case 0: throw SafePathError(path: path, reason: .nul)
            case 0x5C: throw SafePathError(path: path, reason: .backslash)
            case 0x01...0x1F, 0x7F: throw SafePathError(path: path, reason: .controlCharacter)
            case UInt8(ascii: "."): dots += 1
            default: onlyDots = false
            }
            segmentLength += 1
        }
        try endSegment()
        // C1 control characters (U+0080-U+009F) are two UTF-8 bytes; check them only for non-ASCII paths.
        if utf8.contains(where: { $0 >= 0x80 }), path.unicodeScalars.contains(where: { (0x80...0x9F).contains($0.value) }) {
            throw SafePathError(path: path, reason: .controlCharacter)
        }
    }
}

/// Why a path was refused, with the path itself.
public struct SafePathError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Reason: String, Sendable, Equatable {
        case empty = "is empty"
        case absolute = "is absolute (starts with /)"
        case emptySegment = "has an empty segment (//)"
        case dotSegment = "has a . or .. segment"
        case backslash = "contains a backslash"
        case nul = "contains a NUL byte"
        case controlCharacter = "contains a control character"
        case notNFC = "is not in Unicode NFC form"
        case tooLong = "is longer than 1024 bytes"
        case segmentTooLong = "has a segment longer than 255 bytes"
        case invalidEncoding = "is not valid UTF-8 or has a bad percent-encoding"
    }

    public let path: String
    public let reason: Reason

    public init(path: String, reason: Reason) {
        self.path = path
        self.reason = reason
    }

    public var description: String {
        "path \(path.debugDescription) \(reason.rawValue)"
    }
}
