import Foundation
import NIOCore
import NIOHTTP1
import SatchelCore
import SatchelEngine

/// One HTTP/1.1 connection. SwiftNIO's `HTTPServerPipelineHandler` (in front) makes pipelined requests arrive
/// one at a time and holds back reads while a response is pending (backpressure); this handler collects a
/// request within the limits, hands it to the ``ServerResponder`` off the event loop, and writes the answer:
/// bytes, a file region (sendfile), or a stream whose chunks are written one after another.
final class HTTPConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let responder: ServerResponder
    private let limits: ServerConfiguration.Limits
    private let connect: ConnectTunnel
    private var head: HTTPRequestHead?
    private var body: ByteBuffer?
    private var bodyTooLarge = false
    private var inFlight = false

    init(responder: ServerResponder, limits: ServerConfiguration.Limits, connect: ConnectTunnel) {
        self.responder = responder
        self.limits = limits
        self.connect = connect
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let requestHead):
            head = requestHead
            body = nil
            bodyTooLarge = false
            inFlight = true
            if requestHead.method == .CONNECT {
                context.pipeline.fireUserInboundEventTriggered(RequestReceivedEvent())
                connect.handle(context: context, head: requestHead, handler: self)
                return
            }
            if let length = requestHead.headers.first(name: "Content-Length").flatMap(Int.init), length > limits.maxBodyBytes {
                bodyTooLarge = true
            }
        case .body(var chunk):
            guard !bodyTooLarge else { return }
            if (body?.readableBytes ?? 0) + chunk.readableBytes > limits.maxBodyBytes {
                bodyTooLarge = true
                body = nil
                return
            }
            if body == nil { body = chunk } else { body!.writeBuffer(&chunk) }
        case .end:
            context.pipeline.fireUserInboundEventTriggered(RequestReceivedEvent())
            // A CONNECT was answered by the tunnel when its head arrived.
            guard let head, head.method != .CONNECT else { return }
            if bodyTooLarge {
                refuse(context, status: .payloadTooLarge, message: "request body over \(limits.maxBodyBytes) bytes")
                return
            }
            dispatch(context: context, head: head)
        }
    }

    private func dispatch(context: ChannelHandlerContext, head: HTTPRequestHead) {
        var request = PendingRequest(head: head, body: body)
        if closing { request.keepAlive = false }
        let responder = self.responder
        let writer = ResponseWriter(handler: NIOLoopBound(self, eventLoop: context.eventLoop), loop: context.eventLoop)
        // Package hits are answered right here on the event loop; only misses (the network) need a task.
        if let response = responder.respondFromPackages(method: request.method, target: request.target, headers: request.headers, body: request.body) {
            writer.writeNow(response, isHead: request.method == "HEAD", version: request.version, keepAlive: request.keepAlive)
            return
        }
        Task {
            let response = await responder.respond(method: request.method, target: request.target, headers: request.headers, body: request.body)
            await writer.write(response, isHead: request.method == "HEAD", version: request.version, keepAlive: request.keepAlive)
        }
    }

    /// The context this handler runs in; set while it is in a pipeline.
    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    /// Writes on the event loop (called from ``ResponseWriter``).
    fileprivate func writeHead(_ head: HTTPResponseHead, flush: Bool) -> EventLoopFuture<Void>? {
        guard let context else { return nil }
        return flush ? context.writeAndFlush(wrapOutboundOut(.head(head))) : context.write(wrapOutboundOut(.head(head)))
    }

    fileprivate func writeBytes(_ bytes: [UInt8], flush: Bool) -> EventLoopFuture<Void>? {
        guard let context else { return nil }
        let part = wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: bytes))))
        return flush ? context.writeAndFlush(part) : context.write(part)
    }

    fileprivate func writeFile(descriptor: CInt, offset: Int64, length: Int64) {
        guard let context else { return }
        let handle = NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: descriptor)
        let region = NIOCore.FileRegion(fileHandle: handle, readerIndex: Int(offset), endIndex: Int(offset + length))
        context.write(wrapOutboundOut(.body(.fileRegion(region)))).whenComplete { _ in try? handle.close() }
    }

    fileprivate func finish(keepAlive: Bool) {
        guard let context else { return }
        finish(context, keepAlive: keepAlive)
    }

    fileprivate func abort() { context?.close(promise: nil) }

    private func finish(_ context: ChannelHandlerContext, keepAlive: Bool) {
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        // The request counts as in flight until its last byte has been handed to the socket: closing earlier
        // (on shutdown) would discard what is still queued, such as the rest of a sendfile region.
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let channel = context.channel
        done.whenComplete { _ in
            handler.value.inFlight = false
            if !keepAlive || handler.value.closing { channel.close(promise: nil) }
        }
    }

    /// Set by ``ServerShutdownEvent``: finish what is in flight, take nothing new.
    private var closing = false

    /// Answers with an error status and closes the connection (the request cannot be trusted any further).
    func refuse(_ context: ChannelHandlerContext, status: HTTPResponseStatus, message: String) {
        guard context.channel.isActive else { return }
        let body = context.channel.allocator.buffer(string: message + "\n")
        var headers = NIOHTTP1.HTTPHeaders([("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", String(body.readableBytes)), ("Connection", "close")])
        headers.add(name: "X-Satchel-Error", value: message)
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
        inFlight = false
        head = nil
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is IdleStateHandler.IdleStateEvent where !inFlight:
            context.close(promise: nil)
        case is ServerShutdownEvent:
            closing = true
            if !inFlight { context.close(promise: nil) }
        case is RequestReceivedEvent:
            break
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    /// Decoder errors: oversized headers are 431, anything else that is not HTTP is 400.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let parserError = error as? HTTPParserError {
            let tooLarge = parserError == .headerOverflow
            refuse(context, status: tooLarge ? .requestHeaderFieldsTooLarge : .badRequest,
                   message: tooLarge ? "request headers over \(limits.maxHeaderBytes) bytes" : "malformed HTTP request")
        } else {
            context.close(promise: nil)
        }
    }
}

/// Writes a response through its handler on the event loop; streams wait for each chunk's write, so a slow
/// client slows the producer instead of filling memory.
struct ResponseWriter: Sendable {
    let handler: NIOLoopBound<HTTPConnectionHandler>
    let loop: any EventLoop

    /// For responses whose body is already at hand (bytes or a file), from the event loop itself.
    func writeNow(_ response: ResourceResponse, isHead: Bool, version: HTTPVersion, keepAlive: Bool) {
        let head = Self.head(response, version: version, keepAlive: keepAlive)
        let handler = self.handler.value
        let body = isHead ? ResponseBody.empty : response.body
        _ = handler.writeHead(head, flush: false)
        switch body {
        case .bytes(let bytes) where !bytes.isEmpty: _ = handler.writeBytes(bytes, flush: false)
        case .file(let region):
            let descriptor = dup(region.descriptor)
            guard descriptor >= 0 else { return handler.abort() }
            handler.writeFile(descriptor: descriptor, offset: region.offset, length: region.length)
        case .stream:
            // Package hits never stream; keep the contract anyway by finishing through the async path.
            let copy = self
            Task { await copy.write(response, isHead: isHead, version: version, keepAlive: keepAlive) }
            return
        default: break
        }
        handler.finish(keepAlive: keepAlive)
    }

    static func head(_ response: ResourceResponse, version: HTTPVersion, keepAlive: Bool) -> HTTPResponseHead {
        var fields = NIOHTTP1.HTTPHeaders()
        for field in response.headers { fields.add(name: field.name, value: field.value) }
        if !keepAlive { fields.replaceOrAdd(name: "Connection", value: "close") }
        return HTTPResponseHead(version: version, status: HTTPResponseStatus(statusCode: response.status), headers: fields)
    }

    func write(_ response: ResourceResponse, isHead: Bool, version: HTTPVersion, keepAlive: Bool) async {
        var fields = NIOHTTP1.HTTPHeaders()
        for field in response.headers { fields.add(name: field.name, value: field.value) }
        if !keepAlive { fields.replaceOrAdd(name: "Connection", value: "close") }
        let head = HTTPResponseHead(version: version, status: HTTPResponseStatus(statusCode: response.status), headers: fields)
        let body = isHead ? ResponseBody.empty : response.body
        let handler = self.handler
        switch body {
        case .empty, .bytes:
            let bytes: [UInt8] = if case .bytes(let all) = body { all } else { [] }
            loop.execute {
                _ = handler.value.writeHead(head, flush: false)
                if !bytes.isEmpty { _ = handler.value.writeBytes(bytes, flush: false) }
                handler.value.finish(keepAlive: keepAlive)
            }
        case .file(let region):
            // The server's own descriptor: NIO closes it after sendfile, the region keeps its own.
            let descriptor = dup(region.descriptor)
            let offset = region.offset
            let length = region.length
            loop.execute {
                _ = handler.value.writeHead(head, flush: false)
                guard descriptor >= 0 else { return handler.value.abort() }
                handler.value.writeFile(descriptor: descriptor, offset: offset, length: length)
                handler.value.finish(keepAlive: keepAlive)
            }
        case .stream(let stream):
            do {
                try await loop.flatSubmit { handler.value.writeHead(head, flush: true) ?? loop.makeFailedFuture(ChannelError.ioOnClosedChannel) }.get()
                for try await chunk in stream {
                    try await loop.flatSubmit { handler.value.writeBytes(chunk, flush: true) ?? loop.makeFailedFuture(ChannelError.ioOnClosedChannel) }.get()
                }
                loop.execute { handler.value.finish(keepAlive: keepAlive) }
            } catch {
                // The upstream broke mid-body or the client went away: the response cannot be completed.
                loop.execute { handler.value.abort() }
            }
        }
    }
}

/// Sent to every connection when the server shuts down: finish the response in flight, then close.
struct ServerShutdownEvent: Sendable {}

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

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is RequestReceivedEvent { requestStarted = nil }
        context.fireUserInboundEventTriggered(event)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        check?.cancel()
        check = nil
    }
}

/// Fired through the pipeline when a whole request (head and body) has arrived.
struct RequestReceivedEvent: Sendable {}

/// A request copied out of NIO's types, so it can cross into a task.
struct PendingRequest: Sendable {
    let method: String
    let target: String
    let headers: SatchelCore.HTTPHeaders
    let body: [UInt8]?
    let version: HTTPVersion
    var keepAlive: Bool

    init(head: HTTPRequestHead, body: ByteBuffer?) {
        method = head.method.rawValue
        target = head.uri
        var headers = SatchelCore.HTTPHeaders()
        for (name, value) in head.headers { headers.add(name, value) }
        self.headers = headers
        self.body = body.map { Array($0.readableBytesView) }
        version = head.version
        keepAlive = head.isKeepAlive
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
