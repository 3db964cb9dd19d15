import Foundation
import NIOCore
import NIOHTTP1
import SatchelCore
import SatchelEngine

/// One HTTP/1.1 connection, after NIO's request decoder. It collects a request within the limits, answers
/// package hits right here on the event loop and everything else from a task, and writes the bytes itself
/// (``ResponseEncoding``): a head and a small body as one buffer, files as a sendfile region, streams chunk by
/// chunk after each previous write completed (a slow client slows the producer instead of filling memory).
///
/// Pipelining and backpressure, which NIO's `HTTPServerPipelineHandler` used to provide: while a response is
/// being produced, request parts that arrive are queued and the channel's `read()` is held back; they are
/// answered in order once the response is written. Responses answered in a read burst are flushed once, at
/// `channelReadComplete`.
final class HTTPConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let responder: ServerResponder
    private let limits: ServerConfiguration.Limits
    private let connect: ConnectTunnel
    private let deadlines: ConnectionDeadlines?
    private let cache: EncodedResponseCache?
    private var head: HTTPRequestHead?
    private var body: ByteBuffer?
    private var bodyTooLarge = false

    /// A response is being produced or written: new parts wait in ``queued`` and reads are held back.
    private var busy = false
    private var queued: [HTTPServerRequestPart] = []
    private var draining = false
    private var readHeldBack = false
    /// Responses written without a flush, flushed at the end of the read burst.
    private var needsFlush = false
    /// Between `channelRead` and `channelReadComplete`: responses written now are flushed together at the end.
    private var inReadBurst = false
    /// Set by ``ServerShutdownEvent`` or a half-closed input: finish what is in flight, take nothing new.
    private var closing = false
    private var context: ChannelHandlerContext?

    init(
        responder: ServerResponder, limits: ServerConfiguration.Limits, connect: ConnectTunnel, deadlines: ConnectionDeadlines?,
        cache: EncodedResponseCache?
    ) {
        self.responder = responder
        self.limits = limits
        self.connect = connect
        self.deadlines = deadlines
        self.cache = cache
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        // A CONNECT tunnel replaces this handler: a read held back while it was set up must happen now.
        if readHeldBack {
            readHeldBack = false
            context.read()
        }
    }

    // MARK: Reading requests

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        inReadBurst = true
        let part = unwrapInboundIn(data)
        if busy || !queued.isEmpty {
            queued.append(part)
            return
        }
        receive(part, context: context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        inReadBurst = false
        if needsFlush {
            needsFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    /// Outbound `read()`: held back while a response is pending, so a pipelining client cannot make the
    /// server buffer unboundedly.
    func read(context: ChannelHandlerContext) {
        if busy {
            readHeldBack = true
        } else {
            context.read()
        }
    }

    private func receive(_ part: HTTPServerRequestPart, context: ChannelHandlerContext) {
        switch part {
        case .head(let requestHead):
            head = requestHead
            body = nil
            bodyTooLarge = false
            if requestHead.method == .CONNECT {
                deadlines?.requestReceived()
                busy = true
                connect.handle(context: context, head: requestHead, handler: self)
                return
            }
            if let length = requestHead.headers.first(name: "Content-Length").flatMap(Int.init), length > limits.maxBodyBytes {
                bodyTooLarge = true
            }
        case .body(var chunk):
            guard !bodyTooLarge, head?.method != .CONNECT else { return }
            if (body?.readableBytes ?? 0) + chunk.readableBytes > limits.maxBodyBytes {
                bodyTooLarge = true
                body = nil
                return
            }
            if body == nil { body = chunk } else { body!.writeBuffer(&chunk) }
        case .end:
            deadlines?.requestReceived()
            // A CONNECT was answered by the tunnel when its head arrived.
            guard let head, head.method != .CONNECT else { return }
            self.head = nil
            if bodyTooLarge {
                refuse(context, status: .payloadTooLarge, message: "request body over \(limits.maxBodyBytes) bytes")
                return
            }
            dispatch(context: context, head: head)
        }
    }

    private func dispatch(context: ChannelHandlerContext, head: HTTPRequestHead) {
        busy = true
        // The same plain GET as before, with nothing changed since: the same bytes again.
        let reuseKey = closing ? nil : cache?.key(for: head)
        let generation = reuseKey == nil ? 0 : responder.pipeline.engine.generation
        if let reuseKey, let entry = cache?.lookup(reuseKey, generation: generation) {
            body = nil
            responder.recordReused(method: "GET", target: reuseKey.target, hostHeader: reuseKey.host, status: entry.status, outcome: entry.outcome)
            finish(context, keepAlive: true, flush: false, last: entry.bytes)
            return
        }
        var request = PendingRequest(head: head, body: body)
        body = nil
        if closing { request.keepAlive = false }
        let isHead = request.method == "HEAD"
        // Package hits are answered right here on the event loop; only misses (the network) need a task.
        if let response = responder.respondFromPackages(method: request.method, target: request.target, headers: request.headers, body: request.body) {
            if let reuseKey, response.status == 200, case .bytes(let bytes) = response.body, bytes.count <= EncodedResponseCache.maxBodyBytes {
                var buffer = context.channel.allocator.buffer(capacity: 512 + bytes.count)
                _ = ResponseEncoding.writeHead(response, isHead: false, version: request.version, keepAlive: true, into: &buffer)
                buffer.writeBytes(bytes)
                // Stored under the generation read before answering: an activation in between makes it stale, never wrong.
                cache?.store(reuseKey, EncodedResponseCache.Entry(generation: generation, bytes: buffer, status: 200, outcome: ServerResponder.packageOutcome(200)))
                finish(context, keepAlive: true, flush: false, last: buffer)
                return
            }
            write(response, isHead: isHead, version: request.version, keepAlive: request.keepAlive, flush: false)
            return
        }
        Self.answerInTask(request, responder: responder, handler: NIOLoopBound(self, eventLoop: context.eventLoop), loop: context.eventLoop)
    }

    private static func answerInTask(
        _ request: PendingRequest, responder: ServerResponder, handler: NIOLoopBound<HTTPConnectionHandler>, loop: any EventLoop
    ) {
        Task {
            let response = await responder.respond(method: request.method, target: request.target, headers: request.headers, body: request.body)
            let isHead = request.method == "HEAD"
            if !isHead, case .stream(let stream) = response.body {
                await writeStream(response, stream, handler: handler, loop: loop, version: request.version, keepAlive: request.keepAlive)
            } else {
                loop.execute { handler.value.write(response, isHead: isHead, version: request.version, keepAlive: request.keepAlive, flush: true) }
            }
        }
    }

    // MARK: Writing responses

    /// Writes a response whose body is at hand (bytes, a file, or nothing), then finishes it.
    private func write(_ response: ResourceResponse, isHead: Bool, version: HTTPVersion, keepAlive: Bool, flush: Bool) {
        guard let context else { return }
        var buffer = context.channel.allocator.buffer(capacity: 512 + (response.body.knownLength.map { Int(min($0, 64 << 10)) } ?? 0))
        let (framing, keepOpen) = ResponseEncoding.writeHead(response, isHead: isHead, version: version, keepAlive: keepAlive, into: &buffer)
        if framing != .none {
            switch response.body {
            case .bytes(let bytes): buffer.writeBytes(bytes)
            case .file(let region):
                context.write(wrapOutboundOut(buffer), promise: nil)
                let descriptor = dup(region.descriptor)
                guard descriptor >= 0 else { return abort() }
                let handle = NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: descriptor)
                let fileRegion = NIOCore.FileRegion(fileHandle: handle, readerIndex: Int(region.offset), endIndex: Int(region.offset + region.length))
                let done = context.eventLoop.makePromise(of: Void.self)
                done.futureResult.whenComplete { _ in try? handle.close() }
                context.write(NIOAny(IOData.fileRegion(fileRegion)), promise: done)
                finish(context, keepAlive: keepOpen, flush: flush, last: nil)
                return
            case .empty, .stream: break
            }
        }
        finish(context, keepAlive: keepOpen, flush: flush, last: buffer)
    }

    /// Streams wait for each chunk's write before taking the next.
    private static func writeStream(
        _ response: ResourceResponse, _ stream: AsyncThrowingStream<[UInt8], any Error>, handler: NIOLoopBound<HTTPConnectionHandler>,
        loop: any EventLoop, version: HTTPVersion, keepAlive: Bool
    ) async {
        do {
            let framing: BodyFraming = try await loop.flatSubmit { () -> EventLoopFuture<BodyFraming> in
                let handler = handler.value
                guard let context = handler.context else { return loop.makeFailedFuture(ChannelError.ioOnClosedChannel) }
                var buffer = context.channel.allocator.buffer(capacity: 512)
                let (framing, keepOpen) = ResponseEncoding.writeHead(response, isHead: false, version: version, keepAlive: keepAlive, into: &buffer)
                handler.streamKeepsOpen = keepOpen
                return context.writeAndFlush(handler.wrapOutboundOut(buffer)).map { framing }
            }.get()
            for try await chunk in stream where !chunk.isEmpty {
                try await loop.flatSubmit { () -> EventLoopFuture<Void> in
                    let handler = handler.value
                    guard let context = handler.context else { return loop.makeFailedFuture(ChannelError.ioOnClosedChannel) }
                    var buffer = context.channel.allocator.buffer(capacity: chunk.count + 16)
                    if framing == .chunked { ResponseEncoding.writeChunk(chunk, into: &buffer) } else { buffer.writeBytes(chunk) }
                    return context.writeAndFlush(handler.wrapOutboundOut(buffer))
                }.get()
            }
            loop.execute {
                let handler = handler.value
                guard let context = handler.context else { return }
                var last: ByteBuffer?
                if framing == .chunked {
                    var buffer = context.channel.allocator.buffer(capacity: 8)
                    buffer.writeStaticString(ResponseEncoding.lastChunk)
                    last = buffer
                }
                handler.finish(context, keepAlive: handler.streamKeepsOpen && framing != .untilClose, flush: true, last: last)
            }
        } catch {
            // The upstream broke mid-body or the client went away: the response cannot be completed.
            loop.execute { handler.value.abort() }
        }
    }

    private var streamKeepsOpen = true

    /// The response's last write: after it the connection takes the next request, or closes. Only a closing
    /// connection needs to know when the write completes; writes complete in order, so that is also when the
    /// whole response has been handed to the socket (closing earlier would discard what is still queued, such
    /// as the rest of a sendfile region).
    private func finish(_ context: ChannelHandlerContext, keepAlive: Bool, flush: Bool, last: ByteBuffer?) {
        busy = false
        if !keepAlive || closing {
            queued.removeAll()
            closeAfterWrites(context, last: last)
            return
        }
        if let last { context.write(wrapOutboundOut(last), promise: nil) }
        if flush { context.flush() } else { needsFlush = true }
        drainQueue(context)
    }

    /// Writes `last` (or nothing), flushes, and closes once everything written before has completed.
    private func closeAfterWrites(_ context: ChannelHandlerContext, last: ByteBuffer? = nil) {
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(last ?? channel.allocator.buffer(capacity: 0))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    /// Answers requests that arrived while the last response was being produced, then lets reads resume.
    private func drainQueue(_ context: ChannelHandlerContext) {
        guard !draining else { return }
        draining = true
        while !busy, !queued.isEmpty { receive(queued.removeFirst(), context: context) }
        draining = false
        if needsFlush, !inReadBurst {
            needsFlush = false
            context.flush()
        }
        if !busy, readHeldBack {
            readHeldBack = false
            context.read()
        }
    }

    func abort() { context?.close(promise: nil) }

    /// Answers with an error status and closes the connection (the request cannot be trusted any further).
    func refuse(_ context: ChannelHandlerContext, status: HTTPResponseStatus, message: String) {
        guard context.channel.isActive else { return }
        let body = Array((message + "\n").utf8)
        let response = ResourceResponse(
            status: Int(status.code),
            headers: ["Content-Type": "text/plain; charset=utf-8", "Content-Length": String(body.count), "X-Satchel-Error": message],
            body: .bytes(body))
        busy = true
        write(response, isHead: false, version: .http1_1, keepAlive: false, flush: true)
        head = nil
    }

    /// The CONNECT tunnel's answer once the upstream is connected; the caller then replaces the HTTP handlers.
    func writeTunnelEstablished(_ context: ChannelHandlerContext, version: HTTPVersion) -> EventLoopFuture<Void> {
        var buffer = context.channel.allocator.buffer(capacity: 64)
        buffer.writeString("HTTP/\(version.major).\(version.minor) 200 Connection Established\r\n\r\n")
        return context.writeAndFlush(wrapOutboundOut(buffer))
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is ConnectionDeadlines.IdleEvent where !busy && queued.isEmpty:
            closing = true
            closeAfterWrites(context)
        case is ServerShutdownEvent:
            closing = true
            if !busy { closeAfterWrites(context) }
        case ChannelEvent.inputClosed:
            // The client sent its last request: answer what is pending, then close.
            closing = true
            if !busy, queued.isEmpty { closeAfterWrites(context) }
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

/// Sent to every connection when the server shuts down: finish the response in flight, then close.
struct ServerShutdownEvent: Sendable {}

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
