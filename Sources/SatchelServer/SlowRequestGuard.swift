import NIOCore

/// Guards against clients that send a request too slowly (slowloris): from the first byte of a request, the
/// whole request must arrive within the read timeout, or the connection gets a 408 and is closed. Sits in
/// front of the HTTP decoder, so it sees bytes before any head is complete.
///
/// One repeating check per connection (every quarter of the timeout) looks at when the current request
/// started, rather than a timer scheduled and cancelled per request: on a keep-alive connection serving tens
/// of thousands of small files a second, that per-request timer was measurable. A slow request is thus
/// refused between 1 and 1.25 timeouts after its first byte.
final class SlowRequestGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let timeout: TimeAmount
    private var check: RepeatedTask?
    /// When the first byte of the request being received arrived; nil between requests.
    private var requestStarted: NIODeadline?

    init(timeout: TimeAmount) { self.timeout = timeout }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if requestStarted == nil {
            requestStarted = .now()
            if check == nil { startChecking(context) }
        }
        context.fireChannelRead(data)
    }

    private func startChecking(_ context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let interval = TimeAmount.nanoseconds(max(1_000_000, timeout.nanoseconds / 4))
        check = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { task in
            let (guardHandler, context) = loopBound.value
            guard let started = guardHandler.requestStarted, NIODeadline.now() - started >= guardHandler.timeout else { return }
            task.cancel()
            guardHandler.check = nil
            guardHandler.refuse(context)
        }
    }

    private func refuse(_ context: ChannelHandlerContext) {
        let seconds = timeout.nanoseconds / 1_000_000_000
        let body = "request not received within \(seconds) s\n"
        let text = "HTTP/1.1 408 Request Timeout\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\nX-Satchel-Error: request not received in time\r\n\r\n" + body
        let channel = context.channel
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: text))).whenComplete { _ in channel.close(promise: nil) }
    }

    /// The connection handler calls this when a whole request has arrived (directly: an event through the
    /// pipeline per request cost more than the check it feeds).
    func requestReceived() { requestStarted = nil }

    func handlerRemoved(context: ChannelHandlerContext) {
        check?.cancel()
        check = nil
    }
}
