/// A request as a web view or the local server hands it over: method, URL, headers and, for methods that
/// carry one, a body. No platform type appears here, so the same request reaches the engine from
/// `WKURLSchemeHandler`, from SwiftNIO or from a test.
public struct ResourceRequest: Sendable, Equatable {
    public var method: RequestMethod
    /// The absolute URL as received, e.g. `satchel://m.shop.com/app/index.html?x=1`.
    public var url: String
    public var headers: HTTPHeaders
    public var body: [UInt8]?
    /// How an HTTP cache on the way answers it (the page's `X-Satchel-Cache`, or its route's): travels with the
    /// request to the fetcher, never on the wire.
    public var cachePolicy: RequestCachePolicy?

    public init(method: RequestMethod = .get, url: String, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8]? = nil, cachePolicy: RequestCachePolicy? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.cachePolicy = cachePolicy
    }
}

/// The parts of an absolute URL the engine routes on. Parsed by hand on the UTF-8 bytes: no normalisation
/// happens here (Foundation's URL would resolve dot segments and decode, hiding exactly what the path rules
/// must see).
public struct RequestURL: Sendable, Equatable {
    /// Lower-cased.
    public var scheme: String
    /// Lower-cased, without port or user info.
    public var host: String
    public var port: Int?
    /// The path exactly as sent, still percent-encoded; `/` when empty.
    public var rawPath: String
    /// The query without `?`, as sent; nil when absent.
    public var query: String?

    public init?(_ text: String) {
        // On the bytes, with integer offsets: Character-based scanning (grapheme breaking) costs more than the rest
        // of a cached request put together, and the generic UTF-8 view algorithms still go through witnesses.
        // Every cut is at an ASCII byte, so every part is valid UTF-8 as the text was.
        var text = text
        text.makeContiguousUTF8()
        guard let parsed = text.utf8.withContiguousStorageIfAvailable({ Self.parse($0) }), let parsed else { return nil }
        self = parsed
    }

    private init(scheme: String, host: String, port: Int?, rawPath: String, query: String?) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.rawPath = rawPath
        self.query = query
    }

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> RequestURL? {
        func text(_ range: Range<Int>) -> String { String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self) }
        let end = bytes.count
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon != 0, bytes[..<colon].allSatisfy(isSchemeByte) else { return nil }
        var cursor = colon + 1
        guard end - cursor >= 2, bytes[cursor] == UInt8(ascii: "/"), bytes[cursor + 1] == UInt8(ascii: "/") else { return nil }
        cursor += 2
        var authorityEnd = cursor
        while authorityEnd < end, bytes[authorityEnd] != UInt8(ascii: "/"), bytes[authorityEnd] != UInt8(ascii: "?"), bytes[authorityEnd] != UInt8(ascii: "#") {
            authorityEnd += 1
        }
        var hostStart = cursor
        if let at = bytes[cursor..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) { hostStart = at + 1 }
        var hostEnd = authorityEnd
        var port: Int?
        if hostStart < authorityEnd, bytes[hostStart] == UInt8(ascii: "[") {
            // IPv6 literal: keep the brackets as the host.
            guard let close = bytes[hostStart..<authorityEnd].firstIndex(of: UInt8(ascii: "]")) else { return nil }
            hostEnd = close + 1
            if hostEnd < authorityEnd, bytes[hostEnd] == UInt8(ascii: ":") {
                port = Int(text(hostEnd + 1..<authorityEnd))
            }
        } else if let portColon = bytes[hostStart..<authorityEnd].lastIndex(of: UInt8(ascii: ":")) {
            if portColon + 1 < authorityEnd {
                guard let value = Int(text(portColon + 1..<authorityEnd)), (0...65535).contains(value) else { return nil }
                port = value
            }
            hostEnd = portColon
        }
        guard hostStart < hostEnd else { return nil }
        var pathEnd = bytes[authorityEnd...].firstIndex(of: UInt8(ascii: "#")) ?? end
        var query: String?
        if let question = bytes[authorityEnd..<pathEnd].firstIndex(of: UInt8(ascii: "?")) {
            query = text(question + 1..<pathEnd)
            pathEnd = question
        }
        return RequestURL(
            scheme: lowercasedASCII(text(0..<colon)), host: lowercasedASCII(text(hostStart..<hostEnd)), port: port,
            rawPath: authorityEnd == pathEnd ? "/" : text(authorityEnd..<pathEnd), query: query)
    }

    /// Lower-cases only when there is an upper-case letter: hosts almost never have one.
    private static func lowercasedASCII(_ text: String) -> String {
        text.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) ? text.lowercased() : text
    }

    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
            || byte == 0x2B || byte == 0x2D || byte == 0x2E
    }
}
