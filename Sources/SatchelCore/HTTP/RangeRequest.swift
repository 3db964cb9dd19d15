/// `Range: bytes=…` handling in three pure steps, as Workbox splits it, with the arithmetic of RFC 9110 §14:
///
/// 1. ``parse(_:)`` checks the syntax and returns the ranges as written;
/// 2. ``resolve(against:)`` clamps them to the representation's size (an end past the size is clamped, a
///    suffix longer than the size means the whole body, a first position at or past the size is
///    unsatisfiable);
/// 3. the engine builds the 206 (`Content-Range: bytes first-last/size`, inclusive) or the 416
///    (`Content-Range: bytes */size`).
public struct RangeRequest: Equatable, Sendable {
    /// One range as written.
    public enum Spec: Equatable, Sendable {
        /// `first-last` (inclusive), or `first-` when `last` is nil.
        case from(first: Int64, last: Int64?)
        /// `-length`: the last `length` bytes.
        case suffix(length: Int64)
    }

    public let specs: [Spec]

    /// Parses a `Range` header value. Returns nil for anything that is not a syntactically valid `bytes`
    /// range set (another unit, garbage, `last < first`): RFC 9110 lets a server ignore such a header and
    /// send the whole representation, which is what the engine does with nil.
    public static func parse(_ value: String) -> RangeRequest? {
        var text = Substring(value)
        while text.first == " " { text = text.dropFirst() }
        guard text.count > 6, text.prefix(6).lowercased() == "bytes=" else { return nil }
        var specs: [Spec] = []
        for rawPart in text.dropFirst(6).split(separator: ",", omittingEmptySubsequences: false) {
            let part = rawPart.trimmingSpaces
            if part.isEmpty { continue }  // RFC 9110 §5.6.1: empty list elements are allowed
            guard let dash = part.firstIndex(of: "-") else { return nil }
            let firstText = part[..<dash]
            let lastText = part[part.index(after: dash)...]
            if firstText.isEmpty {
                guard let length = Self.number(lastText) else { return nil }
                specs.append(.suffix(length: length))
            } else {
                guard let first = Self.number(firstText) else { return nil }
                if lastText.isEmpty {
                    specs.append(.from(first: first, last: nil))
                } else {
                    guard let last = Self.number(lastText), last >= first else { return nil }
                    specs.append(.from(first: first, last: last))
                }
            }
        }
        return specs.isEmpty ? nil : RangeRequest(specs: specs)
    }

    /// The satisfiable byte ranges for a representation of `size` bytes, clamped, in request order. Empty
    /// means unsatisfiable (416).
    public func resolve(against size: Int64) -> [ClosedRange<Int64>] {
        specs.compactMap { spec in
            switch spec {
            case .from(let first, let last):
                guard first < size else { return nil }
                return first...min(last ?? (size - 1), size - 1)
            case .suffix(let length):
                guard length > 0, size > 0 else { return nil }
                return max(0, size - length)...(size - 1)
            }
        }
    }

    private static func number(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int64(text)
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var result = self
        while result.first == " " || result.first == "\t" { result = result.dropFirst() }
        while result.last == " " || result.last == "\t" { result = result.dropLast() }
        return result
    }
}
