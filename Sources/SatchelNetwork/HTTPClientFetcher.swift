import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import SatchelCore
import SatchelEngine

/// The network fallback on SwiftNIO: a ``NetworkFetcher`` over AsyncHTTPClient, the default for `satchel serve`
/// and on Linux (`URLSessionFetcher` stays for apps on Apple platforms).
///
/// - Header fields pass as sent, both ways: order kept, repeated fields (two `Set-Cookie`) as separate lines,
///   `Content-Length` passed on when the upstream sent one; only hop-by-hop fields are removed (``HopByHop``).
///   Nothing is added but `Host` (the upstream's authority) and the length of the restored body.
/// - Backpressure end to end: the upstream is read only as fast as the consumer takes the body
///   (``UpstreamExchange``), so a slow client costs one part of memory, not the whole response.
/// - Timeouts: connect (the client's), the response head (``FetchTimeouts/responseHead``, a route's
///   `timeoutMs`), and idle between body parts while the consumer waits; never a total that cuts a live body.
/// - Redirects are returned, never followed; bodies are passed on as received (no decompression).
///
/// Share the server's event loops: a fetch made inside ``withPreferredEventLoop(_:_:)`` runs on that loop, so
/// the upstream connection lives on the same thread as the client's and the server can move the body's
/// buffers (``UpstreamExchange/nextPart()``) without copying them or hopping threads.
public final class HTTPClientFetcher: NetworkFetcher {
    public let client: HTTPClient
    private let group: any EventLoopGroup

    @TaskLocal static var preferredEventLoop: (any EventLoop)?

    /// - Parameters:
    ///   - eventLoopGroup: the loops to run on (the server passes its own).
    ///   - connectTimeout: for every connection the client opens.
    ///   - connectionsPerHost: kept open per upstream host. A server forwards requests from many client
    ///     connections at once; a small pool would open and close a connection per request beyond it.
    public init(eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, connectTimeout: Duration = .seconds(10), connectionsPerHost: Int = 256) {
        group = eventLoopGroup
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: TimeAmount(connectTimeout), read: nil),
            connectionPool: .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: connectionsPerHost),
            decompression: .disabled)
        configuration.httpVersion = .http1Only
        // A refused or unreachable upstream is answered at once (502), as a proxy should, instead of the client
        // retrying with backoff until the connect timeout while the page waits.
        configuration.connectionPool.retryConnectionEstablishment = false
        client = HTTPClient(eventLoopGroupProvider: .shared(eventLoopGroup), configuration: configuration)
    }

    /// Closes every upstream connection. Call once, when nothing fetches any more.
    public func shutdown() async throws {
        try await client.shutdown()
    }

    /// Runs `body` so that fetches made in it run on `eventLoop`.
    public static func withPreferredEventLoop<T>(_ eventLoop: any EventLoop, _ body: () async throws -> T) async rethrows -> T {
        try await $preferredEventLoop.withValue(eventLoop, operation: body)
    }

    public func fetch(_ request: ResourceRequest, timeouts: FetchTimeouts) async throws -> ResourceResponse {
        let loop = Self.preferredEventLoop ?? group.next()
        let prepared = try Self.prepare(request)
        let exchange = UpstreamExchange(eventLoop: loop, url: request.url, timeouts: timeouts)
        let client = self.client
        loop.execute { exchange.start(prepared, on: client) }
        return try await withTaskCancellationHandler {
            let head = try await exchange.head.get()
            return Self.response(head, exchange: exchange, method: request.method)
        } onCancel: {
            exchange.cancel()
        }
    }

    /// The request as AsyncHTTPClient takes it: the fields in their order, `Host` first.
    static func prepare(_ request: ResourceRequest) throws -> HTTPClient.Request {
        guard let url = RequestURL(request.url), url.scheme == "http" || url.scheme == "https" else {
            throw FetchError.unsupportedURL(request.url)
        }
        var headers = NIOHTTP1.HTTPHeaders()
        headers.reserveCapacity(request.headers.count + 2)
        let defaultPort = url.scheme == "https" ? 443 : 80
        headers.add(name: "Host", value: url.port.map { $0 == defaultPort ? url.host : "\(url.host):\($0)" } ?? url.host)
        for field in request.headers where !SatchelCore.HTTPHeaders.equalNames(field.name, "Host") {
            headers.add(name: field.name, value: field.value)
        }
        let method = HTTPMethod(rawValue: request.method.uppercased())
        let body = request.body.flatMap { $0.isEmpty && (method == .GET || method == .HEAD) ? nil : HTTPClient.Body.bytes($0) }
        do {
            return try HTTPClient.Request(url: request.url, method: method, headers: headers, body: body)
        } catch {
            throw FetchError.unsupportedURL(request.url)
        }
    }

    /// The upstream's head as the engine's response: hop-by-hop fields removed, everything else as received.
    static func response(_ head: HTTPResponseHead, exchange: UpstreamExchange, method: String) -> ResourceResponse {
        var headers = SatchelCore.HTTPHeaders(capacity: head.headers.count)
        for (name, value) in head.headers { headers.add(name, value) }
        headers = HopByHop.removing(from: headers)
        let status = Int(head.status.code)
        let bodiless = method.uppercased() == "HEAD" || status < 200 || status == 204 || status == 304
        let body: ResponseBody = bodiless ? .empty : .stream(BodyStream(reader: exchange, source: exchange))
        return ResourceResponse(status: status, headers: headers, body: body)
    }
}
