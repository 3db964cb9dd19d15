/// A request as a web view or the local server hands it over: method, URL, headers and, for methods that
/// carry one, a body. No platform type appears here, so the same request reaches the engine from
/// `WKURLSchemeHandler`, from SwiftNIO or from a test.
public struct ResourceRequest: Sendable, Equatable {
    public var method: String
    /// The absolute URL as received, e.g. `satchel://m.shop.com/app/index.html?x=1`.
    public var url: String
    public var headers: HTTPHeaders
    public var body: [UInt8]?

    public init(method: String = "GET", url: String, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8]? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
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
        // Works on the UTF-8 view throughout: Character-based scanning (grapheme breaking) costs more than
        // the rest of a cached request put together.
        let utf8 = text.utf8
        guard let colon = utf8.firstIndex(of: UInt8(ascii: ":")), colon != utf8.startIndex,
            utf8[..<colon].allSatisfy(Self.isSchemeByte)
        else { return nil }
        var cursor = utf8.index(after: colon)
        guard utf8[cursor...].starts(with: [UInt8(ascii: "/"), UInt8(ascii: "/")]) else { return nil }
        cursor = utf8.index(cursor, offsetBy: 2)
        let authorityEnd = utf8[cursor...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? utf8.endIndex
        var hostStart = cursor
        if let at = utf8[cursor..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) { hostStart = utf8.index(after: at) }
        var hostEnd = authorityEnd
        var port: Int?
        if hostStart < authorityEnd, utf8[hostStart] == UInt8(ascii: "[") {
            // IPv6 literal: keep the brackets as the host.
            guard let close = utf8[hostStart..<authorityEnd].firstIndex(of: UInt8(ascii: "]")) else { return nil }
            hostEnd = utf8.index(after: close)
            if hostEnd < authorityEnd, utf8[hostEnd] == UInt8(ascii: ":") {
                port = Int(Substring(utf8[utf8.index(after: hostEnd)..<authorityEnd]))
            }
        } else if let portColon = utf8[hostStart..<authorityEnd].lastIndex(of: UInt8(ascii: ":")) {
            let digits = utf8[utf8.index(after: portColon)..<authorityEnd]
            if !digits.isEmpty {
                guard let value = Int(Substring(digits)), (0...65535).contains(value) else { return nil }
                port = value
            }
            hostEnd = portColon
        }
        guard hostStart < hostEnd else { return nil }
        var pathEnd = utf8[authorityEnd...].firstIndex(of: UInt8(ascii: "#")) ?? utf8.endIndex
        var query: Substring?
        if let question = utf8[authorityEnd..<pathEnd].firstIndex(of: UInt8(ascii: "?")) {
            query = Substring(utf8[utf8.index(after: question)..<pathEnd])
            pathEnd = question
        }
        self.scheme = Self.lowercasedASCII(Substring(utf8[..<colon]))
        self.host = Self.lowercasedASCII(Substring(utf8[hostStart..<hostEnd]))
        self.port = port
        self.rawPath = authorityEnd == pathEnd ? "/" : String(Substring(utf8[authorityEnd..<pathEnd]))
        self.query = query.map(String.init)
    }

    /// Lower-cases only when there is an upper-case letter: hosts almost never have one.
    private static func lowercasedASCII(_ text: Substring) -> String {
        text.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) ? text.lowercased() : String(text)
    }

    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
            || byte == 0x2B || byte == 0x2D || byte == 0x2E
    }
}
