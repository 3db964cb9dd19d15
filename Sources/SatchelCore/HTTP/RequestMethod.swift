/// A request method (RFC 9110 §9; not NIOHTTP1.HTTPMethod, which the server and client map to and from), kept as sent: methods are case-sensitive tokens, so `get` is not `GET`. The
/// rules compare against the named ones below instead of spelling them, and ask the method what it allows.
public struct RequestMethod: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { rawValue = value }

    public static let get: RequestMethod = "GET"
    public static let head: RequestMethod = "HEAD"
    public static let post: RequestMethod = "POST"
    public static let put: RequestMethod = "PUT"
    public static let patch: RequestMethod = "PATCH"
    public static let delete: RequestMethod = "DELETE"
    public static let options: RequestMethod = "OPTIONS"
    public static let connect: RequestMethod = "CONNECT"

    public var description: String { rawValue }

    /// GET or HEAD: what a package can answer with its files, and what never carries a body a page could lose.
    public var readsRepresentation: Bool { self == .get || self == .head }

    /// Safe methods (§9.2.1): a page's `Sec-Fetch-Site` rules and SameSite's lax cookies allow these cross-site.
    public var isSafe: Bool { self == .get || self == .head || self == .options || rawValue == "TRACE" }
}
