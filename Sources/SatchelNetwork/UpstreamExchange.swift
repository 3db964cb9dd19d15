#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import SatchelCore
import SatchelHTTP

/// One request to the network and its response, on one event loop: it takes a connection from the loop's
/// ``UpstreamConnectionPool`` (or opens one), sends the request, and hands the body to its consumer part by part.
///
/// - The response head (``head``) is bounded by ``FetchTimeouts/responseHead`` from the start (connecting
///   included); after it, only the idle timeout applies, and only while the consumer waits for the upstream:
///   time the consumer itself takes does not count, so a slow client never times out a live body.
/// - A request on a reused connection that the origin closed before any byte of the answer came (it timed the
///   connection out just as it was taken) is sent once more on a new connection, if its method is idempotent.
/// - ``cancel()`` (the client went away, the task was cancelled) closes the upstream connection if the response
///   is still arriving.
///
/// Every piece of state is touched on ``eventLoop`` only.
public final class UpstreamExchange: EventLoopPartSource, BodyReader, FetchHandle, @unchecked Sendable {
    public let eventLoop: any EventLoop
    let request: UpstreamRequest
    let timeouts: FetchTimeouts
    private let pool: UpstreamConnectionPool
    private var connection: UpstreamConnection?
    private var body = UpstreamBodyState<ByteBuffer, EventLoopPromise<ByteBuffer?>, NIODeadline>()
    /// Told the response (or why there is none) once, on ``eventLoop``; let go of then: the response's body
    /// holds this exchange, so keeping what the consumer gave (and through it the response) would keep both alive
    /// for ever, and a body nobody reads would never be cancelled. A callback, not a promise: a miss is a
    /// proxy's hot path, and the consumer (the server) completes its own promise from it.
    private var onResponse: ((Result<ResourceResponse, any Error>) -> Void)?
    private var headState = HeadState.waiting
    private var idleTimer: Scheduled<Void>?
    private var retried = false
    /// Set when the exchange fails; later reports (the connection closing as asked) do not replace the reason.
    private var failure: (any Error)?

    private enum HeadState {
        case waiting
        /// Received, handed over once the socket read it came in is complete (the body parts read with it are
        /// then waiting too, and the consumer writes head and body in one go).
        case received(HTTPResponseHead)
        case handedOver
    }

    var url: String { request.url }

    /// - Parameter onResponse: called once on `eventLoop` with the response, made when its head is handed over
    ///   (its body is this exchange's), or with a ``FetchError`` (or `CancellationError`); never from ``init``.
    init(
        eventLoop: any EventLoop, request: UpstreamRequest, pool: UpstreamConnectionPool, timeouts: FetchTimeouts,
        onResponse: @escaping (Result<ResourceResponse, any Error>) -> Void
    ) {
        self.eventLoop = eventLoop
        self.request = request
        self.pool = pool
        self.timeouts = timeouts
        self.onResponse = onResponse
    }

    /// Starts the request. Call on ``eventLoop``.
    func start() {
        eventLoop.preconditionInEventLoop()
        // Cancelled between the fetch and this moment (the async fetch starts it with a hop to the loop).
        guard failure == nil else { return }
        pool.headDeadlines.add(self, deadline: .now() + TimeAmount(timeouts.responseHead))
        if let idle = pool.takeIdle(request.origin) {
            connection = idle
            idle.send(request, for: self)
        } else {
            openConnection()
        }
    }

    private func openConnection() {
        pool.connect(request.origin).assumeIsolated().whenComplete { [self] result in
            let connection: UpstreamConnection
            do {
                connection = try result.get().pipeline.syncOperations.handler(type: UpstreamConnection.self)
            } catch {
                if failure == nil { fail(Self.fetchError(error, url: url, timeouts: timeouts)) }
                return
            }
            guard failure == nil else {
                // Cancelled or timed out while connecting: the new connection carried nothing.
                connection.close()
                return
            }
            self.connection = connection
            connection.send(request, for: self)
        }
    }

    // MARK: The consumer's side

    /// The next part of the body; nil at its end. Parts are taken one at a time. Safe from any thread; the
    /// future completes on ``eventLoop``.
    public func nextPart() -> EventLoopFuture<ByteBuffer?> {
        guard eventLoop.inEventLoop else { return eventLoop.flatSubmit { self.nextPart() } }
        var waiter: EventLoopPromise<ByteBuffer?>?
        switch body.demand(now: .now(), waiter: { waiter = eventLoop.makePromise(); return waiter! }) {
        case .take(let part, let readMore):
            if readMore { connection?.readMore() }
            return eventLoop.makeSucceededFuture(part)
        case .end:
            return eventLoop.makeSucceededFuture(nil)
        case .fail(let error):
            return eventLoop.makeFailedFuture(error)
        case .wait:
            armIdleTimer()
            return waiter!.futureResult
        case .alreadyWaiting:
            return eventLoop.makeFailedFuture(FetchError.badResponse("the body of \(url) was read by two consumers at once"))
        }
    }

    /// The next part if it is already here, without a future: a consumer on ``eventLoop`` writes what one socket
    /// read brought this way and calls ``nextPart()`` only when it has to wait. Call on ``eventLoop``.
    public func takeReadyPart() -> ReadyBodyPart {
        eventLoop.assertInEventLoop()
        switch body.takeReady() {
        case .take(let part, let readMore)?:
            if readMore { connection?.readMore() }
            return .part(part)
        case .end?: return .end
        case .fail(let error)?: return .failed(error)
        case .alreadyWaiting?: return .failed(FetchError.badResponse("the body of \(url) was read by two consumers at once"))
        case .wait?, nil: return .notYet
        }
    }

    /// Stops the exchange: the upstream connection is closed if the response is still arriving. Safe from any
    /// thread, any number of times.
    public func cancel() {
        guard eventLoop.inEventLoop else { return eventLoop.execute { self.cancel() } }
        fail(CancellationError())
    }

    /// ``BodyReader``: the next part as bytes, for consumers that are not on an event loop (the WebKit driver,
    /// the updater): what one socket read brought, at most 64 KiB with NIO's default allocator.
    public func nextChunk() async throws -> [UInt8]? {
        try await nextPart().get().map { Array($0.readableBytesView) }
    }

    // MARK: The connection's side

    func receivedHead(_ head: HTTPResponseHead) {
        pool.headDeadlines.remove(self)
        if case .waiting = headState { headState = .received(head) }
    }

    /// The response head did not come within ``FetchTimeouts/responseHead`` (``HeadDeadlines``).
    func headTimedOut() {
        guard case .waiting = headState else { return }
        fail(FetchError.timedOut("no response head from \(url) within \(timeouts.responseHead)"))
    }

    func receivedPart(_ part: ByteBuffer) {
        body.partReceived(part)
    }

    /// The socket read is complete: hand over the head and the first part, if they are awaited.
    func readCompleted() {
        handOverHead()
        perform(body.readCompleted())
    }

    /// Whether the connection should read on.
    var wantsRead: Bool { failure == nil && body.wantsRead }

    /// The response ended; the connection has gone back to its pool (or closed).
    func finished() {
        connection = nil
        // The body first, then the head: a consumer woken by the head finds every part and the end waiting.
        let handOver = body.finished()
        handOverHead()
        perform(handOver)
        stopIdleTimer()
    }

    /// The connection closed or broke while carrying this exchange.
    func connectionLost(_ error: any Error, beforeAnswer: Bool, reused: Bool) {
        connection = nil
        guard failure == nil else { return }
        if beforeAnswer, reused, !retried, request.isIdempotent, Self.isClosedConnection(error) {
            retried = true
            return openConnection()
        }
        let reason: any Error
        if case ChannelError.eof = error {
            reason = FetchError.connectionFailed(beforeAnswer ? "\(url): the upstream closed the connection without answering" : "\(url): the upstream closed the connection before the response ended")
        } else {
            reason = Self.fetchError(error, url: url, timeouts: timeouts)
        }
        fail(reason)
    }

    // MARK: Handing over, failing and timing out

    private func handOverHead() {
        guard case .received(let head) = headState else { return }
        headState = .handedOver
        let onResponse = onResponse
        self.onResponse = nil
        onResponse?(.success(UpstreamResponse.make(head, exchange: self, method: request.head.method)))
    }

    private func perform(_ handOver: UpstreamBodyState<ByteBuffer, EventLoopPromise<ByteBuffer?>, NIODeadline>.HandOver) {
        switch handOver {
        case .none: break
        case .deliver(let part, let waiter): waiter.succeed(part)
        case .end(let waiter): waiter.succeed(nil)
        case .fail(let waiter, let error): waiter.fail(error)
        }
    }

    private func fail(_ error: any Error) {
        guard failure == nil else { return }
        failure = error
        pool.headDeadlines.remove(self)
        stopIdleTimer()
        if case .handedOver = headState {} else {
            headState = .handedOver
            let onResponse = onResponse
            self.onResponse = nil
            onResponse?(.failure(error))
        }
        perform(body.failed(error))
        connection?.abandon(self)
        connection = nil
    }

    /// One timer at a time, re-armed lazily: when it fires early (the consumer was served and is waiting again)
    /// it moves to the new deadline instead of being scheduled and cancelled for every part.
    private func armIdleTimer() {
        guard idleTimer == nil, let since = body.waitingSince else { return }
        idleTimer = eventLoop.scheduleTask(deadline: since + TimeAmount(timeouts.idle)) { [self] in
            idleTimer = nil
            guard let since = body.waitingSince else { return }
            if NIODeadline.now() - since >= TimeAmount(timeouts.idle) {
                fail(FetchError.timedOut("no body bytes from \(url) for \(timeouts.idle)"))
            } else {
                armIdleTimer()
            }
        }
    }

    private func stopIdleTimer() {
        idleTimer?.cancel()
        idleTimer = nil
    }

    // MARK: Errors

    /// The connection was closed or reset under the request: what a stale pooled connection looks like, the only
    /// case that is retried (bytes that are not HTTP, or a TLS failure, are answers and are not).
    static func isClosedConnection(_ error: any Error) -> Bool {
        if let channel = error as? ChannelError { return channel == .eof || channel == .ioOnClosedChannel || channel == .outputClosed }
        if let io = error as? IOError { return io.errnoCode == ECONNRESET || io.errnoCode == EPIPE }
        return false
    }

    /// What NIO reports, as the ``FetchError`` the page will see (502/504).
    static func fetchError(_ error: any Error, url: String, timeouts: FetchTimeouts) -> any Error {
        if error is CancellationError || error is FetchError { return error }
        if case ChannelError.connectTimeout = error { return FetchError.timedOut("connecting for \(url) took longer than \(timeouts.connect)") }
        if let connection = error as? NIOConnectionError {
            if connection.connectionErrors.contains(where: { if case ChannelError.connectTimeout = $0.error { true } else { false } }) {
                return FetchError.timedOut("connecting for \(url) took longer than \(timeouts.connect)")
            }
            let reasons = connection.connectionErrors.map { "\($0.target): \($0.error)" }.joined(separator: "; ")
            let resolution = [connection.dnsAError, connection.dnsAAAAError].compactMap { $0.map { "\($0)" } }.joined(separator: "; ")
            return FetchError.connectionFailed("cannot connect for \(url): \(reasons.isEmpty ? (resolution.isEmpty ? "\(connection)" : "cannot resolve \(connection.host): \(resolution)") : reasons)")
        }
        if let tls = error as? NIOSSLError { return FetchError.connectionFailed("\(url): TLS failed: \(tls)") }
        if let tls = error as? BoringSSLError { return FetchError.connectionFailed("\(url): TLS failed: \(tls)") }
        if let tls = error as? UpstreamTLSUnavailable { return FetchError.connectionFailed("\(url): \(tls)") }
        if let io = error as? IOError { return FetchError.connectionFailed("\(url): \(io)") }
        if error is HTTPParserError { return FetchError.badResponse("\(url) did not answer in HTTP: \(error)") }
        return FetchError.connectionFailed("\(url): \(error)")
    }
}
