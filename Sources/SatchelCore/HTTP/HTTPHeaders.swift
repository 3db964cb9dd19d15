/// HTTP header fields in order, with case-insensitive lookup (RFC 9110 §5.1). A value type with no platform
/// dependency, shared by the engine, the WebKit adapter and the server.
public struct HTTPHeaders: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    public private(set) var fields: [(name: String, value: String)]

    public init() { fields = [] }

    /// Empty, with room for `capacity` fields, so building a response does not reallocate.
    public init(capacity: Int) {
        fields = []
        fields.reserveCapacity(capacity)
    }

    public init(_ fields: [(String, String)]) {
        self.fields = fields.map { (name: $0.0, value: $0.1) }
    }

    public init(dictionaryLiteral elements: (String, String)...) { self.init(elements) }

    /// The first value of `name`, compared case-insensitively.
    public subscript(name: String) -> String? {
        for field in fields where Self.equalNames(field.name, name) { return field.value }
        return nil
    }

    /// Every value of `name`, in order.
    public func values(_ name: String) -> [String] {
        // One array, and none when nothing matches (the usual answer, asked on every request).
        var values: [String] = []
        for field in fields where Self.equalNames(field.name, name) { values.append(field.value) }
        return values
    }

    public func contains(_ name: String) -> Bool { self[name] != nil }

    public mutating func add(_ name: String, _ value: String) { fields.append((name, value)) }

    /// Replaces every field called `name` with one.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        fields.append((name, value))
    }

    public mutating func remove(_ name: String) {
        // Looked for first: `removeAll(where:)` makes the array unique (a copy of a shared one) even when nothing
        // matches, and most removals find nothing.
        guard fields.contains(where: { Self.equalNames($0.name, name) }) else { return }
        fields.removeAll { Self.equalNames($0.name, name) }
    }

    public var count: Int { fields.count }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.count == rhs.fields.count && zip(lhs.fields, rhs.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    public var description: String { fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n") }

    /// A byte with ASCII upper case folded to lower case.
    @inlinable
    static func asciiLowercased(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }

    /// ASCII case-insensitive comparison without allocating.
    @inlinable
    public static func equalNames(_ a: String, _ b: String) -> Bool {
        // Most names compared differ in length (O(1) for native strings): no byte is looked at then.
        guard a.utf8.count == b.utf8.count else { return false }
        // Native strings (every name parsed or written here) have contiguous UTF-8: compared as two buffers, without
        // the iterators' per-byte bookkeeping; the UTF-8 views are compared for bridged strings.
        let contiguous = a.utf8.withContiguousStorageIfAvailable { left in
            b.utf8.withContiguousStorageIfAvailable { right in
                left.indices.allSatisfy { left[$0] == right[$0] || asciiLowercased(left[$0]) == asciiLowercased(right[$0]) }
            }
        }
        if let equal = contiguous ?? nil { return equal }
        return a.utf8.elementsEqual(b.utf8) { $0 == $1 || asciiLowercased($0) == asciiLowercased($1) }
    }
}
