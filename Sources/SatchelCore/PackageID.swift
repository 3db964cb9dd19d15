/// A package identifier: `^[a-z0-9][a-z0-9_-]*(\.[a-z0-9_-]+)*$`, at most 64 bytes (docs/formats.md, "Package id and version").
///
/// Ids become folder names in the store, so the grammar keeps them safe on every file system.
public struct PackageID: Hashable, Sendable, Comparable, CustomStringConvertible, Codable {
    public let value: String
    public static let maxBytes = 64

    public init(_ raw: String) throws(FieldError) {
        guard Self.isValid(raw) else {
            throw FieldError(
                field: "id", value: raw,
                reason: "must match ^[a-z0-9][a-z0-9_-]*(\\.[a-z0-9_-]+)*$ and be at most \(Self.maxBytes) bytes")
        }
        value = raw
    }

    public init(from decoder: any Decoder) throws {
        let raw = try decoder.singleValueContainer().decode(String.self)
        try self.init(raw)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }

    public var description: String { value }

    public static func < (lhs: PackageID, rhs: PackageID) -> Bool {
        lhs.value.utf8.lexicographicallyPrecedes(rhs.value.utf8)
    }

    static func isValid(_ raw: String) -> Bool {
        let bytes = Array(raw.utf8)
        guard !bytes.isEmpty, bytes.count <= maxBytes else { return false }
        func isWord(_ b: UInt8) -> Bool {
            (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == 0x5F || b == 0x2D
        }
        func isAlnum(_ b: UInt8) -> Bool { (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) }
        guard isAlnum(bytes[0]) else { return false }
        var previousWasDot = false
        for b in bytes.dropFirst() {
            if b == 0x2E {
                if previousWasDot { return false }
                previousWasDot = true
            } else if isWord(b) {
                previousWasDot = false
            } else {
                return false
            }
        }
        return !previousWasDot
    }
}

/// A value that does not fit its field's grammar: names the field, the value and the rule.
public struct FieldError: Error, Equatable, Sendable, CustomStringConvertible {
    public let field: String
    public let value: String
    public let reason: String

    public init(field: String, value: String, reason: String) {
        self.field = field
        self.value = value
        self.reason = reason
    }

    public var description: String { "invalid \(field) \(value.debugDescription): \(reason)" }
}
