/// What a representation offers for conditional requests: its entity tag and modification time (RFC 9110 §8.8).
public struct Validators: Sendable, Equatable {
    /// The `ETag` value as sent (`"abc"` or `W/"abc"`), if there is one.
    public var etag: String?
    public var lastModified: Timestamp?
    /// Whether ``lastModified`` is a strong validator (RFC 9110 §8.8.2.2): it is at least one second older than the
    /// response's `Date`, so no change within that second can hide behind it. Only a strong date can gate `If-Range`.
    public var lastModifiedIsStrong: Bool

    public init(etag: String? = nil, lastModified: Timestamp? = nil, lastModifiedIsStrong: Bool = true) {
        self.etag = etag
        self.lastModified = lastModified
        self.lastModifiedIsStrong = lastModifiedIsStrong
    }
}

/// The five preconditions of RFC 9110 §13.1, evaluated in the order of §13.2.2, in one place for every
/// representation Satchel answers for: package files, published files and stored HTTP responses.
public enum Preconditions {
    public enum Outcome: Equatable, Sendable {
        /// Every precondition holds (or none was asked): perform the method; `If-Range` is the range's to judge.
        case proceed
        /// 304: a GET or HEAD whose client holds the current representation.
        case notModified
        /// 412: a precondition the client set does not hold.
        case preconditionFailed
    }

    /// Steps 1 to 4 of RFC 9110 §13.2.2 for a request whose target has a current representation (`exists`) with
    /// `validators`. Step 5, `If-Range`, gates a range: ``ifRangeHolds(_:validators:)``.
    public static func evaluate(method: RequestMethod, headers: HTTPHeaders, validators: Validators, exists: Bool = true) -> Outcome {
        let safe = method.readsRepresentation
        // 1. If-Match; 2. otherwise If-Unmodified-Since.
        if let ifMatch = headers[.ifMatch] {
            if !ifMatchHolds(ifMatch, validators: validators, exists: exists) { return .preconditionFailed }
        } else if let ifUnmodifiedSince = headers[.ifUnmodifiedSince], let date = singleDate(ifUnmodifiedSince),
            let lastModified = validators.lastModified, exists
        {
            if lastModified > date { return .preconditionFailed }
        }
        // 3. If-None-Match; 4. otherwise, for GET and HEAD, If-Modified-Since.
        if let ifNoneMatch = headers[.ifNoneMatch] {
            if !ifNoneMatchHolds(ifNoneMatch, validators: validators, exists: exists) { return safe ? .notModified : .preconditionFailed }
        } else if safe, let ifModifiedSince = headers[.ifModifiedSince], let date = singleDate(ifModifiedSince),
            let lastModified = validators.lastModified, exists
        {
            if lastModified <= date { return .notModified }
        }
        return .proceed
    }

    /// `If-Match` (§13.1.1): `*` holds when there is a representation; a list holds when one tag matches the
    /// current one by the strong comparison (a weak tag never does).
    static func ifMatchHolds(_ value: String, validators: Validators, exists: Bool) -> Bool {
        if Substring(value).trimmingSpaces == "*" { return exists }
        guard let current = validators.etag, !EntityTag.isWeak(current) else { return false }
        return EntityTag.tags(in: value).contains { !EntityTag.isWeak($0) && $0 == Substring(current) }
    }

    /// `If-None-Match` (§13.1.2): `*` fails when there is a representation; a list fails when one tag matches the
    /// current one by the weak comparison.
    static func ifNoneMatchHolds(_ value: String, validators: Validators, exists: Bool) -> Bool {
        if Substring(value).trimmingSpaces == "*" { return !exists }
        guard let current = validators.etag else { return true }
        return !EntityTag.noneMatchHits(value, etag: current)
    }

    /// `If-Range` (§13.1.5): an entity tag must match the current one by the strong comparison; a date must equal
    /// a strong `Last-Modified` exactly. Anything else sends the whole representation.
    public static func ifRangeHolds(_ value: String, validators: Validators) -> Bool {
        let trimmed = Substring(value).trimmingSpaces
        if trimmed.hasPrefix("\"") || trimmed.hasPrefix("W/") {
            guard let current = validators.etag, !EntityTag.isWeak(current), !EntityTag.isWeak(trimmed) else { return false }
            return trimmed == Substring(current)
        }
        guard let date = Timestamp(httpDate: String(trimmed)), let lastModified = validators.lastModified else { return false }
        return validators.lastModifiedIsStrong && lastModified == date
    }

    /// A date field's value when it is one valid HTTP date (a list, or anything else, is ignored: §13.1.3, §13.1.4).
    private static func singleDate(_ value: String) -> Timestamp? {
        Timestamp(httpDate: String(Substring(value).trimmingSpaces))
    }
}
