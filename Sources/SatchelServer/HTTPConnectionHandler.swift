#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NIOHTTP1
import SatchelCore
import SatchelEngine
import SatchelHTTP
import SatchelNetwork

/// One HTTP/1.1 connection, after NIO's request decoder: it feeds what arrives into the
/// ``ConnectionStateMachine`` and carries out the actions it returns. Answers are produced three ways: a repeated
/// plain GET from ``EncodedResponseCache``, a package hit right here on the event loop, anything else (the
/// network, body restoration, `/_satchel/`) from a task. It writes the bytes itself (``ResponseEncoding``): a head
/// and a small body as one buffer, files as a sendfile region, bodies that arrive over time part by part.
///
/// Backpressure on bodies that arrive over time: a body whose producer is an ``EventLoopPartSource`` (a
/// ``NIOFetcher`` response on this loop) is pulled part by part while the client's socket takes it and paused while it does not, so the
/// upstream is read only as fast as the client reads; any other stream is read chunk by chunk, each after the
/// previous write completed. A client that goes away cancels what its answer was waiting on, closing the
/// upstream request.
final class HTTPConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler, LoopAnswerReceiver {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let responder: ServerResponder
    private let connect: ConnectTunnel
    private let cache: EncodedResponseCache?
    private var machine: ConnectionStateMachine
    private var context: ChannelHandlerContext?
    /// The connection's event loop, as the loader and the fetcher take it: answers come back on it.
    private var executor: EventLoopExecutor?
    private var deadlineCheck: RepeatedTask?

    /// Responses written without a flush, flushed once at the end of the read burst.
    private var needsFlush = false
    /// Between `channelRead` and `channelReadComplete`.
    private var inReadBurst = false
    /// Taking up queued requests; answers that end meanwhile do not start another round.
    private var draining = false
    /// What the answer in flight waits on, cancelled when the client goes away.
    private var pending: PendingWork?
    /// The request whose answer the responder delivers later (``answerArrived(_:)``), numbered so that an answer
    /// delivered at once, before the responder returns, is told apart from the next request's.
    private var awaited: (serial: Int, isHead: Bool, version: HTTPVersion, keepAlive: Bool)?
    private var answers = 0
    /// The upstream body being forwarded, and whether it waits for the client's socket to become writable.
    private var forwarding: Forwarding?
    private var pausedUpstream = false

    private struct Forwarding {
        let source: any EventLoopPartSource
        let framing: BodyFraming
        let keepOpen: Bool
    }

    private enum PendingWork {
        case task(Task<Void, Never>)
        /// A load on the loader's fast path (its fetch, or what its strategy does next).
        case load(any FetchHandle)
        case upstream(any EventLoopPartSource)

        func cancel() {
            switch self {
            case .task(let task): task.cancel()
            case .load(let handle): handle.cancel()
            case .upstream(let source): source.cancel()
            }
        }
    }

    init(responder: ServerResponder, limits: ServerConfiguration.Limits, connect: ConnectTunnel, cache: EncodedResponseCache?) {
        self.responder = responder
        self.connect = connect
        self.cache = cache
        machine = ConnectionStateMachine(
            limits: .init(maxBodyBytes: limits.maxBodyBytes, readTimeout: TimeAmount(limits.readTimeout), idleTimeout: TimeAmount(limits.idleTimeout)),
            now: .now())
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        executor = EventLoopExecutor(context.eventLoop)
        if context.channel.isActive { startDeadlineCheck(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        deadlineCheck?.cancel()
        deadlineCheck = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        startDeadlineCheck(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        machine.closed()
        pending?.cancel()
        pending = nil
        forwarding = nil
        deadlineCheck?.cancel()
        deadlineCheck = nil
        context.fireChannelInactive()
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        inReadBurst = true
        let inbound: ConnectionStateMachine.Inbound
        switch unwrapInboundIn(data) {
        case .head(let head): inbound = .head(head)
        case .body(let chunk): inbound = .body(chunk)
        case .end: inbound = .end
        }
        perform(machine.received(inbound, now: .now()), context: context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        inReadBurst = false
        if needsFlush {
            needsFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    /// Outbound `read()`: held back while an answer is in flight.
    func read(context: ChannelHandlerContext) {
        if machine.readRequested() { context.read() }
    }

    /// Called by ``RequestBytesObserver`` (in front of the decoder) for every read: the request clock starts at
    /// a request's first byte, before its head is complete.
    func bytesArrived() {
        machine.bytesArrived(now: .now())
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case ChannelEvent.inputClosed:
            perform(machine.received(.inputClosed, now: .now()), context: context)
        case is ServerShutdownEvent:
            perform(machine.shutdownRequested(), context: context)
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    /// Decoder errors are answered in order (431 for oversized headers, 400 otherwise); any other error closes.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let parserError = error as? HTTPParserError {
            perform(machine.received(.parseError(parserError), now: .now()), context: context)
        } else {
            context.close(promise: nil)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, pausedUpstream {
            pausedUpstream = false
            pumpUpstream(context)
        }
        context.fireChannelWritabilityChanged()
    }

    private func startDeadlineCheck(_ context: ChannelHandlerContext) {
        guard deadlineCheck == nil else { return }
        let limits = machine.limits
        let interval = TimeAmount.nanoseconds(max(1_000_000, min(limits.readTimeout.nanoseconds, limits.idleTimeout.nanoseconds) / 4))
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        deadlineCheck = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            let handler = handler.value
            guard let context = handler.context else { return }
            handler.perform(handler.machine.deadlineCheck(now: .now()), context: context)
        }
    }

    // MARK: Carrying out the state machine's actions

    private func perform(_ action: ConnectionStateMachine.Action, context: ChannelHandlerContext) {
        switch action {
        case .none:
            break
        case .answer(let head, let body, let keepAlive):
            answer(head, body: body, keepAlive: keepAlive, context: context)
        case .refuse(let refusal):
            refuse(refusal, context: context)
        case .openTunnel(let head):
            connect.open(head: head, handler: self, context: context)
        case .close:
            closeAfterWrites(context)
        }
    }

    /// The answer's last write was issued: close, or take up what was queued and read again.
    private func answerEnded(keepOpen: Bool, context: ChannelHandlerContext) {
        pending = nil
        switch machine.answerEnded(keepOpen: keepOpen, now: .now()) {
        case .close:
            closeAfterWrites(context)
        case .continueWithQueue:
            guard !draining else { return }
            draining = true
            while let action = machine.nextQueued(now: .now()) { perform(action, context: context) }
            draining = false
            if needsFlush, !inReadBurst {
                needsFlush = false
                context.flush()
            }
            if machine.shouldResumeReading() { context.read() }
        }
    }

    // MARK: Answering

    private func answer(_ head: HTTPRequestHead, body: ByteBuffer?, keepAlive: Bool, context: ChannelHandlerContext) {
        let target: RequestTarget
        do { target = try RequestTarget(head: head) } catch {
            respond(.error(HTTPStatus.badRequest, error.description), isHead: false, version: head.version, keepAlive: false, flush: true, context: context)
            return
        }
        let destination = responder.destination(of: target)
        // The same plain GET as before, with nothing changed since: the same bytes again. Keyed on the URL the
        // engine answers for, not on any header.
        let reuseKey = keepAlive ? cache?.key(for: head, engineURL: responder.engineURL(destination)) : nil
        let generation = reuseKey == nil ? 0 : responder.loader.engine.generation
        if let reuseKey, let entry = cache?.lookup(reuseKey, generation: generation) {
            if entry.reuse != nil { responder.cache?.countReusedHit() }
            responder.recordReused(target: target, status: entry.status, outcome: entry.outcome)
            finish(keepOpen: true, flush: false, last: entry.bytes, context: context)
            return
        }
        let request = ServerRequest(head: head, target: target, body: body, keepAlive: keepAlive)
        let isHead = head.method == .HEAD
        answers += 1
        let serial = answers
        awaited = (serial, isHead, head.version, keepAlive)
        // Package hits and misses are answered on the event loop; endpoints and published files from a task.
        switch responder.answerOnEventLoop(request, destination: destination, executor: executor ?? EventLoopExecutor(context.eventLoop), receiver: self) {
        case .later(let handle):
            // Unless the answer came already and ended.
            if awaited?.serial == serial { pending = .load(handle) }
        case .now(let response, let fromPackage):
            awaited = nil
            if let reuseKey, fromPackage || response.reuse != nil, response.status == HTTPStatus.ok, case .bytes(let bytes) = response.body,
                bytes.count <= EncodedResponseCache.maxBodyBytes
            {
                var buffer = context.channel.allocator.buffer(capacity: 512 + bytes.count)
                _ = ResponseEncoding.writeHead(response, isHead: false, version: head.version, keepAlive: true, into: &buffer)
                buffer.writeBytes(bytes)
                // Stored under the generation read before answering: an activation in between makes it stale, never wrong.
                // An HTTP cache hit is kept only as long as its stored response says (``AnswerReuse``).
                cache?.store(reuseKey, EncodedResponseCache.Entry(
                    generation: generation, bytes: buffer, status: HTTPStatus.ok, outcome: fromPackage ? .offlineHit : .network,
                    reuse: response.reuse))
                finish(keepOpen: true, flush: false, last: buffer, context: context)
                return
            }
            respond(response, isHead: isHead, version: head.version, keepAlive: keepAlive, flush: false, context: context)
        case nil:
            awaited = nil
            answerInTask(request, destination: destination, isHead: isHead, context: context)
        }
    }

    /// ``LoopAnswerReceiver``: the network's answer (or its fallback) to the awaited request.
    func answerArrived(_ response: ResourceResponse) {
        guard let awaited else { return }
        self.awaited = nil
        guard let context, context.channel.isActive else {
            if case .stream(let stream) = response.body { stream.source?.cancel() }
            return
        }
        respond(response, isHead: awaited.isHead, version: awaited.version, keepAlive: awaited.keepAlive, flush: true, context: context)
    }

    private func answerInTask(_ request: ServerRequest, destination: ServerResponder.Destination, isHead: Bool, context: ChannelHandlerContext) {
        let loop = context.eventLoop
        let handler = NIOLoopBound(self, eventLoop: loop)
        let responder = self.responder
        pending = .task(Task {
            let response = await NIOFetcher.withPreferredEventLoop(loop) { await responder.respond(to: request, destination: destination) }
            loop.execute {
                let handler = handler.value
                guard let context = handler.context, context.channel.isActive else {
                    // The client went away while the answer was produced.
                    if case .stream(let stream) = response.body { stream.source?.cancel() }
                    return
                }
                handler.respond(response, isHead: isHead, version: request.version, keepAlive: request.keepAlive, flush: true, context: context)
            }
        })
    }

    /// Writes a response of any kind, then ends the answer.
    private func respond(_ response: ResourceResponse, isHead: Bool, version: HTTPVersion, keepAlive: Bool, flush: Bool, context: ChannelHandlerContext) {
        var buffer = context.channel.allocator.buffer(capacity: 512 + (response.body.knownLength.map { Int(min($0, 64 << 10)) } ?? 0))
        let (framing, keepOpen) = ResponseEncoding.writeHead(response, isHead: isHead, version: version, keepAlive: keepAlive, into: &buffer)
        guard framing != .none else { return finish(keepOpen: keepOpen, flush: flush, last: buffer, context: context) }
        switch response.body {
        case .empty:
            finish(keepOpen: keepOpen, flush: flush, last: buffer, context: context)
        case .bytes(let bytes):
            buffer.writeBytes(bytes)
            finish(keepOpen: keepOpen, flush: flush, last: buffer, context: context)
        case .file(let region):
            context.write(wrapOutboundOut(buffer), promise: nil)
            let descriptor = dup(region.descriptor)
            guard descriptor >= 0 else { return abort(context) }
            let handle = NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: descriptor)
            let fileRegion = NIOCore.FileRegion(fileHandle: handle, readerIndex: Int(region.offset), endIndex: Int(region.offset + region.length))
            let done = context.eventLoop.makePromise(of: Void.self)
            done.futureResult.whenComplete { _ in try? handle.close() }
            context.write(NIOAny(IOData.fileRegion(fileRegion)), promise: done)
            finish(keepOpen: keepOpen, flush: flush, last: nil, context: context)
        case .stream(let stream):
            if let source = stream.claimSource(as: (any EventLoopPartSource).self) {
                // Not flushed yet: a small body is usually there already and goes out in the same write.
                context.write(wrapOutboundOut(buffer), promise: nil)
                pending = .upstream(source)
                forward(source, framing: framing, keepOpen: keepOpen, context: context)
            } else {
                context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
                copy(stream, framing: framing, keepOpen: keepOpen, context: context)
            }
        }
    }

    /// An upstream body, on the event loop: the next part is asked for only while the client's socket is
    /// writable, so the upstream is read as fast as the client reads and no faster.
    private func forward(_ source: any EventLoopPartSource, framing: BodyFraming, keepOpen: Bool, context: ChannelHandlerContext) {
        forwarding = Forwarding(source: source, framing: framing, keepOpen: keepOpen)
        pumpUpstream(context)
    }

    /// Takes the parts that are already there without waiting, writing them unflushed, and flushes only when
    /// it has to wait (for the upstream, or for the client's socket): a small response goes out in one write.
    private func pumpUpstream(_ context: ChannelHandlerContext) {
        while let forwarding {
            guard context.channel.isActive else { return forwarding.source.cancel() }
            guard context.channel.isWritable else {
                // Paused before the flush: a flush that drains the socket reports writability at once, and the
                // handler must then know to resume.
                pausedUpstream = true
                context.flush()
                return
            }
            let source = forwarding.source
            let result: Result<ByteBuffer?, any Error>
            // What one socket read brought is taken without a promise; an exchange on another loop (a fetcher
            // the server does not share its loops with) is always asked through one.
            switch source.eventLoop === context.eventLoop ? source.takeReadyPart() : .notYet {
            case .part(let part): result = .success(part)
            case .end: result = .success(nil)
            case .failed(let error): result = .failure(error)
            case .notYet:
                // Nothing there (on this loop, the future cannot complete before the callback is registered):
                // flush what was written and wait for the upstream.
                let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
                source.nextPart().hop(to: context.eventLoop).whenComplete { result in
                    let handler = bound.value
                    if let context = handler.context, handler.forwardPart(result, context: context) { handler.pumpUpstream(context) }
                }
                context.flush()
                return
            }
            guard forwardPart(result, context: context) else { return }
        }
    }

    /// Writes one part (unflushed) or ends the answer; returns whether to go on.
    private func forwardPart(_ result: Result<ByteBuffer?, any Error>, context: ChannelHandlerContext) -> Bool {
        guard let forwarding else { return false }
        guard context.channel.isActive else {
            forwarding.source.cancel()
            return false
        }
        switch result {
        case .success(let part?) where part.readableBytes == 0:
            // Nothing to write; in a chunked body, an empty chunk would be its last-chunk and end it early.
            return true
        case .success(let part?):
            if forwarding.framing == .chunked {
                // Size line, the part itself (not copied), CRLF: one writev.
                var size = context.channel.allocator.buffer(capacity: 12)
                size.writeString(String(part.readableBytes, radix: 16))
                size.writeStaticString("\r\n")
                context.write(wrapOutboundOut(size), promise: nil)
                context.write(wrapOutboundOut(part), promise: nil)
                context.write(wrapOutboundOut(context.channel.allocator.buffer(staticString: "\r\n")), promise: nil)
            } else {
                context.write(wrapOutboundOut(part), promise: nil)
            }
            return true
        case .success(nil):
            self.forwarding = nil
            endStream(framing: forwarding.framing, keepOpen: forwarding.keepOpen, context: context)
            return false
        case .failure:
            // The upstream broke mid-body: the response cannot be completed.
            self.forwarding = nil
            abort(context)
            return false
        }
    }

    /// Any other stream (a body the engine inflates, a fetcher that is not NIO's): chunk by chunk from a task,
    /// each written before the next is read.
    private func copy(_ stream: BodyStream, framing: BodyFraming, keepOpen: Bool, context: ChannelHandlerContext) {
        let loop = context.eventLoop
        let handler = NIOLoopBound(self, eventLoop: loop)
        pending = .task(Task {
            do {
                for try await chunk in stream where !chunk.isEmpty {
                    try await loop.flatSubmit { () -> EventLoopFuture<Void> in
                        let handler = handler.value
                        guard let context = handler.context, context.channel.isActive else { return loop.makeFailedFuture(ChannelError.ioOnClosedChannel) }
                        var buffer = context.channel.allocator.buffer(capacity: chunk.count + 16)
                        if framing == .chunked { ResponseEncoding.writeChunk(chunk, into: &buffer) } else { buffer.writeBytes(chunk) }
                        return context.writeAndFlush(handler.wrapOutboundOut(buffer))
                    }.get()
                }
                loop.execute {
                    let handler = handler.value
                    guard let context = handler.context else { return }
                    handler.endStream(framing: framing, keepOpen: keepOpen, context: context)
                }
            } catch {
                loop.execute {
                    let handler = handler.value
                    if let context = handler.context { handler.abort(context) }
                }
            }
        })
    }

    private func endStream(framing: BodyFraming, keepOpen: Bool, context: ChannelHandlerContext) {
        var last: ByteBuffer?
        if framing == .chunked {
            var buffer = context.channel.allocator.buffer(capacity: 8)
            buffer.writeStaticString(ResponseEncoding.lastChunk)
            last = buffer
        }
        finish(keepOpen: keepOpen && framing != .untilClose, flush: true, last: last, context: context)
    }

    /// The answer's last write. Only a closing connection needs to know when the write completes; writes
    /// complete in order, so that is also when the whole response has been handed to the socket (closing
    /// earlier would discard what is still queued, such as the rest of a sendfile region).
    private func finish(keepOpen: Bool, flush: Bool, last: ByteBuffer?, context: ChannelHandlerContext) {
        if let last { context.write(wrapOutboundOut(last), promise: nil) }
        if flush { context.flush() } else { needsFlush = true }
        answerEnded(keepOpen: keepOpen, context: context)
    }

    /// An answer that cannot be completed (its body broke off): the client sees the connection close early,
    /// which is how HTTP/1.1 says the response is incomplete.
    private func abort(_ context: ChannelHandlerContext) {
        pending = nil
        context.close(promise: nil)
    }

    /// Writes `last` (or nothing), flushes, and closes once everything written before has completed.
    private func closeAfterWrites(_ context: ChannelHandlerContext) {
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(channel.allocator.buffer(capacity: 0))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    /// An error answer that ends the connection (the request cannot be trusted any further).
    private func refuse(_ refusal: ConnectionStateMachine.Refusal, context: ChannelHandlerContext) {
        respond(refusal.response(machine.limits), isHead: false, version: .http1_1, keepAlive: false, flush: true, context: context)
    }

    // MARK: CONNECT

    /// The tunnel could not be opened: answer and close.
    func tunnelRefused(status: Int, message: String, context: ChannelHandlerContext) {
        machine.tunnelRefused()
        respond(.error(status, message), isHead: false, version: .http1_1, keepAlive: false, flush: true, context: context)
    }
}

/// Sent to every connection when the server shuts down: finish the response in flight, then close.
struct ServerShutdownEvent: Sendable {}

/// In front of the request decoder: tells the connection handler that bytes arrived, so the request clock
/// starts at a request's first byte rather than when its head is complete (a client dripping header bytes is
/// what the read timeout is for).
final class RequestBytesObserver: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    weak var connection: HTTPConnectionHandler?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        connection?.bytesArrived()
        context.fireChannelRead(data)
    }
}
