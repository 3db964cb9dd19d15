/// What to send for a request to a representation of known size: RFC 9110's preconditions (``Preconditions``,
/// in §13.2.2's order), then Range with If-Range (§14), decided once for package files, published files and stored
/// HTTP responses.
public enum RepresentationSelection: Equatable, Sendable {
    /// 304: the client's copy is current.
    case notModified
    /// 412: a precondition the client set does not hold.
    case preconditionFailed
    /// 416 with `Content-Range: bytes */size`.
    case unsatisfiable
    /// 206 with this inclusive range.
    case partial(ClosedRange<Int64>)
    /// 200 with the whole representation (no Range, an ignored one, or several ranges).
    case full

    public static func select(method: RequestMethod, headers: HTTPHeaders, validators: Validators, size: Int64) -> RepresentationSelection {
        switch Preconditions.evaluate(method: method, headers: headers, validators: validators) {
        case .notModified: return .notModified
        case .preconditionFailed: return .preconditionFailed
        case .proceed: break
        }
        // Range applies to GET only (RFC 9110 §14.2); a failed If-Range means the whole body.
        guard method == .get, let value = headers[.range], let parsed = RangeRequest.parse(value),
            headers[.ifRange].map({ Preconditions.ifRangeHolds($0, validators: validators) }) ?? true
        else { return .full }
        let ranges = parsed.resolve(against: size)
        if ranges.isEmpty { return .unsatisfiable }
        // Several ranges are answered with the whole body, which RFC 9110 allows.
        return ranges.count == 1 ? .partial(ranges[0]) : .full
    }
}

extension RepresentationSelection {
    /// What a selection means on the wire for a representation of `size` bytes: the status, the framing headers
    /// and which bytes to send. The engine's package files and the server's published files both answer from it.
    public func answer(size: Int64) -> RepresentationAnswer {
        switch self {
        case .notModified: RepresentationAnswer(status: 304, offset: 0, length: 0, contentRange: nil, sendsBody: false)
        case .preconditionFailed: RepresentationAnswer(status: 412, offset: 0, length: 0, contentRange: nil, sendsBody: false)
        case .unsatisfiable: RepresentationAnswer(status: 416, offset: 0, length: 0, contentRange: "bytes */\(size)", sendsBody: false)
        case .partial(let range):
            RepresentationAnswer(
                status: 206, offset: range.lowerBound, length: range.upperBound - range.lowerBound + 1,
                contentRange: "bytes \(range.lowerBound)-\(range.upperBound)/\(size)", sendsBody: true)
        case .full: RepresentationAnswer(status: 200, offset: 0, length: size, contentRange: nil, sendsBody: true)
        }
    }
}

/// The status, framing headers and body bytes of a selected representation (``RepresentationSelection/answer(size:)``).
public struct RepresentationAnswer: Equatable, Sendable {
    public let status: Int
    /// The first byte of the representation to send.
    public let offset: Int64
    /// How many bytes to send (and the `Content-Length`); 0 for a 304 or 416.
    public let length: Int64
    public let contentRange: String?
    /// Whether the status carries content (200, 206); a HEAD sends the same head without it.
    public let sendsBody: Bool

    /// `Content-Range` when there is one, and `Content-Length` (a 304 gets none: it describes the stored response).
    public func addFraming(to headers: inout HTTPHeaders) {
        if let contentRange { headers.add("Content-Range", contentRange) }
        if status != 304 { headers.add("Content-Length", String(length)) }
    }
}
