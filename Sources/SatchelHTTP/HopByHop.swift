import SatchelCore

/// The header fields that belong to one connection and never cross a proxy (RFC 9110 §7.6.1): the listed
/// ones, and any field the `Connection` header names. One rule for both directions of the network fallback.
public enum HopByHop {
    public static let fields: [String] = [
        "Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization", "TE", "Trailer",
        "Transfer-Encoding", "Upgrade",
    ]

    /// ``fields`` by the length of their names, so that a field is compared only with the names as long as its
    /// own (for most fields, none): this runs for every field of every forwarded request and response.
    @usableFromInline
    static let fieldsByLength: [[String]] = {
        var table = [[String]](repeating: [], count: (fields.map(\.utf8.count).max() ?? 0) + 1)
        for name in fields { table[name.utf8.count].append(name) }
        return table
    }()

    /// The field names a `Connection` value lists (RFC 9110 §7.6.1), without the ones removed anyway
    /// (`keep-alive`, which many responses carry, costs a comparison and no array). `close` is kept: a field named
    /// `Close` must go too (RFC 9110 §18.4 reserves that name for this reason). On the UTF-8 view: splitting
    /// Characters (grapheme breaking) costs more than the rest of the removal.
    @inlinable
    static func connectionOptions(_ value: String, into named: inout [String]) {
        let utf8 = value.utf8
        var start = utf8.startIndex
        while start < utf8.endIndex {
            let comma = utf8[start...].firstIndex(of: UInt8(ascii: ",")) ?? utf8.endIndex
            var low = start
            var high = comma
            while low < high, utf8[low] == UInt8(ascii: " ") || utf8[low] == UInt8(ascii: "\t") { low = utf8.index(after: low) }
            while low < high, utf8[utf8.index(before: high)] == UInt8(ascii: " ") || utf8[utf8.index(before: high)] == UInt8(ascii: "\t") {
                high = utf8.index(before: high)
            }
            if low < high {
                let option = String(Substring(utf8[low..<high]))
                if !isHopByHop(option) { named.append(option) }
            }
            start = comma < utf8.endIndex ? utf8.index(after: comma) : comma
        }
    }

    /// Whether `name` is one of ``fields`` (case-insensitively).
    @inlinable
    public static func isHopByHop(_ name: String) -> Bool {
        let length = name.utf8.count
        let table = fieldsByLength
        return length < table.count && table[length].contains { HTTPHeaders.equalNames($0, name) }
    }

    /// `headers` without hop-by-hop fields (and without the fields named in `also`), every other field kept as it
    /// was: same order, repeated fields as separate lines, values untouched. Runs for every forwarded request and
    /// response, so it compares names in place rather than lower-casing copies.
    public static func removing(from headers: HTTPHeaders, also extra: [String] = []) -> HTTPHeaders {
        removing(fromFields: headers.fields, also: extra)
    }

    /// The same for fields in another type (NIO's, as a response arrives): copied once, without the removed ones.
    /// Inlinable, so the caller's module specializes it for its collection (unspecialized, every field would
    /// go through protocol witnesses).
    @inlinable
    public static func removing<Fields: Collection>(fromFields headers: Fields, also extra: [String] = []) -> HTTPHeaders
    where Fields.Element == (name: String, value: String) {
        // Fields the Connection header names are hop-by-hop too (rare: most requests have no Connection field).
        var named: [String] = []
        for field in headers where HTTPHeaders.equalNames(field.name, "Connection") { connectionOptions(field.value, into: &named) }
        // Names of different lengths are told apart without reading a byte (``HTTPHeaders/equalNames(_:_:)``), so
        // comparing every field with every removed name costs a length check for nearly all of them.
        // Room for the two fields a response usually gains on its way (`Cache-Status`, `Date`), so adding them does
        // not copy the list.
        var kept = HTTPHeaders(capacity: headers.count + 2)
        for field in headers {
            let name = field.name
            if isHopByHop(name) || extra.contains(where: { HTTPHeaders.equalNames($0, name) })
                || named.contains(where: { HTTPHeaders.equalNames($0, name) })
            {
                continue
            }
            kept.add(name, field.value)
        }
        return kept
    }
}
