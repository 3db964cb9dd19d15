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
        var rest = Substring(text)
        guard let colon = rest.firstIndex(of: ":") else { return nil }
        let scheme = rest[..<colon]
        guard !scheme.isEmpty, scheme.utf8.allSatisfy({ Self.isSchemeByte($0) }) else { return nil }
        rest = rest[rest.index(after: colon)...]
        guard rest.hasPrefix("//") else { return nil }
        rest = rest.dropFirst(2)
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var port: Int?
        if authority.hasPrefix("[") {
            // IPv6 literal: keep the brackets as the host.
            guard let close = authority.firstIndex(of: "]") else { return nil }
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { port = Int(after.dropFirst()) }
            authority = authority[...close]
        } else if let portColon = authority.lastIndex(of: ":") {
            let digits = authority[authority.index(after: portColon)...]
            if !digits.isEmpty {
                guard let value = Int(digits), (0...65535).contains(value) else { return nil }
                port = value
            }
            authority = authority[..<portColon]
        }
        guard !authority.isEmpty else { return nil }
        rest = rest[authorityEnd...]
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        var query: Substring?
        if let question = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: question)...]
            rest = rest[..<question]
        }
        self.scheme = scheme.lowercased()
        self.host = authority.lowercased()
        self.port = port
        self.rawPath = rest.isEmpty ? "/" : String(rest)
        self.query = query.map(String.init)
    }

    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
            || byte == 0x2B || byte == 0x2D || byte == 0x2E
    }
}
