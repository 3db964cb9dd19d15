import SatchelCore
import SatchelHost
import Testing

@Suite("Trial judge: a release on trial judged from its page, as a state machine")
struct TrialJudgeTests {
    let start = ContinuousClock.now
    let subject = TrialJudge.Subject(
        id: try! PackageID("shop"), version: try! SemanticVersion("1.1.0"), schemes: ["satchel"], hosts: [try! HostPattern("m.shop.com")])
    let own = "satchel://m.shop.com/js/app.js"

    /// A page that loaded at 1 s and painted at 1.2 s.
    func healthyPage(_ judge: inout TrialJudge) {
        #expect(judge.navigationStarted(subject: subject, now: start) == [.scheduleCheck(after: .seconds(30))])
        #expect(judge.navigationCommitted(subject: subject, now: start + .milliseconds(100)) == [])
        #expect(judge.loadFinished(now: start + .seconds(1)) == [])
        #expect(judge.signal(.painted, now: start + .milliseconds(1200)) == [.scheduleCheck(after: .seconds(3))])
    }

    @Test("loaded and painted, then healthy for the grace period: confirmed, once")
    func confirms() {
        var judge = TrialJudge()
        healthyPage(&judge)
        #expect(judge.check(now: start + .seconds(3)) == [.scheduleCheck(after: .milliseconds(1200))], "the grace is counted from the paint")
        #expect(judge.check(now: start + .milliseconds(4200)) == [.confirm(subject)])
        #expect(judge.verdict(for: subject) == .confirmed)
        #expect(judge.signal(.error(message: "late", source: own), now: start + .seconds(5)) == [], "after the verdict nothing counts")
        #expect(judge.navigationStarted(subject: subject, now: start + .seconds(6)) == [], "a decided version is not judged again")
        #expect(judge.navigationCommitted(subject: subject, now: start + .seconds(6)) == [] && judge.judging == nil)
    }

    @Test("an error from the package's own script rolls back at once, with the message's first line")
    func ownError() {
        var judge = TrialJudge()
        healthyPage(&judge)
        let actions = judge.signal(.error(message: "TypeError: undefined is not an object\n  at start", source: own), now: start + .seconds(2))
        #expect(actions == [.rollBack(subject, .scriptError("TypeError: undefined is not an object"))])
        #expect(TrialFailure.scriptError("TypeError: undefined is not an object\n  at start").detail == "TypeError: undefined is not an object")
        #expect(judge.judging == nil)
    }

    @Test("what never counts: a cross-origin 'Script error.', another origin's script, a rejection from a failed request")
    func notCounted() {
        var judge = TrialJudge()
        healthyPage(&judge)
        #expect(judge.signal(.error(message: "Script error.", source: ""), now: start + .seconds(2)) == [])
        #expect(judge.signal(.error(message: "ads broke", source: "https://ads.example/ad.js"), now: start + .seconds(2)) == [])
        #expect(judge.signal(.rejection(message: "TypeError: Load failed", source: own, network: true), now: start + .seconds(2)) == [])
        #expect(judge.signal(.rejection(message: "x", source: "https://cdn.example/lib.js", network: false), now: start + .seconds(2)) == [])
        #expect(judge.signal(.resourceFailed(url: "https://cdn.example/font.css"), now: start + .seconds(2)) == [])
        // A rejection naming no script: a third-party SDK's string, or an API's error page that failed to parse.
        #expect(judge.signal(.rejection(message: "plain", source: "", network: false), now: start + .seconds(2)) == [])
        // The live website of the package's host is not the package.
        #expect(judge.signal(.error(message: "live", source: "https://m.shop.com/app.js"), now: start + .seconds(2)) == [])
        #expect(judge.check(now: start + .seconds(5)) == [.confirm(subject)], "an offline API never rolls back a good version")
    }

    @Test("what counts: the package's own rejection (or one with no script named) and a package file that failed to load")
    func counted() {
        for signal: TrialJudge.PageSignal in [
            .rejection(message: "Error: cart", source: own, network: false),
            .resourceFailed(url: "satchel://M.Shop.com/js/missing.js"), .error(message: "inline", source: "satchel://m.shop.com/index.html"),
        ] {
            var judge = TrialJudge()
            _ = judge.navigationStarted(subject: subject, now: start)
            _ = judge.navigationCommitted(subject: subject, now: start)
            let actions = judge.signal(signal, now: start + .milliseconds(100))
            #expect(actions.count == 1, "\(signal)")
            if case .rollBack(_, let failure)? = actions.first { #expect(failure.why == "script-error") } else { Issue.record("\(signal) did not roll back") }
        }
    }

    @Test("maxScriptErrors: the rollback waits for that many, and names the first")
    func errorThreshold() {
        var judge = TrialJudge(configuration: .init(maxScriptErrors: 2))
        healthyPage(&judge)
        #expect(judge.signal(.error(message: "first", source: own), now: start + .seconds(2)) == [])
        #expect(judge.signal(.error(message: "second", source: own), now: start + .seconds(2)) == [.rollBack(subject, .scriptError("first"))])
    }

    @Test("terminations: crash, memory and hang roll back with their names; the app's own termination does not count")
    func terminations() {
        for (reason, failure) in [(WebProcessRecovery.Reason.crashed, TrialFailure.crashed), (.exceededMemoryLimit, .exceededMemoryLimit), (.unresponsive, .unresponsive)] {
            var judge = TrialJudge()
            healthyPage(&judge)
            #expect(judge.recovery(.terminatedByAPI) == [])
            #expect(judge.recovery(reason) == [.rollBack(subject, failure)])
        }
        var tolerant = TrialJudge(configuration: .init(maxTerminations: 2))
        healthyPage(&tolerant)
        #expect(tolerant.recovery(.crashed) == [])
        // The recovery reloads the page: the same trial goes on, its count kept.
        #expect(tolerant.navigationStarted(subject: subject, now: start + .seconds(2)) == [.scheduleCheck(after: .seconds(30))])
        #expect(tolerant.navigationCommitted(subject: subject, now: start + .seconds(2)) == [])
        #expect(tolerant.recovery(.crashed) == [.rollBack(subject, .crashed)])
    }

    @Test("the load timeout: the container's, or no load, paint or ready() in time, names what was missing")
    func loadTimeout() {
        var stuck = TrialJudge()
        _ = stuck.navigationStarted(subject: subject, now: start)
        _ = stuck.navigationCommitted(subject: subject, now: start)
        #expect(stuck.recovery(.loadTimeout) == [.rollBack(subject, .loadTimeout("the navigation did not finish"))])

        var blank = TrialJudge(configuration: .init(loadTimeout: .seconds(10)))
        _ = blank.navigationStarted(subject: subject, now: start)
        _ = blank.navigationCommitted(subject: subject, now: start)
        _ = blank.loadFinished(now: start + .seconds(1))
        #expect(blank.check(now: start + .seconds(4)) == [.scheduleCheck(after: .seconds(6))])
        #expect(blank.check(now: start + .seconds(10)) == [.rollBack(subject, .loadTimeout("no first contentful paint within the load timeout"))])

        var notReady = TrialJudge(configuration: .init(loadTimeout: .seconds(10), requireReady: true))
        _ = notReady.navigationStarted(subject: subject, now: start)
        _ = notReady.navigationCommitted(subject: subject, now: start)
        _ = notReady.loadFinished(now: start + .seconds(1))
        #expect(notReady.signal(.painted, now: start + .seconds(1)) == [], "ready() is still missing: no confirmation is due")
        #expect(notReady.check(now: start + .seconds(10)) == [.rollBack(subject, .loadTimeout("no ready() within the load timeout"))])
    }

    @Test("ready() required: the grace is counted from the call")
    func readyRequired() {
        var judge = TrialJudge(configuration: .init(requireReady: true))
        _ = judge.navigationStarted(subject: subject, now: start)
        _ = judge.navigationCommitted(subject: subject, now: start)
        _ = judge.loadFinished(now: start + .seconds(1))
        _ = judge.signal(.painted, now: start + .seconds(1))
        #expect(judge.signal(.ready, now: start + .seconds(2)) == [.scheduleCheck(after: .seconds(3))])
        #expect(judge.check(now: start + .seconds(5)) == [.confirm(subject)])
    }

    @Test("a hidden or waiting page decides nothing; shown again, the load's clock and the grace start over")
    func paused() {
        var judge = TrialJudge(configuration: .init(loadTimeout: .seconds(10)))
        _ = judge.navigationStarted(subject: subject, now: start)
        _ = judge.navigationCommitted(subject: subject, now: start)
        judge.pause()
        #expect(judge.check(now: start + .seconds(60)) == [], "paused: no verdict however long")
        #expect(judge.resumed(now: start + .seconds(60)) == [.scheduleCheck(after: .zero)])
        #expect(judge.check(now: start + .seconds(61)) == [.scheduleCheck(after: .seconds(9))])
        _ = judge.loadFinished(now: start + .seconds(62))
        _ = judge.signal(.painted, now: start + .seconds(62))
        #expect(judge.check(now: start + .seconds(65)) == [.confirm(subject)])
        // A page healthy before a pause is given its whole grace again after it.
        var healthy = TrialJudge()
        healthyPage(&healthy)
        healthy.pause()
        _ = healthy.resumed(now: start + .seconds(4))
        #expect(healthy.check(now: start + .seconds(5)) == [.scheduleCheck(after: .seconds(2))])
    }

    @Test("the entry document's error status rolls back with its code when the package answered it; the network's does not")
    func entryStatus() {
        var judge = TrialJudge()
        _ = judge.navigationStarted(subject: subject, now: start)
        #expect(judge.entryStatus(200, answeredByPackage: true) == [])
        #expect(judge.entryStatus(502, answeredByPackage: false) == [], "a page served from the network while it is down")
        #expect(judge.entryStatus(404, answeredByPackage: true) == [.rollBack(subject, .entryStatus(404))])
        #expect(TrialFailure.entryStatus(404).detail == "404")
    }

    @Test("a failed navigation keeps the document shown and its health; WebKit's end of that load is no load")
    func failedNavigation() {
        var judge = TrialJudge()
        healthyPage(&judge)
        // A download (or a navigation the app cancelled) from the healthy page: the page stays, and is confirmed.
        _ = judge.navigationStarted(subject: subject, now: start + .seconds(2))
        judge.navigationFailed()
        #expect(judge.loadFinished(now: start + .seconds(2)) == [])
        #expect(judge.check(now: start + .milliseconds(4200)) == [.confirm(subject)])
        // The first navigation of a version failed before anything of it showed: nothing to judge.
        var first = TrialJudge()
        _ = first.navigationStarted(subject: subject, now: start)
        first.navigationFailed()
        #expect(first.judging == nil && first.check(now: start + .seconds(60)) == [])
    }

    @Test("a new document of the same version is judged from its own load and paint, the counts kept; a redirect away ends the judging")
    func newDocument() {
        var judge = TrialJudge(configuration: .init(maxScriptErrors: 2))
        healthyPage(&judge)
        #expect(judge.signal(.error(message: "first", source: own), now: start + .seconds(2)) == [])
        _ = judge.navigationStarted(subject: subject, now: start + .seconds(3))
        _ = judge.navigationCommitted(subject: subject, now: start + .seconds(3))
        #expect(judge.check(now: start + .seconds(8)) == [.scheduleCheck(after: .seconds(25))], "the new document has not loaded")
        #expect(judge.signal(.error(message: "second", source: own), now: start + .seconds(9)) == [.rollBack(subject, .scriptError("first"))])
        var redirected = TrialJudge()
        _ = redirected.navigationStarted(subject: subject, now: start)
        _ = redirected.navigationCommitted(subject: nil, now: start)
        #expect(redirected.judging == nil)
    }

    @Test("a wildcard host's pages are the package's own, on any port of the custom scheme, not on https")
    func wildcardHosts() {
        let wild = TrialJudge.Subject(id: subject.id, version: subject.version, schemes: ["satchel"], hosts: [try! HostPattern("*.shop.dev")])
        #expect(wild.owns("satchel://eu.shop.dev/app.js") && wild.owns("SATCHEL://EU.SHOP.DEV:8443/app.js"))
        #expect(!wild.owns("satchel://shop.dev/app.js") && !wild.owns("https://eu.shop.dev/app.js") && !wild.owns("satchel://a.b.shop.dev/x"))
        #expect(!wild.owns("") && !wild.owns("satchel:///x"))
    }

    @Test("leaving the package leaves the trial undecided; another view's verdict ends this one's judging")
    func leavingAndSettled() {
        var judge = TrialJudge()
        healthyPage(&judge)
        _ = judge.navigationStarted(subject: nil, now: start + .seconds(2))
        #expect(judge.navigationCommitted(subject: nil, now: start + .seconds(2)) == [])
        #expect(judge.check(now: start + .seconds(10)) == [])
        #expect(judge.verdict(for: subject) == nil)
        healthyPage(&judge)
        judge.settled(subject, .rolledBack(.crashed))
        #expect(judge.judging == nil)
        #expect(judge.signal(.error(message: "x", source: own), now: start + .seconds(2)) == [])
    }

    @Test("a reason is a report word; a detail is one line of at most 200 bytes")
    func failureShape() throws {
        #expect(throws: TrialFailureError.self) { try TrialFailure(why: "Script Error") }
        let long = try TrialFailure(why: "script-error", detail: "\n  " + String(repeating: "é", count: 150) + "\nsecond line")
        #expect(long.detail?.utf8.count == 200)
        #expect(long.detail?.contains("second") == false)
    }
}
