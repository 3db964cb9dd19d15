import NIOCore
import NIOHTTP1
import NIOSSL
import NIOTLS
import SatchelHTTP

/// One HTTP/1.1 connection to an upstream origin, after NIO's request encoder and response decoder. It carries
/// one exchange at a time and goes back to its pool between them. It reads its socket only when asked
/// (`autoRead` is off): while an exchange runs, only when the exchange has no part waiting for its consumer;
/// while idle, always, so that an origin closing an idle connection is noticed at once and the connection
/// leaves the pool instead of failing the next request.
///
/// Every method runs on the channel's event loop.
final class UpstreamConnection: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    enum State {
        /// In the pool, since the instant given.
        case idle(since: NIODeadline)
        /// Carrying an exchange. `answered`: a byte of the response has arrived; `keepAlive`: the response allows
        /// reuse (known from its head).
        case busy(UpstreamExchange, answered: Bool, keepAlive: Bool)
        /// The response ended and allows reuse; parked once the socket read that brought its end is decoded to
        /// the last byte. Bytes behind the end (a body sent to a HEAD, more than the Content-Length said) then
        /// fail the decoder and close the connection, instead of being read as the answer to the next request,
        /// which the exchange's consumer may send from the end's own call stack (a pipelining client).
        case ending
        case closed
    }

    let origin: UpstreamOrigin
    private(set) var state = State.idle(since: .now())
    /// Whether the connection has carried an exchange before: only a reused connection may turn out stale.
    private(set) var reused = false
    private var context: ChannelHandlerContext?
    private weak var pool: UpstreamConnectionPool?
    /// https before its handshake completed: NIOSSL holds what is written meanwhile in its own buffer, where NIO's
    /// pending writes do not count it, and on completion decodes the data that came with the handshake before it
    /// writes what it held. So a request sent then is followed with a write promise (``unconfirmedWrite``).
    private var handshaking: Bool
    /// A request written during the handshake whose write has not completed: the connection cannot be reused yet.
    private var unconfirmedWrite = false

    init(origin: UpstreamOrigin, pool: UpstreamConnectionPool) {
        self.origin = origin
        self.pool = pool
        handshaking = origin.tls
    }

    var isIdle: Bool {
        if case .idle = state { return true }
        return false
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    // MARK: The exchange's side

    /// Sends `request` for `exchange`: head, body and end in one flush, then reads for the answer.
    func send(_ request: UpstreamRequest, for exchange: UpstreamExchange) {
        guard let context, case .idle = state else {
            return exchange.connectionLost(ChannelError.ioOnClosedChannel, beforeAnswer: true, reused: reused)
        }
        state = .busy(exchange, answered: false, keepAlive: false)
        context.write(wrapOutboundOut(.head(request.head)), promise: nil)
        if let body = request.body { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
        if handshaking {
            unconfirmedWrite = true
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.whenSuccess { [self] in unconfirmedWrite = false }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: written)
        } else {
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
        context.read()
    }

    /// The exchange's consumer took every waiting part: read the socket again.
    func readMore() {
        context?.read()
    }

    /// The exchange ended before its response did (cancelled, timed out): the rest of the response would still
    /// arrive on this connection, so it cannot be reused.
    func abandon(_ exchange: UpstreamExchange) {
        guard case .busy(let current, _, _) = state, current === exchange else { return }
        state = .closed
        context?.close(promise: nil)
    }

    /// Closes an idle connection (the pool evicting it, or shutting down).
    func close() {
        guard case .idle = state else { return }
        state = .closed
        context?.close(promise: nil)
    }

    // MARK: The channel's side

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .busy(let exchange, _, var keepAlive) = state else {
            // Bytes from an idle origin: nothing was asked, so nothing after this can be trusted.
            if case .idle = state { pool?.remove(self) }
            state = .closed
            context.close(promise: nil)
            return
        }
        switch unwrapInboundIn(data) {
        case .head(let head) where head.status == .switchingProtocols:
            // Never asked for (Upgrade is hop-by-hop, so no request carries it): the connection now speaks
            // something else, and NIO's decoder has stopped parsing it.
            state = .closed
            context.close(promise: nil)
            exchange.connectionLost(FetchError.badResponse("\(exchange.url) answered 101 Switching Protocols, an upgrade it was not asked for"), beforeAnswer: false, reused: reused)
        case .head(let head):
            keepAlive = head.isKeepAlive
            state = .busy(exchange, answered: true, keepAlive: keepAlive)
            exchange.receivedHead(head)
        case .body(let part):
            exchange.receivedPart(part)
        case .end:
            // Reused only when the origin said it may be and the whole request went out (an origin may answer
            // early, say with a 413, before reading the rest of an upload). Asked of the channel now rather than
            // followed with a write promise (a promise and two callbacks per request otherwise), except for a
            // request written during a TLS handshake, which NIO's pending writes do not see.
            if keepAlive && context.channel.isActive && !unconfirmedWrite && Self.requestWritten(context.channel) {
                state = .ending
            } else {
                state = .closed
                context.close(promise: nil)
            }
            exchange.finished()
        }
    }

    /// Whether every byte written to `channel` has gone to the socket (NIO's pending writes are empty).
    static func requestWritten(_ channel: any Channel) -> Bool {
        (try? channel.syncOptions?.getOption(.bufferedWritableBytes)) == 0
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if case .ending = state {
            state = .idle(since: .now())
            reused = true
            pool?.park(self)
            context.read()
            return
        }
        guard case .busy(let exchange, _, _) = state else { return }
        // The exchange's consumer may run from here (and cancel, which closes this connection).
        exchange.readCompleted()
        if case .busy(let current, _, _) = state, current === exchange, exchange.wantsRead { context.read() }
    }

    func channelInactive(context: ChannelHandlerContext) {
        let previous = state
        state = .closed
        switch previous {
        case .busy(let exchange, let answered, _):
            exchange.connectionLost(ChannelError.eof, beforeAnswer: !answered, reused: reused)
        case .idle:
            pool?.remove(self)
        case .ending, .closed:
            break
        }
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event { handshaking = false }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if case NIOSSLError.uncleanShutdown = error {
            // The origin closed without TLS's close_notify, as many do. Not an error in itself: the close that
            // follows ends a body delimited by the close, and fails one that was cut short (`channelInactive`).
            return
        }
        let previous = state
        state = .closed
        if case .busy(let exchange, let answered, _) = previous {
            exchange.connectionLost(error, beforeAnswer: !answered, reused: reused)
        } else if case .idle = previous {
            pool?.remove(self)
        }
        context.close(promise: nil)
    }
}
