#if canImport(WebKit)
import Foundation
import SatchelCore
import SatchelHost
import SatchelEngine
import WebKit

/// Judging releases on trial in `WKWebView`s: ``TrialJudge``'s decisions carried out with WebKit's public API, the
/// counterpart of the WebKitGTK adapter's `ViewTrial`. ``SatchelWebViews`` owns one when the app passes its store
/// (`trials:`) and feeds it the navigation delegate's calls the app forwards (a navigation's start, its response, its
/// end), the hook's `satchelTrial` messages (``SatchelTrialMessageHandler``) and the recoveries of
/// ``WebContentRecovery``; a verdict is carried out by ``TrialCourt`` (the store, the engine re-pinned) and then for
/// every view by ``SatchelWebViews``.
///
/// Differences from WebKitGTK, both WebKit's: every termination is reported as `crashed` (Apple's WebKit gives no
/// reason), and a hung page is not terminated unless the app gave ``SatchelWebViews``'s `terminate`.
@MainActor
public final class WebContentTrials {
    public let court: TrialCourt
    private var judges: [ObjectIdentifier: ViewJudge] = [:]
    /// Carries a verdict out for every view (``SatchelWebViews`` sets it).
    var decided: ((WKWebView, TrialJudge.Subject, TrialJudge.Verdict) -> Void)?

    private final class ViewJudge {
        weak var webView: WKWebView?
        var judge: TrialJudge
        var check: Task<Void, Never>?
        var dialogWaiting = false
        init(webView: WKWebView, judge: TrialJudge) {
            self.webView = webView
            self.judge = judge
        }
    }

    public init(court: TrialCourt) {
        self.court = court
    }

    /// Judges `webView`'s pages from now on.
    public func attach(_ webView: WKWebView) {
        let key = ObjectIdentifier(webView)
        guard judges[key] == nil else { return }
        judges[key] = ViewJudge(webView: webView, judge: TrialJudge(configuration: court.configuration))
    }

    public func detach(_ webView: WKWebView) {
        judges.removeValue(forKey: ObjectIdentifier(webView))?.check?.cancel()
    }

    func didStartProvisionalNavigation(_ webView: WKWebView) {
        guard let viewJudge = judges[ObjectIdentifier(webView)] else { return }
        let subject = webView.url.flatMap { court.subject(for: $0.absoluteString) }
        perform(viewJudge.judge.navigationStarted(subject: subject, now: .now), on: viewJudge)
    }

    /// The main frame's response: its status is the entry document's, when the package answered it.
    func navigationResponse(_ webView: WKWebView, _ response: WKNavigationResponse) {
        guard response.isForMainFrame, let viewJudge = judges[ObjectIdentifier(webView)], let http = response.response as? HTTPURLResponse else { return }
        let answered = http.url.map { court.packageAnswers($0.absoluteString) } ?? false
        perform(viewJudge.judge.entryStatus(http.statusCode, answeredByPackage: answered), on: viewJudge)
    }

    /// A new document committed: the version that serves it is looked up again (a redirect may have led elsewhere).
    func didCommit(_ webView: WKWebView) {
        guard let viewJudge = judges[ObjectIdentifier(webView)] else { return }
        let subject = webView.url.flatMap { court.subject(for: $0.absoluteString) }
        perform(viewJudge.judge.navigationCommitted(subject: subject, now: .now), on: viewJudge)
    }

    func didFinish(_ webView: WKWebView) {
        guard let viewJudge = judges[ObjectIdentifier(webView)] else { return }
        perform(viewJudge.judge.loadFinished(now: .now), on: viewJudge)
    }

    /// Both failure callbacks: the document shown stays, with its health.
    func didFail(_ webView: WKWebView) {
        judges[ObjectIdentifier(webView)]?.judge.navigationFailed()
    }

    /// A dialog began or stopped holding `webView`'s page.
    func dialogWaiting(_ webView: WKWebView, _ waiting: Bool) {
        guard let viewJudge = judges[ObjectIdentifier(webView)] else { return }
        viewJudge.dialogWaiting = waiting
        pauseOrResume(viewJudge)
    }

    /// The app goes to the background (iOS suspends its web processes): no verdict is reached until ``resume()``,
    /// from which every page's load clock and grace period start over.
    public func pause() {
        appActive = false
        for viewJudge in judges.values { pauseOrResume(viewJudge) }
    }

    public func resume() {
        appActive = true
        for viewJudge in judges.values { pauseOrResume(viewJudge) }
    }

    private var appActive = true

    private func pauseOrResume(_ viewJudge: ViewJudge) {
        if !appActive || viewJudge.dialogWaiting {
            viewJudge.judge.pause()
        } else {
            perform(viewJudge.judge.resumed(now: .now), on: viewJudge)
        }
    }

    func recovered(_ webView: WKWebView, reason: WebProcessRecovery.Reason) {
        guard let viewJudge = judges[ObjectIdentifier(webView)] else { return }
        perform(viewJudge.judge.recovery(reason), on: viewJudge)
    }

    /// A `satchelTrial` message of an app frame (``SatchelTrialMessageHandler`` checked the frame).
    func received(_ body: Any, from webView: WKWebView) {
        guard let viewJudge = judges[ObjectIdentifier(webView)], viewJudge.judge.judging != nil, let object = body as? [String: Any] else { return }
        let network = (object["network"] as? Bool) ?? false
        guard let signal = court.signal(
            kind: object["kind"] as? String, message: object["message"] as? String, source: object["source"] as? String, network: network,
            token: object["token"] as? String)
        else { return }
        perform(viewJudge.judge.signal(signal, now: .now), on: viewJudge)
    }

    /// Another view (or the app) decided `subject`: every other view's judge stops judging it.
    func settle(_ subject: TrialJudge.Subject, _ verdict: TrialJudge.Verdict, except deciding: WKWebView) {
        for (key, viewJudge) in judges where key != ObjectIdentifier(deciding) { viewJudge.judge.settled(subject, verdict) }
    }

    private func perform(_ actions: [TrialJudge.Action], on viewJudge: ViewJudge) {
        guard let webView = viewJudge.webView else {
            judges = judges.filter { $0.value.webView != nil }
            return
        }
        for action in actions {
            switch action {
            case .scheduleCheck(let after):
                viewJudge.check?.cancel()
                viewJudge.check = Task { @MainActor [weak self, weak viewJudge] in
                    try? await Task.sleep(for: after)
                    guard !Task.isCancelled, let self, let viewJudge else { return }
                    self.perform(viewJudge.judge.check(now: .now), on: viewJudge)
                }
            case .confirm(let subject):
                decided?(webView, subject, .confirmed)
            case .rollBack(let subject, let failure):
                decided?(webView, subject, .rolledBack(failure))
            }
        }
    }
}

/// The hook's `satchelTrial` messages (a page's paint, `ready()`, errors): only frames of the app's origins are heard,
/// and each message carries a proof (``TrialCourt/signal(kind:message:source:network:token:)`` checks it).
@MainActor
public final class SatchelTrialMessageHandler: NSObject, WKScriptMessageHandler {
    public let pageSetup: PageSetup
    private weak var trials: WebContentTrials?

    public init(pageSetup: PageSetup, trials: WebContentTrials) {
        self.pageSetup = pageSetup
        self.trials = trials
    }

    public func userContentController(_ userContentController: WKUserContentController, didReceive message: WKScriptMessage) {
        guard pageSetup.admits(FrameOrigin(message.frameInfo.securityOrigin)), let webView = message.webView else { return }
        trials?.received(message.body, from: webView)
    }
}
#endif
