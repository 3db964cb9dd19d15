import NIOCore
import NIOHTTP1
import SatchelCore

/// The request-target and the host of one request, parsed once at the edge (RFC 9112 §3.2 and §3.3). Everything
/// after it (the response cache, the engine, the `/_satchel/` endpoints, the log) reads this value; nothing
/// looks at the raw target or the `Host` field again, so no two steps can disagree on which host a request is for.
struct RequestTarget: Sendable, Equatable {
    enum Form: Sendable, Equatable {
        /// `/path?query`; the host comes from the `Host` field.
        case origin
        /// `http://host/path?query` (forward-proxy mode); the `Host` field is ignored (RFC 9112 §3.2.2).
        case absolute(scheme: String)
        /// `host:port`, for CONNECT.
        case authority
        /// `*`, for a server-wide OPTIONS.
        case asterisk
    }

    let form: Form
    /// The target exactly as received.
    let raw: String
    /// Lower-case, without the port; "" when an HTTP/1.0 request named none.
    let host: String
    let port: Int?
    /// `/path?query` as sent, percent-encoding untouched; "/" for an empty path, "" for the authority and
    /// asterisk forms.
    let pathAndQuery: String

    /// ``pathAndQuery`` without its query.
    var path: Substring { pathAndQuery.utf8.firstIndex(of: UInt8(ascii: "?")).map { pathAndQuery[..<$0] } ?? pathAndQuery[...] }

    var isAbsolute: Bool {
        if case .absolute = form { return true }
        return false
    }

    /// Why a request is refused at the edge, with 400.
    enum Problem: Error, Equatable, Sendable, CustomStringConvertible {
        case severalHostFields(Int)
        case missingHost
        case invalidHost(String)
        case invalidTarget(String)

        var description: String {
            switch self {
            case .severalHostFields(let count): "the request has \(count) Host header fields; exactly one is allowed (RFC 9112 §3.2)"
            case .missingHost: "an HTTP/1.1 request needs a Host header field (RFC 9112 §3.2)"
            case .invalidHost(let value): "invalid Host \(value.debugDescription)"
            case .invalidTarget(let target): "invalid request-target \(target.debugDescription)"
            }
        }
    }

    init(head: HTTPRequestHead) throws(Problem) {
        var hostField: String?
        var hostFields = 0
        for (name, value) in head.headers where SatchelCore.HTTPHeaders.equalNames(name, "Host") {
            hostFields += 1
            hostField = hostField ?? value
        }
        guard hostFields <= 1 else { throw .severalHostFields(hostFields) }
        let uri = head.uri
        raw = uri
        let first = uri.utf8.first
        if first == UInt8(ascii: "/") {
            form = .origin
            pathAndQuery = uri
            guard let hostField else {
                if head.version.major == 1, head.version.minor == 0 {
                    host = ""
                    port = nil
                    return
                }
                throw .missingHost
            }
            (host, port) = try Self.authority(hostField)
        } else if head.method == .CONNECT {
            form = .authority
            pathAndQuery = ""
            (host, port) = try Self.authority(uri, problem: .invalidTarget(uri))
            guard port != nil else { throw .invalidTarget(uri) }
        } else if uri == "*" {
            guard head.method == .OPTIONS else { throw .invalidTarget(uri) }
            form = .asterisk
            pathAndQuery = ""
            if let hostField {
                (host, port) = try Self.authority(hostField)
            } else {
                (host, port) = ("", nil)
            }
        } else {
            guard let url = RequestURL(uri), url.scheme == "http" || url.scheme == "https", !url.host.isEmpty else { throw .invalidTarget(uri) }
            form = .absolute(scheme: url.scheme)
            host = url.host
            port = url.port
            pathAndQuery = url.rawPath + (url.query.map { "?" + $0 } ?? "")
            // The Host field must still be valid when present, though the target's authority wins.
            if let hostField { _ = try Self.authority(hostField) }
        }
    }

    /// `host[:port]` (a reg-name, an IPv4 address or a bracketed IPv6 literal), lower-cased.
    static func authority(_ text: String, problem: Problem? = nil) throws(Problem) -> (host: String, port: Int?) {
        let failure = problem ?? .invalidHost(text)
        let utf8 = text.utf8
        guard !utf8.isEmpty else { throw failure }
        var hostEnd = utf8.endIndex
        var portStart: String.UTF8View.Index?
        if utf8.first == UInt8(ascii: "[") {
            guard let close = utf8.firstIndex(of: UInt8(ascii: "]")) else { throw failure }
            hostEnd = utf8.index(after: close)
            if hostEnd < utf8.endIndex {
                guard utf8[hostEnd] == UInt8(ascii: ":") else { throw failure }
                portStart = utf8.index(after: hostEnd)
            }
            guard utf8[utf8.index(after: utf8.startIndex)..<close].allSatisfy({ isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }) else { throw failure }
        } else {
            if let colon = utf8.firstIndex(of: UInt8(ascii: ":")) {
                hostEnd = colon
                portStart = utf8.index(after: colon)
            }
            guard hostEnd > utf8.startIndex, utf8[..<hostEnd].allSatisfy(isRegNameByte) else { throw failure }
        }
        var port: Int?
        if let portStart {
            let digits = utf8[portStart...]
            guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let value = Int(Substring(digits)), value <= 65535 else {
                throw failure
            }
            port = value
        }
        let name = Substring(utf8[..<hostEnd])
        return (name.utf8.contains { $0 >= 0x41 && $0 <= 0x5A } ? name.lowercased() : String(name), port)
    }

    /// RFC 3986 reg-name: unreserved, pct-encoded and sub-delims.
    private static func isRegNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "%"): true
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="):
            true
        default: false
        }
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }
}

/// One request, copied out of NIO's types once its body has arrived, with its target parsed: what the responder
/// and the tasks it starts work with.
struct ServerRequest: Sendable {
    let method: RequestMethod
    let target: RequestTarget
    let headers: SatchelCore.HTTPHeaders
    let body: [UInt8]?
    let version: HTTPVersion
    var keepAlive: Bool

    init(head: HTTPRequestHead, target: RequestTarget, body: ByteBuffer?, keepAlive: Bool) {
        method = RequestMethod(head.method.token)
        self.target = target
        var headers = SatchelCore.HTTPHeaders(capacity: head.headers.count)
        for (name, value) in head.headers { headers.add(name, value) }
        self.headers = headers
        self.body = body.map { Array($0.readableBytesView) }
        version = head.version
        self.keepAlive = keepAlive
    }

    init(method: RequestMethod, target: RequestTarget, headers: SatchelCore.HTTPHeaders, body: [UInt8]? = nil, version: HTTPVersion = .http1_1, keepAlive: Bool = true) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.version = version
        self.keepAlive = keepAlive
    }
}
