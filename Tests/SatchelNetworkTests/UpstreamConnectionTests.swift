import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOSSL
import NIOTLS
import SatchelCore
import SatchelHTTP
@testable import SatchelNetwork
import Testing

/// Stands in for `NIOSSLHandler` during a handshake: writes made before it completes are held, not passed on,
/// and the completion runs in NIOSSL's order (`completeHandshake`): the event, then the application data that
/// came with the handshake's last flight, then the held writes.
final class HandshakeStandIn: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var held: [(NIOAny, EventLoopPromise<Void>?)] = []
    private var handshaking = true
    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if handshaking { held.append((data, promise)) } else { context.write(data, promise: promise) }
    }

    func flush(context: ChannelHandlerContext) {
        if !handshaking { context.flush() }
    }

    func completeHandshake(deliveringFirst data: ByteBuffer) {
        guard let context else { return }
        handshaking = false
        context.fireUserInboundEventTriggered(TLSUserEvent.handshakeCompleted(negotiatedProtocol: nil))
        context.fireChannelRead(wrapInboundOut(data))
        context.fireChannelReadComplete()
        for (data, promise) in held { context.write(data, promise: promise) }
        held = []
        context.flush()
    }
}

@Suite("UpstreamConnection on an embedded channel")
struct UpstreamConnectionTests {
    /// An https connection as the pool makes one, with its handshake still running: the stand-in in NIOSSL's place,
    /// NIO's HTTP client codecs, the connection; connected, nothing written yet.
    static func httpsConnection() throws -> (EmbeddedChannel, UpstreamConnectionPool, UpstreamRequest, UpstreamConnection, HandshakeStandIn) {
        let channel = EmbeddedChannel()
        let pool = UpstreamConnectionPool(eventLoop: channel.embeddedEventLoop, settings: .init(
            connectTimeout: .seconds(1), idleTimeout: .seconds(60), maxIdlePerOrigin: 4,
            tls: .success(try NIOSSLContext(configuration: .makeClientConfiguration())), makeResolver: nil))
        let request = try UpstreamRequest(ResourceRequest(url: "https://origin.example/first"), allocator: channel.allocator)
        let connection = UpstreamConnection(origin: request.origin, pool: pool)
        let standIn = HandshakeStandIn()
        try channel.pipeline.syncOperations.addHandler(standIn)
        try channel.pipeline.syncOperations.addHTTPClientHandlers()
        try channel.pipeline.syncOperations.addHandler(connection)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        return (channel, pool, request, connection, standIn)
    }
    @Test("an answer that came with the TLS handshake, before the request went out, does not put the connection back in the pool")
    func answerBeforeTheRequestWentOut() throws {
        let (channel, pool, request, connection, standIn) = try Self.httpsConnection()
        let loop = channel.embeddedEventLoop

        var status: Int?
        let exchange = UpstreamExchange(eventLoop: loop, request: request, pool: pool, timeouts: FetchTimeouts()) { result in
            status = try? result.get().status
        }
        pool.park(connection)
        exchange.start()
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil, "the request waits for the handshake")

        // The origin answered at once (0.5-RTT data, or a 400 it sends without reading): the answer is decoded
        // before the held request is written.
        standIn.completeHandshake(deliveringFirst: ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"))
        #expect(status == 200)
        var sent = ByteBuffer()
        while var part = try channel.readOutbound(as: ByteBuffer.self) { sent.writeBuffer(&part) }
        #expect(String(buffer: sent).hasPrefix("GET /first HTTP/1.1\r\n"), "the request went out after the answer")
        // The origin's answer to that request is still to come on this connection: it must not carry another.
        #expect(pool.takeIdle(request.origin) == nil, "the connection was parked with an answer still owed")
        #expect(!channel.isActive, "the connection is closed")
        _ = try? channel.finish()
    }

    @Test("a request written after the handshake, answered with keep-alive, puts the connection back in the pool")
    func answerAfterTheRequestWentOut() throws {
        let (channel, pool, request, connection, standIn) = try Self.httpsConnection()
        let loop = channel.embeddedEventLoop

        // The first request goes out with the handshake and is answered after it: reused.
        var statuses: [Int] = []
        let first = UpstreamExchange(eventLoop: loop, request: request, pool: pool, timeouts: FetchTimeouts()) { result in
            if let status = try? result.get().status { statuses.append(status) }
        }
        pool.park(connection)
        first.start()
        standIn.completeHandshake(deliveringFirst: ByteBuffer())
        while try channel.readOutbound(as: ByteBuffer.self) != nil {}
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"))
        #expect(statuses == [200])
        #expect(pool.takeIdle(request.origin) === connection, "a request written, then answered: reusable")

        // The second, on the reused connection, is checked through NIO's pending writes: reused again.
        pool.park(connection)
        let second = UpstreamExchange(eventLoop: loop, request: request, pool: pool, timeouts: FetchTimeouts()) { result in
            if let status = try? result.get().status { statuses.append(status) }
        }
        second.start()
        while try channel.readOutbound(as: ByteBuffer.self) != nil {}
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 204 No Content\r\n\r\n"))
        #expect(statuses == [200, 204])
        #expect(pool.takeIdle(request.origin) === connection)
        _ = try? channel.finish()
    }
}
