/// Every request field Satchel's own rules read to decide an answer: the conditionals and ranges, CORS, the framing
/// of a body, the page's cache policy, and what a request says about itself (mode, destination, site, accepted types).
///
/// The rules read these through ``HTTPHeaders/subscript(_:)-(RequestField)``, never by a string, so the list cannot
/// miss one: a rule that needs a new field adds a case here, and anything keyed on "the fields that can change an
/// answer" (the server's reuse of encoded answers) sees it at once. The body channels' fields are the one other
/// family, listed by ``BodyChannels``.
public enum RequestField: String, CaseIterable, Sendable {
    case range = "Range"
    case ifRange = "If-Range"
    case ifMatch = "If-Match"
    case ifNoneMatch = "If-None-Match"
    case ifModifiedSince = "If-Modified-Since"
    case ifUnmodifiedSince = "If-Unmodified-Since"
    case origin = "Origin"
    case accessControlRequestMethod = "Access-Control-Request-Method"
    case accessControlRequestHeaders = "Access-Control-Request-Headers"
    case contentLength = "Content-Length"
    case transferEncoding = "Transfer-Encoding"
    /// The page's cache policy for the request's network leg (`X-Satchel-Cache`); a bad value is a 400.
    case satchelCache = "X-Satchel-Cache"
    case accept = "Accept"
    case secFetchMode = "Sec-Fetch-Mode"
    case secFetchDest = "Sec-Fetch-Dest"
    case secFetchSite = "Sec-Fetch-Site"
    /// The type of a request body; only a stored body keeps it (the body store's endpoint).
    case contentType = "Content-Type"

    /// Whether the field can change an answer built from a package (its status, headers or bytes). The request's own
    /// description (mode, destination, site, accepted types) only chooses between answers nothing reuses (the offline
    /// page, a refusal, cookies on the network leg), and browsers send it on every request: keying reuse on it would
    /// end reuse for every browser.
    public var changesPackageAnswer: Bool {
        switch self {
        case .accept, .secFetchMode, .secFetchDest, .secFetchSite, .contentType: false
        default: true
        }
    }
}

extension HTTPHeaders {
    /// The first value of a field a rule reads.
    public subscript(_ field: RequestField) -> String? { self[field.rawValue] }

    public func contains(_ field: RequestField) -> Bool { self[field.rawValue] != nil }
}
