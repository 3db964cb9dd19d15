import Foundation
import SatchelCore
import SatchelHTTP
@testable import SatchelHost
import Testing

@Suite("JS dialogs always complete: the app's handler on screen, else the stated default, and never a hang")
struct ScriptDialogsTests {
    let start = ContinuousClock.now

    @Test("the default policy: an alert is acknowledged, a confirm dismissed, a prompt returns null, and a page may leave")
    func defaults() {
        #expect(ScriptDialogAnswer.default(for: .alert) == ScriptDialogAnswer(accepted: true))
        #expect(ScriptDialogAnswer.default(for: .confirm) == ScriptDialogAnswer(accepted: false))
        #expect(ScriptDialogAnswer.default(for: .prompt) == ScriptDialogAnswer(accepted: false))
        #expect(ScriptDialogAnswer.default(for: .beforeUnload) == ScriptDialogAnswer(accepted: true))
        #expect(ScriptDialogAnswer.default(for: .prompt).json(for: .prompt) == .null)
        #expect(ScriptDialogAnswer(accepted: true, text: "x").json(for: .prompt) == .string("x"))
        #expect(ScriptDialogAnswer(accepted: false, text: "x").text == nil, "a dismissed prompt has no text")
        #expect(ScriptDialogAnswer.default(for: .confirm).json(for: .confirm) == .bool(false))
    }

    @Test("without a handler, or off screen, every dialog is answered at once by the default and reported", arguments: [(false, true), (true, false), (false, false)])
    func answeredAtOnce(_ case: (hasHandler: Bool, visible: Bool)) {
        var dialogs = ScriptDialogs()
        for kind in ScriptDialog.Kind.allCases {
            let dialog = ScriptDialog(kind: kind, message: "m")
            let (id, actions) = dialogs.opened(dialog, hasHandler: `case`.hasHandler, visible: `case`.visible)
            let answer = ScriptDialogAnswer.default(for: kind)
            #expect(actions == [.answer(id: id, answer), .report(.init(dialog: dialog, answer: answer, answeredBy: .defaultPolicy))])
        }
        #expect(!dialogs.isWaiting)
    }

    @Test("on screen with a handler: the app answers; one that does not answer in time gets the default; a late answer changes nothing")
    func handler() {
        var dialogs = ScriptDialogs(configuration: .init(handlerTimeout: .seconds(10)))
        let prompt = ScriptDialog(kind: .prompt, message: "name?", defaultText: "guest")
        let (first, asked) = dialogs.opened(prompt, hasHandler: true, visible: true)
        #expect(asked == [.askHandler(id: first, prompt), .scheduleTimeout(id: first, after: .seconds(10))])
        #expect(dialogs.isWaiting)
        let typed = ScriptDialogAnswer(accepted: true, text: "Ada")
        #expect(dialogs.answered(first, with: typed) == [.answer(id: first, typed), .report(.init(dialog: prompt, answer: typed, answeredBy: .app))])
        #expect(dialogs.timedOut(first) == [], "answered already")

        let confirm = ScriptDialog(kind: .confirm, message: "sure?")
        let (second, _) = dialogs.opened(confirm, hasHandler: true, visible: true)
        #expect(second != first)
        let fallback = ScriptDialogAnswer.default(for: .confirm)
        #expect(dialogs.timedOut(second) == [.answer(id: second, fallback), .report(.init(dialog: confirm, answer: fallback, answeredBy: .timeout))])
        #expect(dialogs.answered(second, with: ScriptDialogAnswer(accepted: true)) == [], "too late: WebKit had its answer")
        #expect(!dialogs.isWaiting)
    }

    @Test("a dialog waiting for the app is not a hang: no probe, no verdict from WebKit's flag, no load timeout, until it closes")
    func notAHang() {
        var recovery = WebProcessRecovery(configuration: .init(unresponsiveTimeout: .seconds(5), heartbeat: .seconds(2), loadTimeout: .seconds(30)))
        _ = recovery.started()
        #expect(recovery.heartbeatDue(now: start, visible: true) == [.sendProbe(id: 1), .scheduleHeartbeat(after: .seconds(2))])
        recovery.dialogOpened()
        for second in stride(from: 2, through: 60, by: 2) {
            #expect(recovery.heartbeatDue(now: start + .seconds(second), visible: true) == [.scheduleHeartbeat(after: .seconds(2))])
        }
        #expect(recovery.responsivenessChanged(false, now: start + .seconds(10)) == [.scheduleResponsivenessCheck(after: .seconds(5))])
        #expect(recovery.responsivenessCheck(now: start + .seconds(20)) == [.scheduleResponsivenessCheck(after: .seconds(5))])
        recovery.dialogClosed()
        #expect(recovery.heartbeatDue(now: start + .seconds(62), visible: true) == [.sendProbe(id: 2), .scheduleHeartbeat(after: .seconds(2))])

        // A load held up by a dialog is not timed out while it waits.
        _ = recovery.navigationStarted(url: "satchel://m.shop.com/", now: start + .seconds(100))
        recovery.dialogOpened()
        #expect(recovery.loadCheck(now: start + .seconds(131)) == [.scheduleLoadCheck(after: .seconds(30))])
        recovery.dialogClosed(now: start + .seconds(140))
        #expect(recovery.loadCheck(now: start + .seconds(161)) == [.scheduleLoadCheck(after: .seconds(9))], "the dialog's 40 s are not the load's")
        #expect(recovery.loadCheck(now: start + .seconds(171)).first == .stopLoading)
        // Hidden: the load's clock starts over when it is checked (its process may be suspended).
        _ = recovery.navigationStarted(url: "satchel://m.shop.com/", now: start + .seconds(200))
        #expect(recovery.loadCheck(now: start + .seconds(231), visible: false) == [.scheduleLoadCheck(after: .seconds(30))])
        #expect(recovery.loadCheck(now: start + .seconds(250)) == [.scheduleLoadCheck(after: .seconds(11))])
        // A crash with a dialog open: the new page starts with none open, so it is probed again.
        recovery.dialogOpened()
        _ = recovery.processTerminated(.crashed, url: "satchel://m.shop.com/", now: start + .seconds(260))
        #expect(recovery.heartbeatDue(now: start + .seconds(262), visible: true).first == .sendProbe(id: 3))
    }
}

@Suite("Load progress for a progress bar")
struct LoadProgressTests {
    @Test("moves at once, rises quickly toward 0.9, never goes backwards within a navigation, and reaches 1 only on load")
    func smoothing() {
        var progress = LoadProgress()
        #expect(progress.estimate(0.35) == nil && progress.finished() == nil, "no navigation yet (WebKit's estimate moves for the initial blank page)")
        #expect(progress.navigationStarted() == 0.1)
        let estimates = [0.1, 0.25, 0.2, 0.5, 0.3, 0.8, 1.0, 0.95]
        var shown: [Double] = [0.1]
        for estimate in estimates {
            if let value = progress.estimate(estimate) { shown.append(value) }
        }
        #expect(zip(shown, shown.dropFirst()).allSatisfy { $0 < $1 }, "\(shown)")
        #expect(shown.last! <= LoadProgress.ceiling && shown.last! >= 0.85)
        #expect(shown[2] >= 0.5, "quick at first: an estimate of 0.25 shows half the way (\(shown))")
        #expect(progress.finished() == 1 && progress.finished() == nil)
        #expect(progress.estimate(0.5) == nil, "finished: nothing moves until the next navigation")
        #expect(progress.navigationStarted() == 0.1, "the next navigation starts over")
    }
}

@Suite("The app's name in the user agent")
struct ApplicationNameTests {
    @Test("name/version, each an RFC 9110 token; anything else is refused with the rule")
    func parsing() throws {
        let name = try ApplicationName(parsing: "Shop/2.3.0")
        #expect(name.name == "Shop" && name.version == "2.3.0" && name.description == "Shop/2.3.0")
        for bad in ["Shop", "Shop/", "/2.3", "Sh op/1", "Shop/1/2", "Shop/1;x", "Shöp/1", ""] {
            #expect(throws: ApplicationNameError.invalid(bad)) { try ApplicationName(parsing: bad) }
        }
    }

    @Test("the network fallback sends the app's user agent when the request carries none, and never replaces one")
    func fallback() throws {
        var policy = NetworkPolicy(allowedHosts: [try HostPattern("m.shop.com")])
        policy.userAgent = "WebKit Shop/2.3.0"
        let bare = try policy.upstreamRequestWithoutCookies(for: ResourceRequest(url: "https://m.shop.com/api"), upstreamURL: "https://m.shop.com/api")
        #expect(bare.headers["User-Agent"] == "WebKit Shop/2.3.0")
        let own = try policy.upstreamRequestWithoutCookies(
            for: ResourceRequest(url: "https://m.shop.com/api", headers: ["User-Agent": "the page's"]), upstreamURL: "https://m.shop.com/api")
        #expect(own.headers.values("User-Agent") == ["the page's"])
    }
}

@Suite("Back navigation: the first page shown is the root")
struct BackNavigationTests {
    @Test("a warm view's blank page is behind the root; back works only past the root")
    func root() {
        var back = BackNavigation()
        #expect(!back.canGoBack(webKitCanGoBack: true, backLength: 1), "no page shown yet")
        back.committed(url: "about:blank", backLength: 0)
        #expect(back.rootBackLength == nil)
        back.committed(url: "satchel://m.shop.com/", backLength: 1)  // the warm view's about:blank is behind it
        #expect(back.rootBackLength == 1)
        #expect(!back.canGoBack(webKitCanGoBack: true, backLength: 1), "on the root: the app leaves the view instead")
        back.committed(url: "satchel://m.shop.com/cart", backLength: 2)
        #expect(back.rootBackLength == 1, "the root stays the first page")
        #expect(back.canGoBack(webKitCanGoBack: true, backLength: 2))
        #expect(!back.canGoBack(webKitCanGoBack: false, backLength: 2), "WebKit has the last word")
    }
}

@Suite("Snapshots: the platform's unless it is blank, then the page's own")
struct SnapshotsTests {
    @Test("one color throughout is blank; one different pixel is not")
    func blank() {
        var pixels = [UInt8](repeating: 0, count: 4 * 64)
        #expect(pixels.withUnsafeBytes(Snapshots.isBlank))
        pixels = (0..<64).flatMap { _ in [255, 255, 255, 255] as [UInt8] }
        #expect(pixels.withUnsafeBytes(Snapshots.isBlank))
        pixels[4 * 37 + 1] = 0
        #expect(!pixels.withUnsafeBytes(Snapshots.isBlank))
        #expect([UInt8]().withUnsafeBytes(Snapshots.isBlank))
    }

    @Test("a page's answer counts only as a PNG data URL")
    func dataURL() {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 1, 2, 3]
        #expect(Snapshots.png(fromDataURL: "data:image/png;base64," + Data(png).base64EncodedString()) == Data(png))
        #expect(Snapshots.png(fromDataURL: "data:image/jpeg;base64," + Data(png).base64EncodedString()) == nil)
        #expect(Snapshots.png(fromDataURL: "data:image/png;base64," + Data("not a png".utf8).base64EncodedString()) == nil)
        #expect(Snapshots.png(fromDataURL: "data:image/png;base64,%%%") == nil)
    }
}
