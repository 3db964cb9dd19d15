/// What to send for a GET or HEAD of a representation with a strong ETag and a known size: the conditional
/// and range rules of RFC 9110 (§13.2.2 order: If-None-Match first, then Range with If-Range), decided once
/// for the engine and for the server's static files.
public enum RepresentationSelection: Equatable, Sendable {
    /// 304: the client's copy is current.
    case notModified
    /// 416 with `Content-Range: bytes */size`.
    case unsatisfiable
    /// 206 with this inclusive range.
    case partial(ClosedRange<Int64>)
    /// 200 with the whole representation (no Range, an ignored one, or several ranges).
    case full

    public static func select(method: String, headers: HTTPHeaders, etag: String, size: Int64) -> RepresentationSelection {
        if let condition = headers["If-None-Match"], EntityTag.noneMatchHits(condition, etag: etag) { return .notModified }
        // Range applies to GET only (RFC 9110 §14.2); a failed If-Range means the whole body.
        guard method == "GET", let value = headers["Range"], let parsed = RangeRequest.parse(value),
            headers["If-Range"].map({ EntityTag.ifRangeAllowsRange($0, etag: etag) }) ?? true
        else { return .full }
        let ranges = parsed.resolve(against: size)
        if ranges.isEmpty { return .unsatisfiable }
        // Several ranges are answered with the whole body, which RFC 9110 allows.
        return ranges.count == 1 ? .partial(ranges[0]) : .full
    }
}
