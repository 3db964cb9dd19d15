/// The body of one upstream response between the connection that reads it and the consumer that sends it on,
/// as transitions that return what to do (swift-nio's style). It is what makes the network fallback hold the
/// upstream back: the connection reads its socket only on demand (`autoRead` off) and asks for another read only
/// while nothing waits here (``wantsRead``). So what waits is at most one socket read's worth of parts, and a
/// slow client slows the upstream instead of filling memory.
///
/// Parts decoded from one socket read are queued and handed over when the read is complete, so a consumer that
/// writes them on takes them all at once and sends them in one write.
///
/// It also keeps the idle clock: only time spent waiting *for the upstream* (a consumer asked, nothing came)
/// counts toward the idle timeout; time the consumer spends elsewhere does not.
///
/// `Part`, `Promise` and `Instant` are generic so that the rules are table-tested without an event loop.
struct UpstreamBodyState<Part, Promise, Instant: Comparable> {
    enum State {
        /// Parts may still come. `queued` waits for the consumer, oldest first; `waiter` is a consumer waiting
        /// for the next part, since `waitingSince`.
        case streaming(queued: [Part], waiter: Promise?, waitingSince: Instant?)
        /// The upstream finished; the last parts may still wait for the consumer.
        case finished(queued: [Part])
        /// The upstream failed, timed out, or the consumer cancelled; nothing more is delivered.
        case failed(any Error)
        /// The consumer saw the end.
        case done
    }

    enum HandOver {
        case none
        /// Hand `part` to the waiting consumer.
        case deliver(Part, to: Promise)
        /// Tell the waiting consumer the body ended.
        case end(Promise)
        /// Fail the waiting consumer.
        case fail(Promise, any Error)
    }

    enum DemandAction {
        /// A part is ready. `readMore`: the queue ran empty while parts may still come, so the connection may
        /// read its socket again.
        case take(Part, readMore: Bool)
        /// The body ended: the consumer sees the end.
        case end
        case fail(any Error)
        /// Nothing yet: the consumer waits on the recorded waiter (the connection is reading).
        case wait
        /// A consumer is already waiting: one at a time.
        case alreadyWaiting
    }

    private(set) var state = State.streaming(queued: [], waiter: nil, waitingSince: nil)

    /// The connection decoded a part; it waits until the read is complete (or the consumer asks).
    mutating func partReceived(_ part: Part) {
        guard case .streaming(var queued, let waiter, let since) = state else { return }  // after a failure: dropped
        state = .done  // let go of the array, so appending does not copy it; replaced below
        queued.append(part)
        state = .streaming(queued: queued, waiter: waiter, waitingSince: since)
    }

    /// The socket read is complete: a waiting consumer gets the oldest part.
    mutating func readCompleted() -> HandOver {
        guard case .streaming(var queued, let waiter?, _) = state, !queued.isEmpty else { return .none }
        state = .done
        let part = queued.removeFirst()
        state = .streaming(queued: queued, waiter: nil, waitingSince: nil)
        return .deliver(part, to: waiter)
    }

    /// The consumer asks for the next part, at `now`. On `.wait`, `waiter` has been recorded.
    mutating func demand(now: Instant, waiter: () -> Promise) -> DemandAction {
        if let ready = takeReady() { return ready }
        state = .streaming(queued: [], waiter: waiter(), waitingSince: now)
        return .wait
    }

    /// What ``demand(now:waiter:)`` would answer, except that when nothing is there yet it answers nil and
    /// changes nothing (no waiter, no idle clock): a consumer on the event loop takes what one read brought
    /// without a promise, and asks with a waiter only when it must wait.
    mutating func takeReady() -> DemandAction? {
        switch state {
        case .streaming(queued: _, waiter: _?, waitingSince: _):
            return .alreadyWaiting
        case .streaming(queued: var queued, waiter: nil, waitingSince: _) where !queued.isEmpty:
            state = .done
            let part = queued.removeFirst()
            state = .streaming(queued: queued, waiter: nil, waitingSince: nil)
            return .take(part, readMore: queued.isEmpty)
        case .streaming:
            return nil
        case .finished(queued: var queued) where !queued.isEmpty:
            state = .done
            let part = queued.removeFirst()
            state = .finished(queued: queued)
            return .take(part, readMore: false)
        case .finished, .done:
            state = .done
            return .end
        case .failed(let error):
            return .fail(error)
        }
    }

    /// The upstream's body ended cleanly. A waiting consumer gets the oldest part, or the end.
    mutating func finished() -> HandOver {
        guard case .streaming(var queued, let waiter, _) = state else { return .none }
        guard let waiter else {
            state = .finished(queued: queued)
            return .none
        }
        guard !queued.isEmpty else {
            state = .done
            return .end(waiter)
        }
        state = .done
        let part = queued.removeFirst()
        state = .finished(queued: queued)
        return .deliver(part, to: waiter)
    }

    /// The exchange failed: the upstream broke, a timeout fired, or the consumer cancelled. The first failure
    /// wins. A body that already arrived whole is not failed by a later error: the consumer still gets every
    /// part, then the end.
    mutating func failed(_ error: any Error) -> HandOver {
        guard case .streaming(_, let waiter, _) = state else { return .none }
        state = .failed(error)
        return waiter.map { .fail($0, error) } ?? .none
    }

    /// Since when the consumer has been waiting for the upstream, if it is.
    var waitingSince: Instant? {
        if case .streaming(_, _, let since) = state { return since }
        return nil
    }

    /// Whether the connection should read its socket: parts may still come and none waits for the consumer.
    var wantsRead: Bool {
        if case .streaming(let queued, _, _) = state { return queued.isEmpty }
        return false
    }
}
