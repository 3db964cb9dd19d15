import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import SatchelCore
import SatchelEngine

/// One request to the network and its response, as AsyncHTTPClient's delegate on one event loop.
///
/// - The response head is awaited within ``FetchTimeouts/responseHead``; after it, nothing bounds the total.
/// - The body is pulled (``nextPart()``): a part is read from the upstream only after the previous one was
///   taken (``UpstreamBodyState``), and a consumer waiting longer than ``FetchTimeouts/idle`` for one fails the
///   exchange. Time the consumer itself takes does not count, so a slow client never times out a live body.
/// - ``cancel()`` (the client went away, the task was cancelled) closes the upstream request.
///
/// Every piece of state is touched on ``eventLoop`` only.
public final class UpstreamExchange: HTTPClientResponseDelegate, BodyReader, @unchecked Sendable {
    public typealias Response = Void

    public let eventLoop: any EventLoop
    /// The URL fetched, for error messages.
    let url: String
    let timeouts: FetchTimeouts
    private var body = UpstreamBodyState<ByteBuffer, EventLoopPromise<ByteBuffer?>, NIODeadline>()
    private let headPromise: EventLoopPromise<HTTPResponseHead>
    private var headTimer: Scheduled<Void>?
    private var idleTimer: Scheduled<Void>?
    private var task: HTTPClient.Task<Void>?
    /// Set when the exchange fails before the client reports it (a timeout, a cancellation), so the client's
    /// later report of the cancellation does not replace the reason.
    private var failure: (any Error)?

    /// The response head; fails with a ``FetchError`` (or `CancellationError`).
    public var head: EventLoopFuture<HTTPResponseHead> { headPromise.futureResult }

    init(eventLoop: any EventLoop, url: String, timeouts: FetchTimeouts) {
        self.eventLoop = eventLoop
        self.url = url
        self.timeouts = timeouts
        headPromise = eventLoop.makePromise()
    }

    /// Starts the request on `client`. Call on ``eventLoop``.
    func start(_ request: HTTPClient.Request, on client: HTTPClient) {
        eventLoop.preconditionInEventLoop()
        let timeout = timeouts.responseHead
        headTimer = eventLoop.scheduleTask(in: TimeAmount(timeout)) { [self] in
            fail(FetchError.timedOut("no response head from \(url) within \(timeout)"))
        }
        task = client.execute(request: request, delegate: self, eventLoop: .delegateAndChannel(on: eventLoop))
    }

    // MARK: The consumer's side

    /// The next part of the body; nil at its end. Parts are taken one at a time. Safe from any thread; the
    /// future completes on ``eventLoop``.
    public func nextPart() -> EventLoopFuture<ByteBuffer?> {
        guard eventLoop.inEventLoop else { return eventLoop.flatSubmit { self.nextPart() } }
        var waiter: EventLoopPromise<ByteBuffer?>?
        switch body.demand(now: .now(), waiter: { waiter = eventLoop.makePromise(); return waiter! }) {
        case .take(let part, let acknowledge):
            if let acknowledge { acknowledge.succeed(part) }
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

    /// Stops the exchange: the upstream request is cancelled (its connection closed if the response is still
    /// arriving). Safe from any thread, any number of times.
    public func cancel() {
        guard eventLoop.inEventLoop else { return eventLoop.execute { self.cancel() } }
        fail(CancellationError())
    }

    /// ``BodyReader``: the next part as bytes, for consumers that are not on an event loop (the WebKit driver,
    /// the updater): what NIO read at once, at most 64 KiB with its default allocator.
    public func nextChunk() async throws -> [UInt8]? {
        try await nextPart().get().map { Array($0.readableBytesView) }
    }

    // MARK: AsyncHTTPClient's side

    public func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        headTimer?.cancel()
        headTimer = nil
        headPromise.succeed(head)
        return eventLoop.makeSucceededVoidFuture()
    }

    public func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        switch body.partReceived(buffer, makePromise: { eventLoop.makePromise() }) {
        case .deliver(let part, let waiter):
            waiter.succeed(part)
            return eventLoop.makeSucceededVoidFuture()
        case .hold(let acknowledge):
            // The consumer takes the part later; the client reads on only then.
            return acknowledge.futureResult.map { _ in () }
        case .drop:
            return eventLoop.makeSucceededVoidFuture()
        }
    }

    public func didFinishRequest(task: HTTPClient.Task<Void>) throws {
        headTimer?.cancel()
        if case .endWaiter(let waiter) = body.finished() { waiter.succeed(nil) }
        stopIdleTimer()
    }

    public func didReceiveError(task: HTTPClient.Task<Void>, _ error: any Error) {
        fail(failure ?? Self.fetchError(error, url: url, timeouts: timeouts))
    }

    // MARK: Failing and timing out

    private func fail(_ error: any Error) {
        if failure == nil { failure = error }
        headTimer?.cancel()
        headTimer = nil
        stopIdleTimer()
        headPromise.fail(error)
        if case .failWaiter(let waiter, let acknowledge, let error) = body.failed(error) {
            waiter?.fail(error)
            acknowledge?.fail(error)
        }
        task?.cancel()
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

    /// What AsyncHTTPClient and NIO report, as the ``FetchError`` the page will see (502/504).
    static func fetchError(_ error: any Error, url: String, timeouts: FetchTimeouts) -> any Error {
        if error is CancellationError || error is FetchError { return error }
        if let client = error as? HTTPClientError {
            switch client {
            case .cancelled: return CancellationError()
            case .connectTimeout: return FetchError.timedOut("connecting for \(url) took longer than \(timeouts.connect)")
            case .readTimeout, .deadlineExceeded: return FetchError.timedOut("\(url): \(client)")
            case .remoteConnectionClosed: return FetchError.connectionFailed("\(url): the upstream closed the connection")
            case .invalidURL, .emptyHost, .emptyScheme:
                return FetchError.unsupportedURL(url)
            default: return FetchError.badResponse("\(url): \(client)")
            }
        }
        if let connection = error as? NIOConnectionError {
            let reasons = connection.connectionErrors.map { "\($0.target): \($0.error)" }.joined(separator: "; ")
            return FetchError.connectionFailed("cannot connect for \(url): \(reasons.isEmpty ? "\(connection)" : reasons)")
        }
        if let io = error as? IOError { return FetchError.connectionFailed("\(url): \(io)") }
        if error is HTTPParserError { return FetchError.badResponse("\(url) did not answer in HTTP: \(error)") }
        if error is ChannelError { return FetchError.connectionFailed("\(url): \(error)") }
        return FetchError.connectionFailed("\(url): \(error)")
    }
}
