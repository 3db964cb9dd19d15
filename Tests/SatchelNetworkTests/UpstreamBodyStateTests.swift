@testable import SatchelNetwork
import Testing

/// The body's rules without an event loop: parts are Strings, promises are Ints, instants are Ints.
@Suite("UpstreamBodyState: backpressure, hand-over and the idle clock")
struct UpstreamBodyStateTests {
    typealias State = UpstreamBodyState<String, Int, Int>

    struct Failure: Error, Equatable {}

    func take(_ state: inout State, now: Int = 0, waiter: Int = 1) -> String {
        switch state.demand(now: now, waiter: { waiter }) {
        case .take(let part, _): part
        case .end: "end"
        case .fail: "fail"
        case .wait: "wait"
        case .alreadyWaiting: "alreadyWaiting"
        }
    }

    @Test("parts of one read wait for the consumer in order, and no more is read until all are taken")
    func queueAndReadMore() {
        var state = State()
        #expect(state.wantsRead)
        state.partReceived("a")
        state.partReceived("b")
        #expect(!state.wantsRead, "parts are waiting: the socket is not read")
        guard case .take("a", readMore: false) = state.demand(now: 0, waiter: { 1 }) else { Issue.record("a first, more waiting"); return }
        guard case .take("b", readMore: true) = state.demand(now: 0, waiter: { 1 }) else { Issue.record("b last: read again"); return }
        #expect(state.wantsRead)
    }

    @Test("takeReady hands over what is there and, when nothing is, changes nothing: no waiter, no idle clock")
    func takeReadyWithoutWaiting() {
        var state = State()
        #expect(state.takeReady() == nil)
        #expect(state.waitingSince == nil, "nothing waits: the idle clock is not running")
        #expect(state.wantsRead)
        state.partReceived("a")
        #expect(state.readCompleted().isNone, "no waiter was recorded, so nothing is handed over")
        guard case .take("a", readMore: true)? = state.takeReady() else { Issue.record("a, then read again"); return }
        #expect(state.takeReady() == nil)
        // After that, a demand still records its waiter as usual.
        #expect(take(&state, now: 3, waiter: 9) == "wait")
        guard case .alreadyWaiting? = state.takeReady() else { Issue.record("a waiter is recorded"); return }
        state.partReceived("b")
        guard case .deliver("b", to: 9) = state.readCompleted() else { Issue.record("b to waiter 9"); return }
        _ = state.finished()
        guard case .end? = state.takeReady() else { Issue.record("the end"); return }
        var failing = State()
        _ = failing.failed(Failure())
        guard case .fail? = failing.takeReady() else { Issue.record("the failure"); return }
    }

    @Test("a waiting consumer gets the first part when the read completes, not part by part during it")
    func handOverAtReadComplete() {
        var state = State()
        #expect(take(&state, now: 5, waiter: 7) == "wait")
        #expect(state.waitingSince == 5)
        state.partReceived("a")
        state.partReceived("b")
        guard case .deliver("a", to: 7) = state.readCompleted() else { Issue.record("a to waiter 7"); return }
        #expect(state.waitingSince == nil, "the idle clock stops once served")
        #expect(take(&state) == "b")
        guard case .none = state.readCompleted() else { Issue.record("nobody waits"); return }
    }

    @Test("one consumer at a time; the idle clock runs only while a consumer waits")
    func oneWaiter() {
        var state = State()
        #expect(state.waitingSince == nil, "no consumer waiting: a slow consumer is never timed out")
        #expect(take(&state, now: 3) == "wait")
        #expect(take(&state, now: 4) == "alreadyWaiting")
        #expect(state.waitingSince == 3)
    }

    @Test("the end: a waiting consumer gets the last parts, then the end; without one, they wait")
    func endings() {
        var waiting = State()
        #expect(take(&waiting, waiter: 9) == "wait")
        waiting.partReceived("last")
        guard case .deliver("last", to: 9) = waiting.finished() else { Issue.record("the last part to the waiter"); return }
        #expect(take(&waiting) == "end")

        var idle = State()
        #expect(take(&idle, waiter: 9) == "wait")
        guard case .end(9) = idle.finished() else { Issue.record("the waiter sees the end"); return }

        var unread = State()
        unread.partReceived("x")
        guard case .none = unread.finished() else { Issue.record("nobody to tell"); return }
        #expect(!unread.wantsRead, "the body is complete: nothing to read")
        // A cancellation after the whole body arrived changes nothing for a consumer still reading it.
        guard case .none = unread.failed(Failure()) else { Issue.record("nothing to fail"); return }
        #expect(take(&unread) == "x")
        #expect(take(&unread) == "end")
    }

    @Test("a failure fails the waiting consumer, and every later demand; later parts are dropped")
    func failures() {
        var state = State()
        #expect(take(&state, waiter: 4) == "wait")
        guard case .fail(4, _) = state.failed(Failure()) else { Issue.record("the waiter fails"); return }
        state.partReceived("late")
        #expect(take(&state) == "fail")
        guard case .none = state.failed(Failure()) else { Issue.record("the first failure wins"); return }
        #expect(!state.wantsRead)
    }
}

extension UpstreamBodyState.HandOver {
    var isNone: Bool { if case .none = self { true } else { false } }
}
