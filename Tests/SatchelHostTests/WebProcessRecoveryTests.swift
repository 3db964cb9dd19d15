import SatchelHost
import Testing

@Suite("White-screen recovery: the decisions, as a state machine")
struct WebProcessRecoveryTests {
    let start = ContinuousClock.now
    let url = "satchel://m.shop.com/cart"

    @Test("a crash ends the view's tasks, reloads what it showed, tells the app, and tells the page once the load finished")
    func crash() {
        var recovery = WebProcessRecovery()
        #expect(recovery.processTerminated(.crashed, url: url, now: start) == [
            .stopTasks, .reload(url: url), .report(reason: .crashed, url: url, recovery: .reloaded(url: url)),
        ])
        #expect(recovery.loadFinished() == [.notifyPage(reason: .crashed)])
        #expect(recovery.loadFinished() == [], "the page hears it once")
    }

    @Test("the loop guard: a fourth termination within 60 s shows the offline page; spread out, each reloads")
    func loopGuard() {
        var recovery = WebProcessRecovery()
        for second in 0..<3 {
            let actions = recovery.processTerminated(.crashed, url: url, now: start + .seconds(second))
            #expect(actions.contains(.reload(url: url)), "termination \(second + 1)")
        }
        let fourth = recovery.processTerminated(.exceededMemoryLimit, url: url, now: start + .seconds(3))
        #expect(fourth == [.stopTasks, .showOfflinePage(url: url), .report(reason: .exceededMemoryLimit, url: url, recovery: .showedOfflinePage(url: url))])
        #expect(recovery.loadFinished() == [], "the offline page is not a recovery the page hears about")
        // Ten in a row stay on the offline page.
        for second in 4..<10 {
            #expect(recovery.processTerminated(.crashed, url: url, now: start + .seconds(second)).contains(.showOfflinePage(url: url)))
        }
        var spread = WebProcessRecovery()
        for minute in 0..<10 {
            #expect(spread.processTerminated(.crashed, url: url, now: start + .seconds(61 * minute)).contains(.reload(url: url)))
        }
    }

    @Test("the guard's numbers are settable")
    func settable() {
        var recovery = WebProcessRecovery(configuration: .init(maxTerminations: 1, window: .seconds(5)))
        #expect(recovery.processTerminated(.crashed, url: url, now: start).contains(.reload(url: url)))
        #expect(recovery.processTerminated(.crashed, url: url, now: start + .seconds(1)).contains(.showOfflinePage(url: url)))
        #expect(recovery.processTerminated(.crashed, url: url, now: start + .seconds(7)).contains(.reload(url: url)))
    }

    @Test("a view that had loaded nothing (a warm view) is neither reloaded nor sent to the offline page, and its deaths do not count")
    func nothingLoaded() {
        var recovery = WebProcessRecovery(configuration: .init(maxTerminations: 1))
        for second in 0..<3 {
            #expect(recovery.processTerminated(.terminatedByAPI, url: nil, now: start + .seconds(second))
                == [.stopTasks, .report(reason: .terminatedByAPI, url: nil, recovery: .nothingToRestore)])
        }
        #expect(recovery.loadFinished() == [])
        #expect(recovery.processTerminated(.crashed, url: url, now: start + .seconds(3)).contains(.reload(url: url)))
    }

    @Test("unresponsive past the timeout: terminate, and the termination that follows is reported as unresponsive")
    func unresponsive() {
        var recovery = WebProcessRecovery(configuration: .init(unresponsiveTimeout: .seconds(5), heartbeat: nil))
        #expect(recovery.started() == [], "no heartbeat asked for")
        #expect(recovery.responsivenessChanged(false, now: start) == [.scheduleResponsivenessCheck(after: .seconds(5))])
        #expect(recovery.responsivenessChanged(false, now: start + .seconds(1)) == [], "one check at a time")
        #expect(recovery.responsivenessCheck(now: start + .seconds(3)) == [.scheduleResponsivenessCheck(after: .seconds(2))])
        #expect(recovery.responsivenessCheck(now: start + .seconds(5)) == [.terminateWebProcess])
        #expect(recovery.responsivenessCheck(now: start + .seconds(6)) == [], "terminated once")
        let actions = recovery.processTerminated(.terminatedByAPI, url: url, now: start + .seconds(6))
        #expect(actions.last == .report(reason: .unresponsive, url: url, recovery: .reloaded(url: url)))
        #expect(recovery.loadFinished() == [.notifyPage(reason: .unresponsive)])
    }

    @Test("a view that responds again before the timeout is left alone")
    func respondsAgain() {
        var recovery = WebProcessRecovery(configuration: .init(unresponsiveTimeout: .seconds(5)))
        _ = recovery.responsivenessChanged(false, now: start)
        #expect(recovery.responsivenessChanged(true, now: start + .seconds(2)) == [])
        #expect(recovery.responsivenessCheck(now: start + .seconds(5)) == [])
    }

    @Test("the heartbeat: a probe answered in time keeps the view; one unanswered for the timeout terminates it once")
    func heartbeat() {
        var recovery = WebProcessRecovery(configuration: .init(unresponsiveTimeout: .seconds(5), heartbeat: .seconds(2)))
        #expect(recovery.started() == [.scheduleHeartbeat(after: .seconds(2))])
        #expect(recovery.started() == [], "one heartbeat per view")
        #expect(recovery.heartbeatDue(now: start, visible: true) == [.sendProbe(id: 1), .scheduleHeartbeat(after: .seconds(2))])
        recovery.probeAnswered(1)
        #expect(recovery.heartbeatDue(now: start + .seconds(2), visible: true) == [.sendProbe(id: 2), .scheduleHeartbeat(after: .seconds(2))])
        recovery.probeAnswered(1)  // a stale answer changes nothing
        #expect(recovery.heartbeatDue(now: start + .seconds(4), visible: true) == [.scheduleHeartbeat(after: .seconds(2))], "probe 2 waited 2 s of 5")
        #expect(recovery.heartbeatDue(now: start + .seconds(6), visible: true) == [.scheduleHeartbeat(after: .seconds(1))], "checked again when its 5 s are up")
        #expect(recovery.heartbeatDue(now: start + .seconds(7), visible: true) == [.terminateWebProcess, .scheduleHeartbeat(after: .seconds(2))])
        #expect(recovery.heartbeatDue(now: start + .seconds(8), visible: true) == [.scheduleHeartbeat(after: .seconds(2))], "terminated once, waiting for the termination")
        let actions = recovery.processTerminated(.terminatedByAPI, url: url, now: start + .seconds(8))
        #expect(actions.last == .report(reason: .unresponsive, url: url, recovery: .reloaded(url: url)))
        #expect(recovery.heartbeatDue(now: start + .seconds(10), visible: true) == [.sendProbe(id: 3), .scheduleHeartbeat(after: .seconds(2))], "the new process is probed")
    }

    @Test("a probe outstanding when the process dies is forgotten: the new process starts with a clean slate")
    func probeAcrossTermination() {
        var recovery = WebProcessRecovery(configuration: .init(unresponsiveTimeout: .seconds(5), heartbeat: .seconds(2)))
        _ = recovery.started()
        _ = recovery.heartbeatDue(now: start, visible: true)
        _ = recovery.processTerminated(.crashed, url: url, now: start + .seconds(1))
        #expect(recovery.heartbeatDue(now: start + .seconds(6), visible: true) == [.sendProbe(id: 2), .scheduleHeartbeat(after: .seconds(2))])
    }

    @Test("a paused heartbeat sends nothing until started again (a suspended app's processes cannot answer)")
    func paused() {
        var recovery = WebProcessRecovery(configuration: .init(unresponsiveTimeout: .seconds(5), heartbeat: .seconds(2)))
        _ = recovery.started()
        _ = recovery.heartbeatDue(now: start, visible: true)
        recovery.pauseHeartbeat()
        #expect(recovery.heartbeatDue(now: start + .seconds(60), visible: true) == [], "no termination for a probe sent before the pause")
        #expect(recovery.started() == [.scheduleHeartbeat(after: .seconds(2))])
        #expect(recovery.heartbeatDue(now: start + .seconds(62), visible: true) == [.sendProbe(id: 2), .scheduleHeartbeat(after: .seconds(2))])
    }

    @Test("off screen, no hang verdict: a hidden view gets no probe, one outstanding is forgotten, and WebKit's flag waits for it to show")
    func offScreen() {
        var recovery = WebProcessRecovery(configuration: .init(unresponsiveTimeout: .seconds(5), heartbeat: .seconds(2)))
        _ = recovery.started()
        #expect(recovery.heartbeatDue(now: start, visible: false) == [.scheduleHeartbeat(after: .seconds(2))])
        // Probed while shown, then hidden (iOS suspends its process): the silence is not a hang.
        #expect(recovery.heartbeatDue(now: start + .seconds(2), visible: true) == [.sendProbe(id: 1), .scheduleHeartbeat(after: .seconds(2))])
        for second in stride(from: 4, through: 40, by: 2) {
            #expect(recovery.heartbeatDue(now: start + .seconds(second), visible: false) == [.scheduleHeartbeat(after: .seconds(2))])
        }
        #expect(recovery.heartbeatDue(now: start + .seconds(42), visible: true) == [.sendProbe(id: 2), .scheduleHeartbeat(after: .seconds(2))], "shown again: a new probe, the old one forgotten")
        // WebKit's own flag: unresponsive while hidden is checked again, not terminated.
        #expect(recovery.responsivenessChanged(false, now: start + .seconds(50)) == [.scheduleResponsivenessCheck(after: .seconds(5))])
        #expect(recovery.responsivenessCheck(now: start + .seconds(60), visible: false) == [.scheduleResponsivenessCheck(after: .seconds(5))])
        #expect(recovery.responsivenessCheck(now: start + .seconds(65), visible: true) == [.terminateWebProcess])
    }

    @Test("mid-navigation, no probe: a navigation that does not finish within the load timeout is stopped as load-timeout, with the offline page")
    func loadTimeout() {
        var recovery = WebProcessRecovery(configuration: .init(unresponsiveTimeout: .seconds(5), heartbeat: .seconds(2), loadTimeout: .seconds(30)))
        _ = recovery.started()
        #expect(recovery.heartbeatDue(now: start, visible: true) == [.sendProbe(id: 1), .scheduleHeartbeat(after: .seconds(2))])
        #expect(recovery.navigationStarted(url: url, now: start + .seconds(1)) == [.scheduleLoadCheck(after: .seconds(30))])
        // The probe sent before the navigation is forgotten, and none goes out during it, however long it takes.
        for second in stride(from: 2, through: 30, by: 2) {
            #expect(recovery.heartbeatDue(now: start + .seconds(second), visible: true) == [.scheduleHeartbeat(after: .seconds(2))])
        }
        #expect(recovery.loadCheck(now: start + .seconds(20)) == [.scheduleLoadCheck(after: .seconds(11))])
        #expect(recovery.loadCheck(now: start + .seconds(31)) == [
            .stopLoading, .stopTasks, .showOfflinePage(url: url), .report(reason: .loadTimeout, url: url, recovery: .showedOfflinePage(url: url)),
        ])
        #expect(recovery.loadCheck(now: start + .seconds(40)) == [], "stopped once")
        // The offline page is shown (not a navigation of its own): probes resume.
        #expect(recovery.heartbeatDue(now: start + .seconds(42), visible: true) == [.sendProbe(id: 2), .scheduleHeartbeat(after: .seconds(2))])
        // A navigation that finishes in time, or fails, leaves nothing to check.
        #expect(recovery.navigationStarted(url: url, now: start + .seconds(50)) == [.scheduleLoadCheck(after: .seconds(30))])
        _ = recovery.loadFinished()
        #expect(recovery.loadCheck(now: start + .seconds(90)) == [])
        _ = recovery.navigationStarted(url: url, now: start + .seconds(100))
        recovery.navigationFailed()
        #expect(recovery.loadCheck(now: start + .seconds(140)) == [])
        // Without a load timeout, a navigation is never stopped.
        var unbounded = WebProcessRecovery(configuration: .init(loadTimeout: nil))
        #expect(unbounded.navigationStarted(url: url, now: start) == [])
        #expect(unbounded.loadCheck(now: start + .seconds(3600)) == [])
    }

    @Test("a termination mid-navigation ends the navigation: the recovery reload's own timeout starts with its start")
    func terminationMidNavigation() {
        var recovery = WebProcessRecovery(configuration: .init(loadTimeout: .seconds(30)))
        _ = recovery.navigationStarted(url: url, now: start)
        _ = recovery.processTerminated(.crashed, url: url, now: start + .seconds(10))
        #expect(recovery.loadCheck(now: start + .seconds(31)) == [])
    }
}
