import NIOCore

/// The response-head deadlines of the exchanges on one event loop, kept with one timer armed for the earliest.
///
/// A NIO task scheduled and cancelled per request (a promise, a closure, a locked heap insertion and a linear
/// removal) was a visible share of a proxied 4 KB miss; here an exchange costs one dictionary insertion when it
/// starts and one removal when its head comes. The timer fires at the earliest deadline it was armed for, times
/// out what is due, and re-arms for the earliest left; an exchange added with an earlier deadline than the armed
/// one re-arms it at once, so no deadline is ever late by more than the event loop's own scheduling.
///
/// Every method runs on ``eventLoop``.
final class HeadDeadlines {
    private let eventLoop: any EventLoop
    private var waiting: [ObjectIdentifier: (deadline: NIODeadline, exchange: UpstreamExchange)] = [:]
    private var timer: Scheduled<Void>?
    private var armedFor: NIODeadline?

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// The exchanges still waiting for their head (tests).
    var count: Int { waiting.count }

    /// `exchange` times out (``UpstreamExchange/headTimedOut()``) at `deadline` unless removed before.
    func add(_ exchange: UpstreamExchange, deadline: NIODeadline) {
        waiting[ObjectIdentifier(exchange)] = (deadline, exchange)
        if let armedFor, armedFor <= deadline { return }
        arm(deadline)
    }

    /// The head came, or the exchange ended: no timeout. Removing what is not there does nothing.
    func remove(_ exchange: UpstreamExchange) {
        waiting.removeValue(forKey: ObjectIdentifier(exchange))
    }

    private func arm(_ deadline: NIODeadline) {
        timer?.cancel()
        armedFor = deadline
        timer = eventLoop.scheduleTask(deadline: deadline) { [self] in fire() }
    }

    private func fire() {
        timer = nil
        armedFor = nil
        let now = NIODeadline.now()
        var due: [UpstreamExchange] = []
        var next: NIODeadline?
        for (key, entry) in waiting {
            if entry.deadline <= now {
                due.append(entry.exchange)
                waiting.removeValue(forKey: key)
            } else if next.map({ entry.deadline < $0 }) ?? true {
                next = entry.deadline
            }
        }
        if let next { arm(next) }
        // Last: a timed-out exchange's consumer runs from here and may start another exchange (which re-arms).
        for exchange in due { exchange.headTimedOut() }
    }
}
