import NIOCore
import NIOHTTP1
import SatchelCore
import SatchelEngine

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

    /// - Throws: ``FetchError/unsupportedURL(_:)`` for anything but an absolute http(s) URL.
    init(_ request: ResourceRequest, allocator: ByteBufferAllocator) throws(FetchError) {
        guard let url = RequestURL(request.url), url.scheme == "http" || url.scheme == "https" else { throw .unsupportedURL(request.url) }
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
        let method = HTTPMethod(rawValue: request.method.uppercased())
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
