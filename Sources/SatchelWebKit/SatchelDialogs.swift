#if canImport(WebKit)
import Foundation
import SatchelCore
import SatchelHost
import WebKit

/// JS dialogs for `WKWebView`s (``ScriptDialogs``): the `WKUIDelegate` every view from ``SatchelWebViews/makeWebView()``
/// gets (an app with a delegate of its own forwards the three panel calls here). Each dialog completes exactly once:
/// the app's ``handler`` answers for a view on screen, the default answers otherwise or when the handler is late, and
/// WebKit's completion handler is always called (an unanswered one ends the app on iOS). While the app's handler has
/// a dialog the view's recovery knows the page is waiting, not hung. `beforeunload` has no public panel on Apple's
/// WebKit; WebKit lets the page leave.
@MainActor
public final class SatchelDialogs: NSObject, WKUIDelegate {
    /// Asked for each dialog of a view on screen; answers once, from any thread.
    public var handler: ((WKWebView, ScriptDialog, @escaping @Sendable (ScriptDialogAnswer) -> Void) -> Void)?
    /// Told of every dialog and how it was answered.
    public var onReport: ((WKWebView, ScriptDialogs.Report) -> Void)?
    private let recovery: WebContentRecovery
    /// Told when a view's page begins waiting on a dialog (true) and when its last one is answered (false).
    var waitingChanged: ((WKWebView, Bool) -> Void)?
    private var machines: [ObjectIdentifier: ScriptDialogs] = [:]
    private var completions: [ObjectIdentifier: [Int: (ScriptDialogAnswer) -> Void]] = [:]
    private let configuration: ScriptDialogs.Configuration

    public init(recovery: WebContentRecovery, configuration: ScriptDialogs.Configuration = ScriptDialogs.Configuration()) {
        self.recovery = recovery
        self.configuration = configuration
    }

    public func webView(
        _ webView: WKWebView, runJavaScriptAlertPanelWithMessage message: String, initiatedByFrame frame: WKFrameInfo,
        completionHandler: @escaping @MainActor @Sendable () -> Void
    ) {
        open(ScriptDialog(kind: .alert, message: message), in: webView) { _ in completionHandler() }
    }

    public func webView(
        _ webView: WKWebView, runJavaScriptConfirmPanelWithMessage message: String, initiatedByFrame frame: WKFrameInfo,
        completionHandler: @escaping @MainActor @Sendable (Bool) -> Void
    ) {
        open(ScriptDialog(kind: .confirm, message: message), in: webView) { completionHandler($0.accepted) }
    }

    public func webView(
        _ webView: WKWebView, runJavaScriptTextInputPanelWithPrompt prompt: String, defaultText: String?, initiatedByFrame frame: WKFrameInfo,
        completionHandler: @escaping @MainActor @Sendable (String?) -> Void
    ) {
        open(ScriptDialog(kind: .prompt, message: prompt, defaultText: defaultText), in: webView) { completionHandler($0.text) }
    }

    private func open(_ dialog: ScriptDialog, in webView: WKWebView, complete: @escaping (ScriptDialogAnswer) -> Void) {
        let key = ObjectIdentifier(webView)
        var machine = machines[key] ?? ScriptDialogs(configuration: configuration)
        let (id, actions) = machine.opened(dialog, hasHandler: handler != nil, visible: WebContentRecovery.isShown(webView))
        machines[key] = machine
        completions[key, default: [:]][id] = complete
        perform(actions, in: webView)
    }

    /// Actions for a dialog answered later: carried out while the view lives; once it is gone, WebKit still gets its
    /// answer (the completion handler must be called) and the view's state goes.
    private func settle(_ key: ObjectIdentifier, actions: [ScriptDialogs.Action], in webView: WKWebView?) {
        if let webView { return perform(actions, in: webView) }
        for case .answer(let id, let answer) in actions { completions[key]?.removeValue(forKey: id)?(answer) }
        forget(key)
    }

    /// Per-view state goes with the view's last dialog (a new view at the same address starts clean).
    private func forget(_ key: ObjectIdentifier) {
        guard completions[key]?.isEmpty ?? true else { return }
        completions[key] = nil
        machines[key] = nil
        asked[key] = nil
    }

    private var asked: [ObjectIdentifier: Set<Int>] = [:]

    private func perform(_ actions: [ScriptDialogs.Action], in webView: WKWebView) {
        let key = ObjectIdentifier(webView)
        for action in actions {
            switch action {
            case .askHandler(let id, let dialog):
                recovery.dialogOpened(webView)
                waitingChanged?(webView, true)
                asked[key, default: []].insert(id)
                handler?(webView, dialog) { [weak self, weak webView] answer in
                    Task { @MainActor in
                        guard let self else { return }
                        self.settle(key, actions: self.machines[key]?.answered(id, with: answer) ?? [], in: webView)
                    }
                }
            case .scheduleTimeout(let id, let after):
                Task { @MainActor [weak self, weak webView] in
                    try? await Task.sleep(for: after)
                    guard let self else { return }
                    self.settle(key, actions: self.machines[key]?.timedOut(id) ?? [], in: webView)
                }
            case .answer(let id, let answer):
                guard let complete = completions[key]?.removeValue(forKey: id) else { continue }
                // WebKit's completion handler is called, always once, whatever became of the view.
                complete(answer)
                if asked[key]?.remove(id) != nil {
                    recovery.dialogClosed(webView)
                    if asked[key]?.isEmpty ?? true { waitingChanged?(webView, false) }
                }
                if completions[key]?.isEmpty == true { forget(key) }
            case .report(let report):
                onReport?(webView, report)
            }
        }
    }
}

/// A view's load progress for a progress bar (``LoadProgress``): the app forwards the navigation delegate's start,
/// finish and failure and its key-value observation of `estimatedProgress`, and hears each new value in ``onChange``.
@MainActor
public final class WebLoadProgress {
    public var onChange: ((WKWebView, Double) -> Void)?
    private var states: [ObjectIdentifier: LoadProgress] = [:]

    public init() {}

    /// From `webView(_:didStartProvisionalNavigation:)`.
    public func didStartProvisionalNavigation(_ webView: WKWebView) {
        update(webView) { $0.navigationStarted() }
    }

    /// From the observation of `webView.estimatedProgress`.
    public func estimatedProgressChanged(_ webView: WKWebView) {
        let estimate = webView.estimatedProgress
        update(webView) { $0.estimate(estimate) }
    }

    /// From `webView(_:didFinish:)` and both failure callbacks.
    public func didFinish(_ webView: WKWebView) {
        update(webView) { $0.finished() }
    }

    private func update(_ webView: WKWebView, _ change: (inout LoadProgress) -> Double?) {
        var state = states[ObjectIdentifier(webView)] ?? LoadProgress()
        let value = change(&state)
        states[ObjectIdentifier(webView)] = state
        if let value { onChange?(webView, value) }
    }
}
#endif
