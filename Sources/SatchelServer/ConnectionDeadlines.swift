import NIOCore

/// The two deadlines of a connection, checked by one repeating task (every quarter of the shorter timeout):
/// - slow requests (slowloris): from the first byte of a request, the whole request must arrive within the
///   read timeout, or the connection gets a 408 and is closed; this handler sits in front of the HTTP decoder,
///   so it sees bytes before any head is complete;
/// - idle connections: no request for the idle timeout; the connection handler then closes it once nothing is
///   in flight.
///
/// One check per connection replaces NIO's `IdleStateHandler` and a timer scheduled and cancelled per request:
/// on a keep-alive connection serving tens of thousands of small files a second both were measurable, and one
/// handler less is one pipeline step less for every read. A deadline thus fires within 1 to 1.25 timeouts.
final class ConnectionDeadlines: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Fired through the pipeline when the connection has been idle for the idle timeout.
    struct IdleEvent: Sendable {}

    private let readTimeout: TimeAmount
    private let idleTimeout: TimeAmount
    private var check: RepeatedTask?
    /// When the first byte of the request being received arrived; nil between requests.
    private var requestStarted: NIODeadline?
    private var lastRequestEnded = NIODeadline.now()

    init(readTimeout: TimeAmount, idleTimeout: TimeAmount) {
        self.readTimeout = readTimeout
        self.idleTimeout = idleTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { startChecking(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        startChecking(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if requestStarted == nil { requestStarted = .now() }
        context.fireChannelRead(data)
    }

    /// The connection handler calls this when a whole request has arrived (directly: an event through the
    /// pipeline per request cost more than the check it feeds).
    func requestReceived() {
        requestStarted = nil
        lastRequestEnded = .now()
    }

    private func startChecking(_ context: ChannelHandlerContext) {
        guard check == nil else { return }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let interval = TimeAmount.nanoseconds(max(1_000_000, min(readTimeout.nanoseconds, idleTimeout.nanoseconds) / 4))
        check = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { task in
            let (deadlines, context) = loopBound.value
            let now = NIODeadline.now()
            if let started = deadlines.requestStarted {
                guard now - started >= deadlines.readTimeout else { return }
                task.cancel()
                deadlines.check = nil
                deadlines.refuse(context)
            } else if now - deadlines.lastRequestEnded >= deadlines.idleTimeout {
                deadlines.lastRequestEnded = now
                context.fireUserInboundEventTriggered(IdleEvent())
            }
        }
    }

    private func refuse(_ context: ChannelHandlerContext) {
        let seconds = readTimeout.nanoseconds / 1_000_000_000
        let body = "request not received within \(seconds) s\n"
        let text = "HTTP/1.1 408 Request Timeout\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\nX-Satchel-Error: request not received in time\r\n\r\n" + body
        let channel = context.channel
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: text))).whenComplete { _ in channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        check?.cancel()
        check = nil
    }
}
