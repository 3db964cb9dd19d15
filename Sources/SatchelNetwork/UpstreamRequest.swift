import NIOCore
import NIOHTTP1
import SatchelCore
import SatchelHTTP

/// Where connections go: the pool keeps idle connections per origin.
struct UpstreamOrigin: Hashable, Sendable, CustomStringConvertible {
    let tls: Bool
    /// As connected to: a name or an address, IPv6 without brackets.
    let host: String
    let port: Int

    var description: String { "\(tls ? "https" : "http")://\(host.contains(":") ? "[\(host)]" : host):\(port)" }

    /// Whether the host is an address rather than a name (no SNI for those, RFC 6066 §3).
    var hostIsAddress: Bool {
        host.contains(":") || host.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E }
    }
}

/// One request as it goes on the wire, prepared once from the engine's ``ResourceRequest``: the origin to
/// connect to, the head with `Host` first and every other field in the order and form it came, and the body.
struct UpstreamRequest: Sendable {
    let origin: UpstreamOrigin
    let head: HTTPRequestHead
    let body: ByteBuffer?
    /// The URL, for error messages.
    let url: String

    /// May be sent again on a new connection when a reused one turns out to be closed before any byte of the
    /// answer came (RFC 9110 §9.2.2, and RFC 9112 §9.3.1: a client may retry an idempotent request then).
    var isIdempotent: Bool {
        switch head.method {
        case .GET, .HEAD, .OPTIONS, .TRACE, .PUT, .DELETE: true
        default: false
        }
    }

    /// - Throws: ``FetchError/unsupportedURL(_:)`` for anything but an absolute http(s) URL;
    ///   ``FetchError/invalidRequest(_:)`` for what cannot go on the wire as it is (``RequestSyntax``), before
    ///   any connection is opened.
    init(_ request: ResourceRequest, allocator: ByteBufferAllocator) throws(FetchError) {
        guard let url = RequestURL(request.url), url.scheme == "http" || url.scheme == "https" else { throw .unsupportedURL(request.url) }
        try RequestSyntax.check(request, url: url)
        let tls = url.scheme == "https"
        let defaultPort = tls ? 443 : 80
        let bracketed = url.host.hasPrefix("[")
        origin = UpstreamOrigin(tls: tls, host: bracketed ? String(url.host.dropFirst().dropLast()) : url.host, port: url.port ?? defaultPort)
        var headers = NIOHTTP1.HTTPHeaders()
        headers.reserveCapacity(request.headers.count + 2)
        headers.add(name: "Host", value: url.port.map { $0 == defaultPort ? url.host : "\(url.host):\($0)" } ?? url.host)
        for field in request.headers where !SatchelCore.HTTPHeaders.equalNames(field.name, "Host") && !SatchelCore.HTTPHeaders.equalNames(field.name, "Content-Length") {
            headers.add(name: field.name, value: field.value)
        }
        let method = HTTPMethod(token: request.method.rawValue.uppercased())
        // The body's own length, and only for a request that has one or whose method defines one (a POST with
        // no body says `Content-Length: 0`, as browsers do; NIO would otherwise frame it chunked).
        let bytes = request.body ?? []
        switch method {
        case .POST, .PUT, .PATCH:
            headers.add(name: "Content-Length", value: String(bytes.count))
        default:
            if !bytes.isEmpty { headers.add(name: "Content-Length", value: String(bytes.count)) }
        }
        body = bytes.isEmpty ? nil : allocator.buffer(bytes: bytes)
        let target = url.query.map { url.rawPath + "?" + $0 } ?? url.rawPath
        head = HTTPRequestHead(version: .http1_1, method: method, uri: target, headers: headers)
        self.url = request.url
    }
}

/// What may go where in a request's head (RFC 9110 §5.1, §5.5, §9.1; RFC 9112 §3), checked once here for every
/// field (NIO's outbound header validator, which would check the same again, is left out of the upstream
/// pipeline): a method or field name that is not a token, a value with a control character, or a host, path or
/// query with a space or control would end
/// its part of the head early (or be refused by NIO's encoder as a failed write that reads like the origin's
/// fault), and the origin would read the rest as other fields, or as a request of its own. Two methods are not
/// fetched with a body or at all: a TRACE has no body (RFC 9110 §9.3.8), and NIO's encoder drops its length but
/// writes the body anyway, which the origin would read as a second request; a CONNECT asks for a tunnel, which a
/// fetch does not make (the server opens tunnels itself).
enum RequestSyntax {
    static func check(_ request: ResourceRequest, url: RequestURL) throws(FetchError) {
        func refuse(_ why: String) -> FetchError { .invalidRequest("\(request.url): \(why)") }
        guard isToken(request.method.rawValue) else { throw refuse("the method \(request.method.rawValue.debugDescription) is not a token") }
        let method = request.method.rawValue.uppercased()
        if method == "TRACE", !(request.body ?? []).isEmpty { throw refuse("a TRACE request has no body") }
        if method == "CONNECT" { throw refuse("CONNECT asks for a tunnel, which is not fetched") }
        // The host goes into the `Host` field as it is (a wildcard allow-list entry lets any first label through).
        guard isTargetPart(url.host) else { throw refuse("the host has a space or a control character") }
        guard isTargetPart(url.rawPath) else { throw refuse("the path has a space or a control character") }
        if let query = url.query, !isTargetPart(query) { throw refuse("the query has a space or a control character") }
        for field in request.headers {
            guard isToken(field.name) else { throw refuse("the field name \(field.name.debugDescription) is not a token") }
            guard isValue(field.value) else { throw refuse("the value of \(field.name) has a control character") }
        }
    }

    /// `tchar` (RFC 9110 §5.6.2).
    static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
            default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
        }
    }

    /// Visible characters, spaces and tabs, and bytes past ASCII (obs-text: UTF-8 passes as it came).
    static func isValue(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 >= 0x20 ? $0 != 0x7F : $0 == 0x09 }
    }

    static func isTargetPart(_ text: String) -> Bool {
        !text.utf8.contains { $0 <= 0x20 || $0 == 0x7F }
    }
}

/// Turns an upstream head into the engine's response.
enum UpstreamResponse {
    /// The upstream's head as the engine's response: hop-by-hop fields removed, everything else as received.
    static func make(_ head: HTTPResponseHead, exchange: UpstreamExchange, method: HTTPMethod) -> ResourceResponse {
        let headers = HopByHop.removing(fromFields: head.headers)
        let status = Int(head.status.code)
        let bodiless = method == .HEAD || status < 200 || status == 204 || status == 304
        let body: ResponseBody = bodiless ? .empty : .stream(BodyStream(reader: exchange, source: exchange))
        return ResourceResponse(status: status, headers: headers, body: body)
    }
}

extension HTTPMethod {
    /// The method as it is written on the wire. NIO names one method by its enum case instead: `.MSEARCH`'s raw
    /// value is `MSEARCH`, while the request line says `M-SEARCH` (UPnP), so that one is mapped both ways.
    public var token: String { self == .MSEARCH ? "M-SEARCH" : rawValue }

    /// The method for a token as written on the wire (see ``token``).
    public init(token: String) {
        self = token == "M-SEARCH" ? .RAW(value: "M-SEARCH") : HTTPMethod(rawValue: token)
    }
}
