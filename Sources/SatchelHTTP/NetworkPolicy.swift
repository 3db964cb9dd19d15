import SatchelCore

/// Gives the cookies to send with an upstream request (an app's `HTTPCookieStorage` or `WKHTTPCookieStore`).
public protocol CookieProvider: Sendable {
    /// The `Cookie` header value for an upstream request to `url`, made for the page's `request` (whose headers say
    /// whether it is cross-site), or nil.
    /// - Throws: ``CookieStoreError`` when the store did not answer in time: the request fails (504) rather than go
    ///   out without the user's cookies.
    func cookieHeader(for url: String, request: ResourceRequest) async throws(CookieStoreError) -> String?
}

/// A call to the platform's cookie store that did not answer within its bound (a callback that never comes has been
/// reported of `WKHTTPCookieStore` on older iOS releases). Only the request that needed it fails; the store's later
/// calls go on.
public enum CookieStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The store's call `operation` (`allCookies`, `setCookie`, `deleteCookie`, `deleteAllCookies`) did not answer
    /// within `limit`.
    case noAnswer(operation: String, limit: Duration)

    public var description: String {
        switch self {
        case .noAnswer(let operation, let limit): "the cookie store did not answer \(operation) within \(limit)"
        }
    }
}

/// Who may be reached and how: the rules around every network fallback.
public struct NetworkPolicy: Sendable {
    /// Hosts the engine may contact (exact or `*.` patterns). Anything else is refused: never an open proxy.
    public var allowedHosts: [HostPattern]
    /// Per-host origin overrides, e.g. `m.shop.com` -> `http://127.0.0.1:8123` (tests, staging).
    public var upstreamOverrides: [String: String]
    public var timeouts: FetchTimeouts
    public var cookies: (any CookieProvider)?
    /// Sent as `User-Agent` on a network fallback whose request carries none (a web view's own requests carry
    /// WebKit's, with the app's name): the origin sees the app the same way the page does.
    public var userAgent: String?

    public init(allowedHosts: [HostPattern], upstreamOverrides: [String: String] = [:], timeouts: FetchTimeouts = FetchTimeouts(), cookies: (any CookieProvider)? = nil) {
        self.allowedHosts = allowedHosts
        self.upstreamOverrides = upstreamOverrides
        self.timeouts = timeouts
        self.cookies = cookies
    }

    /// Request fields that describe this hop, not the request (RFC 9110 §7.6.1), plus the two the fetcher sets
    /// itself: `Host` (the upstream's authority) and `Content-Length` (of the restored body).
    static let notForwarded = ["Host", "Content-Length"]

    /// The request to send upstream for `request`, whose URL is `upstreamURL`; throws when the host is not allowed.
    package func upstreamRequest(for request: ResourceRequest, upstreamURL: String) async throws(FetchError) -> ResourceRequest {
        var upstream = try upstreamRequestWithoutCookies(for: request, upstreamURL: upstreamURL)
        guard !upstream.headers.contains("Cookie"), let cookies else { return upstream }
        let value: String?
        do { value = try await cookies.cookieHeader(for: upstreamURL, request: request) } catch { throw .timedOut(error.description) }
        if let value { upstream.headers.add("Cookie", value) }
        return upstream
    }

    /// The same, without asking the ``CookieProvider``.
    package func upstreamRequestWithoutCookies(for request: ResourceRequest, upstreamURL: String) throws(FetchError) -> ResourceRequest {
        guard let url = RequestURL(upstreamURL), url.scheme == "https" || url.scheme == "http" else { throw .unsupportedURL(upstreamURL) }
        guard allowedHosts.contains(where: { $0.matches(url.host) }) else { throw .hostNotAllowed(url.host) }
        var target = upstreamURL
        if let base = upstreamOverrides[url.host] {
            // Keep path and query exactly as the page wrote them; replace scheme and authority. On the UTF-8
            // view (a miss is a proxy's hot path; scanning Characters costs grapheme breaking), past the
            // `scheme://` that RequestURL has just checked.
            let utf8 = upstreamURL.utf8
            let authority = utf8.index(utf8.firstIndex(of: UInt8(ascii: ":"))!, offsetBy: 3)
            let afterAuthority = utf8[authority...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? utf8.endIndex
            let rest = utf8[afterAuthority...]
            let baseBytes = base.utf8.last == UInt8(ascii: "/") ? base.utf8.dropLast() : base.utf8[...]
            target = ""
            target.reserveCapacity(baseBytes.count + rest.count)
            target += Substring(baseBytes)
            target += Substring(rest)
        }
        var headers = HopByHop.removing(from: request.headers, also: Self.notForwarded)
        if let userAgent, !headers.contains("User-Agent") { headers.add("User-Agent", userAgent) }
        return ResourceRequest(method: request.method, url: target, headers: headers, body: request.body, cachePolicy: request.cachePolicy)
    }
}
