import SatchelCore

/// Sends a request to the network and streams the answer back. The engine's default is
/// ``URLSessionFetcher``; the local server plugs in another (SatchelNetwork's NIOFetcher) without the engine knowing.
public protocol NetworkFetcher: Sendable {
    /// Fetches `request` (an absolute http(s) URL, body restored, satchel headers removed). Redirects are
    /// returned as they are, never followed. The body is a stream of chunks of at most 1 MiB.
    /// - Throws: ``FetchError``; task cancellation cancels the upstream request.
    func fetch(_ request: ResourceRequest, timeouts: FetchTimeouts) async throws -> ResourceResponse
}

/// How long a fetch may wait, and for what. There is deliberately no total: a response whose bytes keep coming
/// is never cut, however long it takes (a 1 GiB download, a slow stream); what is bounded is each wait.
public struct FetchTimeouts: Sendable, Equatable {
    /// Connecting (TCP, and TLS for https).
    public var connect: Duration
    /// From sending the request to the response head. A route's `timeoutMs` sets this: it is what a
    /// network-first route falls back to the package on.
    public var responseHead: Duration
    /// The longest wait for the next body chunk while the consumer is waiting for it. Time the consumer itself
    /// takes (a slow client holding the upstream back) does not count.
    public var idle: Duration

    public init(connect: Duration = .seconds(10), responseHead: Duration = .seconds(30), idle: Duration = .seconds(30)) {
        self.connect = connect
        self.responseHead = responseHead
        self.idle = idle
    }
}

/// Why the network could not answer. Each maps to the status the page sees: 502 (refused, reset, TLS, a
/// response that is not HTTP), 504 (timeout), 403 (a host that is not allow-listed), 400 (a request that cannot
/// go on the wire as it is: a field, method or target that would end early and change what the origin reads).
public enum FetchError: Error, Equatable, Sendable, CustomStringConvertible {
    case hostNotAllowed(String)
    case connectionFailed(String)
    case badResponse(String)
    case timedOut(String)
    case unsupportedURL(String)
    case invalidRequest(String)

    public var status: Int {
        switch self {
        case .hostNotAllowed: 403
        case .invalidRequest: 400
        case .timedOut: 504
        case .connectionFailed, .badResponse, .unsupportedURL: 502
        }
    }

    public var description: String {
        switch self {
        case .hostNotAllowed(let host): "host \(host) is not allowed upstream (not on the allow-list)"
        case .connectionFailed(let why): "upstream connection failed: \(why)"
        case .badResponse(let why): "upstream sent a bad response: \(why)"
        case .timedOut(let why): "upstream timed out: \(why)"
        case .unsupportedURL(let url): "cannot fetch \(url)"
        case .invalidRequest(let why): "cannot send the request upstream: \(why)"
        }
    }

    /// What went wrong, without the kind of failure in front (for a message that names its own context).
    public var reason: String {
        switch self {
        case .hostNotAllowed(let host): "\(host) is not on the allow-list"
        case .connectionFailed(let why), .badResponse(let why), .timedOut(let why), .invalidRequest(let why): why
        case .unsupportedURL(let url): "unsupported URL \(url)"
        }
    }

    /// A short plain-text response for the page, with `X-Satchel-Error`.
    public var response: ResourceResponse { .error(status, description) }
}

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
        var kept = HTTPHeaders(capacity: headers.count)
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

/// Gives the cookies to send with an upstream request (an app's `HTTPCookieStorage` or `WKHTTPCookieStore`).
public protocol CookieProvider: Sendable {
    /// The `Cookie` header value for `url`, or nil.
    func cookieHeader(for url: String) async -> String?
}

/// Who may be reached and how: the rules around every network fallback.
public struct NetworkPolicy: Sendable {
    /// Hosts the engine may contact (exact or `*.` patterns). Anything else is refused: never an open proxy.
    public var allowedHosts: [HostPattern]
    /// Per-host origin overrides, e.g. `m.shop.com` -> `http://127.0.0.1:8123` (tests, staging).
    public var upstreamOverrides: [String: String]
    public var timeouts: FetchTimeouts
    public var cookies: (any CookieProvider)?

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
    func upstreamRequest(for request: ResourceRequest, upstreamURL: String) async throws(FetchError) -> ResourceRequest {
        var upstream = try upstreamRequestWithoutCookies(for: request, upstreamURL: upstreamURL)
        if !upstream.headers.contains("Cookie"), let cookies, let value = await cookies.cookieHeader(for: upstreamURL) { upstream.headers.add("Cookie", value) }
        return upstream
    }

    /// The same, without asking the ``CookieProvider``.
    func upstreamRequestWithoutCookies(for request: ResourceRequest, upstreamURL: String) throws(FetchError) -> ResourceRequest {
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
            target = (base.hasSuffix("/") ? String(base.dropLast()) : base) + Substring(utf8[afterAuthority...])
        }
        return ResourceRequest(method: request.method, url: target, headers: HopByHop.removing(from: request.headers, also: Self.notForwarded), body: request.body)
    }
}
