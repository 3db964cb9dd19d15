import NIOCore
import NIOHTTP1
import SatchelHTTP

/// The life of one HTTP/1.1 connection as transitions that return what to do (the style of swift-nio's
/// `HTTPServerPipelineHandler`): which request to answer next, what to refuse, when to read, when to close.
/// ``HTTPConnectionHandler`` does the I/O; every rule of ordering, deadlines and closing is here, testable
/// without a socket.
///
/// **Ordering.** Requests are answered one at a time, in the order they arrived. Whatever arrives while an
/// answer is in flight (further pipelined requests, a parse error, the client's half-close) waits in the queue
/// and is taken up, in order, when the answer ends; once something is queued, reads are held back, so a
/// pipelining client cannot make the server buffer without bound. A parse error is thus answered after the valid
/// requests before it.
///
/// **Deadlines.** A request must arrive whole within the read timeout of its first byte (else 408: slowloris);
/// the clock runs only while the server waits for that request, never while it answers an earlier one. A
/// connection with no request for the idle timeout closes.
///
/// **Closing.** A response that does not keep the connection open, a shutdown or the client's half-close end
/// the connection once nothing is in flight; nothing queued behind them is answered.
struct ConnectionStateMachine {
    struct Limits: Sendable {
        var maxBodyBytes: Int
        var readTimeout: TimeAmount
        var idleTimeout: TimeAmount
    }

    /// What the request decoder delivers, plus what the channel reports.
    enum Inbound {
        case head(HTTPRequestHead)
        case body(ByteBuffer)
        case end
        case parseError(HTTPParserError)
        /// The client closed its sending side.
        case inputClosed
    }

    /// An answer that ends the connection.
    enum Refusal: Equatable, Sendable {
        case bodyTooLarge
        case headersTooLarge
        case malformed
        case requestTimeout

        /// The answer that ends the connection.
        func response(_ limits: Limits) -> ResourceResponse {
            switch self {
            case .bodyTooLarge: .error(HTTPStatus.contentTooLarge, "request body over \(limits.maxBodyBytes) bytes")
            case .headersTooLarge: .error(HTTPStatus.fieldsTooLarge, "request headers over the limit")
            case .malformed: .error(HTTPStatus.badRequest, "malformed HTTP request")
            case .requestTimeout: .error(HTTPStatus.requestTimeout, "request not received within \(limits.readTimeout.nanoseconds / 1_000_000_000) s")
            }
        }
    }

    enum Action {
        case none
        /// Answer this request; keep the connection open afterwards only when `keepAlive`.
        case answer(HTTPRequestHead, ByteBuffer?, keepAlive: Bool)
        /// Answer with an error, then close.
        case refuse(Refusal)
        /// CONNECT: open a tunnel; reads stay held back until it is open or refused.
        case openTunnel(HTTPRequestHead)
        /// Close now: nothing is in flight.
        case close
    }

    enum AnswerEnded: Equatable {
        /// Close once the last write has completed.
        case close
        /// Take up what was queued, then read again.
        case continueWithQueue
    }

    private enum State {
        /// Between requests.
        case awaitingHead
        /// The head arrived; the body is being collected (or, past the limit, dropped).
        case receivingBody(HTTPRequestHead, ByteBuffer?, tooLarge: Bool)
        /// An answer is being produced or written; inbound events are queued.
        case answering(keepAlive: Bool)
        /// A CONNECT is being set up (then the HTTP handlers leave the pipeline).
        case tunnelling
        case closed
    }

    let limits: Limits
    private var state = State.awaitingHead
    private var queue = CircularBuffer<Inbound>()
    /// A shutdown or the client's half-close: finish what is in flight, start nothing new.
    private var closing = false
    private var readHeldBack = false
    /// When the first byte of the request being waited for arrived.
    private var requestClock: NIODeadline?
    /// Bytes arrived while answering (the next request has begun): its clock starts when the answer ends.
    private var bytesWhileAnswering = false
    private var lastActivity: NIODeadline

    init(limits: Limits, now: NIODeadline) {
        self.limits = limits
        lastActivity = now
    }

    // MARK: Inbound

    mutating func received(_ inbound: Inbound, now: NIODeadline) -> Action {
        switch state {
        case .answering, .tunnelling:
            queue.append(inbound)
            return .none
        case .closed:
            return .none
        case .awaitingHead, .receivingBody:
            // Something queued earlier goes first (an answer ended and the queue is being taken up).
            guard queue.isEmpty else {
                queue.append(inbound)
                return .none
            }
            return process(inbound, now: now)
        }
    }

    /// The next queued event that can be taken up now, processed; nil when nothing can be (the queue is empty,
    /// or an answer is in flight again).
    mutating func nextQueued(now: NIODeadline) -> Action? {
        switch state {
        case .awaitingHead, .receivingBody:
            guard let inbound = queue.popFirst() else { return nil }
            return process(inbound, now: now)
        case .answering, .tunnelling, .closed:
            return nil
        }
    }

    private mutating func process(_ inbound: Inbound, now: NIODeadline) -> Action {
        switch (state, inbound) {
        case (.awaitingHead, .head(let head)):
            if requestClock == nil { requestClock = now }
            if head.method == .CONNECT {
                state = .tunnelling
                requestClock = nil
                return .openTunnel(head)
            }
            let declared = head.headers.first(name: "Content-Length").flatMap(Int.init) ?? 0
            state = .receivingBody(head, nil, tooLarge: declared > limits.maxBodyBytes)
            return .none
        case (.receivingBody(let head, var body, let tooLarge), .body(var chunk)):
            guard !tooLarge else { return .none }
            if (body?.readableBytes ?? 0) + chunk.readableBytes > limits.maxBodyBytes {
                state = .receivingBody(head, nil, tooLarge: true)
                return .none
            }
            // The state still holds the buffer bound above: appending while it does would copy every byte received
            // so far (copy on write), so a body would cost the square of its size. Leave the state first.
            state = .awaitingHead
            if body == nil {
                body = chunk
            } else {
                body!.writeBuffer(&chunk)
            }
            state = .receivingBody(head, body, tooLarge: false)
            return .none
        case (.receivingBody(let head, let body, let tooLarge), .end):
            requestClock = nil
            lastActivity = now
            if tooLarge {
                state = .answering(keepAlive: false)
                return .refuse(.bodyTooLarge)
            }
            let keepAlive = head.isKeepAlive && !closing
            state = .answering(keepAlive: keepAlive)
            return .answer(head, body, keepAlive: keepAlive)
        case (.awaitingHead, .parseError(let error)), (.receivingBody, .parseError(let error)):
            state = .answering(keepAlive: false)
            return .refuse(error == .headerOverflow ? .headersTooLarge : .malformed)
        case (.awaitingHead, .inputClosed), (.receivingBody, .inputClosed):
            // Nothing is in flight; a request cut off half-way cannot be answered.
            state = .closed
            return .close
        case (.awaitingHead, .body), (.awaitingHead, .end), (.receivingBody, .head):
            // NIO's decoder never delivers these; a request in pieces out of order cannot be trusted.
            state = .answering(keepAlive: false)
            return .refuse(.malformed)
        case (.answering, _), (.tunnelling, _), (.closed, _):
            preconditionFailure("process is only called between answers")
        }
    }

    // MARK: Answers

    /// The last write of an answer was issued. `keepOpen` is what the answer itself allows (a body delimited by
    /// the connection's close does not).
    mutating func answerEnded(keepOpen: Bool, now: NIODeadline) -> AnswerEnded {
        if case .closed = state {
            // The connection closed under the answer's last write (a flush that failed closes the channel at once).
            return .close
        }
        guard case .answering(let keepAlive) = state else { preconditionFailure("an answer ended while none was in flight") }
        lastActivity = now
        guard keepAlive, keepOpen, !closing else {
            state = .closed
            queue.removeAll()
            return .close
        }
        state = .awaitingHead
        if bytesWhileAnswering || !queue.isEmpty { requestClock = now }
        bytesWhileAnswering = false
        return .continueWithQueue
    }

    /// A CONNECT was refused (not allowed, or its upstream could not be reached): its answer closes.
    mutating func tunnelRefused() {
        guard case .tunnelling = state else { return }
        state = .answering(keepAlive: false)
    }

    // MARK: Reading

    /// The channel wants to read: true to read now, false to hold the read back until the answer in flight ends.
    /// While an answer is in flight, reading goes on until something is queued: a client that sends one request
    /// and waits costs no change of the socket's read interest (two system calls per request), and one that
    /// pipelines is held back as soon as its next request has arrived.
    mutating func readRequested() -> Bool {
        switch state {
        case .tunnelling:
            readHeldBack = true
            return false
        case .answering, .awaitingHead, .receivingBody, .closed:
            if !queue.isEmpty {
                readHeldBack = true
                return false
            }
            return true
        }
    }

    /// After the queue was taken up: whether a held-back read should happen now.
    mutating func shouldResumeReading() -> Bool {
        switch state {
        case .awaitingHead, .receivingBody:
            guard readHeldBack, queue.isEmpty else { return false }
            readHeldBack = false
            return true
        case .answering, .tunnelling, .closed:
            return false
        }
    }

    // MARK: Time and closing

    /// Bytes arrived from the client (before the decoder).
    mutating func bytesArrived(now: NIODeadline) {
        lastActivity = now
        switch state {
        case .awaitingHead, .receivingBody:
            if requestClock == nil { requestClock = now }
        case .answering:
            bytesWhileAnswering = true
        case .tunnelling, .closed:
            break
        }
    }

    /// The periodic deadline check.
    mutating func deadlineCheck(now: NIODeadline) -> Action {
        switch state {
        case .awaitingHead, .receivingBody:
            if let started = requestClock, now - started >= limits.readTimeout {
                requestClock = nil
                state = .answering(keepAlive: false)
                queue.removeAll()
                return .refuse(.requestTimeout)
            }
            if case .awaitingHead = state, requestClock == nil, queue.isEmpty, now - lastActivity >= limits.idleTimeout {
                state = .closed
                return .close
            }
            return .none
        case .answering, .tunnelling, .closed:
            return .none
        }
    }

    /// The server is shutting down: close now when nothing is in flight, else after the answer in flight.
    mutating func shutdownRequested() -> Action {
        closing = true
        if case .awaitingHead = state, requestClock == nil, queue.isEmpty {
            state = .closed
            return .close
        }
        return .none
    }

    /// The connection is gone.
    mutating func closed() {
        state = .closed
        queue.removeAll()
    }

    var isClosed: Bool {
        if case .closed = state { return true }
        return false
    }
}
