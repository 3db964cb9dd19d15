/// The body of one upstream response between the HTTP client that receives it and the consumer that sends it on,
/// as transitions that return what to do (swift-nio's style). It is what makes the network fallback hold the
/// upstream back: AsyncHTTPClient asks for the next part only once the future it got for the last one completes,
/// and that future completes only when the consumer has taken the part. So at most one part waits here, and a
/// slow client slows the upstream instead of filling memory.
///
/// It also keeps the idle clock: only time spent waiting *for the upstream* (a consumer asked, nothing came)
/// counts toward the idle timeout; time the consumer spends elsewhere does not.
///
/// `Promise` and `Part` are generic so that the rules can be table-tested without an event loop.
struct UpstreamBodyState<Part, Promise, Instant: Comparable> {
    enum State {
        /// Parts may still come. `buffered` waits for the consumer; `acknowledge` (when set) tells the client it
        /// may read more once the buffered part is taken; `waiter` is a consumer waiting for the next part, since
        /// `waitingSince`.
        case streaming(buffered: Part?, acknowledge: Promise?, waiter: Promise?, waitingSince: Instant?)
        /// The upstream finished; a last part may still wait for the consumer.
        case finished(buffered: Part?)
        /// The upstream failed, timed out, or the consumer cancelled; nothing more is delivered.
        case failed(any Error)
        /// The consumer saw the end.
        case done
    }

    enum PartAction {
        /// Hand the part to the waiting consumer; the client may read on at once.
        case deliver(Part, to: Promise)
        /// Keep the part; the client waits for `acknowledge` before reading more.
        case hold(acknowledge: Promise)
        /// The body already ended or failed (a part after a failure): drop it.
        case drop
    }

    enum DemandAction {
        /// A part is ready; succeed `acknowledge` too (when set) so the client reads the next one.
        case take(Part, acknowledge: Promise?)
        /// The body ended: the consumer sees the end.
        case end
        case fail(any Error)
        /// Nothing yet: the consumer waits on `waiter`.
        case wait
        /// A consumer is already waiting: one at a time.
        case alreadyWaiting
    }

    enum EndAction {
        case none
        /// Tell the waiting consumer the body ended.
        case endWaiter(Promise)
        /// Fail the waiting consumer (and the client's pending acknowledgement, when there is one).
        case failWaiter(Promise?, acknowledge: Promise?, any Error)
    }

    private(set) var state = State.streaming(buffered: nil, acknowledge: nil, waiter: nil, waitingSince: nil)

    /// The client received a part. `makePromise` is called only when a promise is needed.
    mutating func partReceived(_ part: Part, makePromise: () -> Promise) -> PartAction {
        switch state {
        case .streaming(buffered: nil, acknowledge: nil, waiter: let waiter?, waitingSince: _):
            state = .streaming(buffered: nil, acknowledge: nil, waiter: nil, waitingSince: nil)
            return .deliver(part, to: waiter)
        case .streaming(buffered: nil, acknowledge: nil, waiter: nil, waitingSince: _):
            let acknowledge = makePromise()
            state = .streaming(buffered: part, acknowledge: acknowledge, waiter: nil, waitingSince: nil)
            return .hold(acknowledge: acknowledge)
        case .streaming:
            // AsyncHTTPClient never sends a part before the last one was acknowledged; if it did, the body would
            // be corrupt, so it fails rather than reorders.
            preconditionFailure("a body part arrived before the previous one was acknowledged")
        case .finished, .failed, .done:
            return .drop
        }
    }

    /// The consumer asks for the next part, at `now`. On `.wait`, `waiter` has been recorded.
    mutating func demand(now: Instant, waiter: () -> Promise) -> DemandAction {
        switch state {
        case .streaming(buffered: let part?, acknowledge: let acknowledge, waiter: nil, waitingSince: _):
            state = .streaming(buffered: nil, acknowledge: nil, waiter: nil, waitingSince: nil)
            return .take(part, acknowledge: acknowledge)
        case .streaming(buffered: nil, acknowledge: _, waiter: nil, waitingSince: _):
            state = .streaming(buffered: nil, acknowledge: nil, waiter: waiter(), waitingSince: now)
            return .wait
        case .streaming:
            return .alreadyWaiting
        case .finished(buffered: let part?):
            state = .finished(buffered: nil)
            return .take(part, acknowledge: nil)
        case .finished(buffered: nil), .done:
            state = .done
            return .end
        case .failed(let error):
            return .fail(error)
        }
    }

    /// The upstream's body ended cleanly.
    mutating func finished() -> EndAction {
        switch state {
        case .streaming(buffered: let part, acknowledge: _, waiter: let waiter, waitingSince: _):
            if let waiter {
                state = .done
                return .endWaiter(waiter)
            }
            state = .finished(buffered: part)
            return .none
        case .finished, .failed, .done:
            return .none
        }
    }

    /// The exchange failed: the upstream broke, a timeout fired, or the consumer cancelled. The first failure
    /// wins; later ones (the client reporting the cancellation it was asked for) change nothing.
    mutating func failed(_ error: any Error) -> EndAction {
        switch state {
        case .streaming(buffered: _, acknowledge: let acknowledge, waiter: let waiter, waitingSince: _):
            state = .failed(error)
            return .failWaiter(waiter, acknowledge: acknowledge, error)
        case .finished:
            state = .failed(error)
            return .none
        case .failed, .done:
            return .none
        }
    }

    /// Since when the consumer has been waiting for the upstream, if it is.
    var waitingSince: Instant? {
        if case .streaming(_, _, _, let since) = state { return since }
        return nil
    }

    var isComplete: Bool {
        switch state {
        case .failed, .done: true
        case .streaming, .finished: false
        }
    }
}
