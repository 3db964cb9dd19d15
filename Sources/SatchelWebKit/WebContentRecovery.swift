#if canImport(WebKit)
import Foundation
import SatchelCore
import SatchelHost
import SatchelEngine
import SatchelHTTP
import WebKit

/// White-screen recovery for `WKWebView`s: ``WebProcessRecovery``'s decisions carried out with WebKit's public API.
/// The app forwards its navigation delegate's calls (``webContentProcessDidTerminate(_:)`` from
/// `webViewWebContentProcessDidTerminate(_:)`, ``didStartProvisionalNavigation(_:)``, ``didFinish(_:)``, and
/// ``didFail(_:)`` from both failure callbacks) and ``attach(_:)``es each view it creates; the driver is the one its
/// ``SatchelSchemeHandler`` uses, which groups tasks by view. A view is probed only while shown (in a window, not
/// hidden: a warm view waiting in ``WarmWebViewPool`` is in none, and iOS suspends the processes of views it does not
/// show) and never mid-navigation, where WebKit may never call a script back; a navigation that outlasts the load
/// timeout is stopped and shows the offline page (`load-timeout`).
///
/// Differences from WebKitGTK, both WebKit's: Apple's WebKit does not say why the process ended (every termination is
/// reported as `crashed`; the memory limit is the usual cause on iOS), and has no public call that terminates a web
/// process. So the heartbeat is off unless the app passes `terminate`, what to do with a view whose page stopped
/// answering (for example: take it out of its window and open the same URL in a warm view from ``WarmWebViewPool``).
@MainActor
public final class WebContentRecovery {
    /// What the app hears after a view's web content process ended.
    public struct Report {
        public weak var webView: WKWebView?
        public let reason: WebProcessRecovery.Reason
        public let url: String?
        public let recovery: WebProcessRecovery.Recovery
        public let tasksStopped: Int
    }

    public let driver: SchemeTaskDriver
    public let engine: ResourceEngine
    public var onRecovery: ((Report) -> Void)?
    /// Told after the app: the view's judge of a trial hears why its page ended (``SatchelWebViews`` sets it).
    var recovered: ((WKWebView, WebProcessRecovery.Reason) -> Void)?
    private let configuration: WebProcessRecovery.Configuration
    private let terminate: ((WKWebView) -> Void)?
    private var guards: [ObjectIdentifier: ViewGuard] = [:]

    private final class ViewGuard {
        weak var webView: WKWebView?
        var machine: WebProcessRecovery
        var heartbeat: Task<Void, Never>?
        var tasksStopped = 0
        init(webView: WKWebView, machine: WebProcessRecovery) {
            self.webView = webView
            self.machine = machine
        }
    }

    /// - Parameter terminate: ends a view whose page stopped answering the heartbeat; nil turns the heartbeat off.
    public init(
        driver: SchemeTaskDriver, engine: ResourceEngine, configuration: WebProcessRecovery.Configuration = WebProcessRecovery.Configuration(),
        terminate: ((WKWebView) -> Void)? = nil
    ) {
        self.driver = driver
        self.engine = engine
        self.terminate = terminate
        var configuration = configuration
        if terminate == nil { configuration.heartbeat = nil }
        self.configuration = configuration
    }

    /// Guards `webView` from now on (its heartbeat starts).
    public func attach(_ webView: WKWebView) {
        let key = ObjectIdentifier(webView)
        guard guards[key] == nil else { return }
        let viewGuard = ViewGuard(webView: webView, machine: WebProcessRecovery(configuration: configuration))
        guards[key] = viewGuard
        perform(viewGuard.machine.started(), on: viewGuard)
    }

    /// Stops guarding `webView` (the app is done with it).
    public func detach(_ webView: WKWebView) {
        guards.removeValue(forKey: ObjectIdentifier(webView))?.heartbeat?.cancel()
    }

    /// From the navigation delegate's `webViewWebContentProcessDidTerminate(_:)`.
    public func webContentProcessDidTerminate(_ webView: WKWebView) {
        guard let viewGuard = guards[ObjectIdentifier(webView)] else { return }
        let url = webView.url?.absoluteString.nilIfBlank
        perform(viewGuard.machine.processTerminated(.crashed, url: url, now: .now), on: viewGuard)
    }

    /// From the navigation delegate's `webView(_:didStartProvisionalNavigation:)`.
    public func didStartProvisionalNavigation(_ webView: WKWebView) {
        guard let viewGuard = guards[ObjectIdentifier(webView)] else { return }
        perform(viewGuard.machine.navigationStarted(url: webView.url?.absoluteString ?? "", now: .now), on: viewGuard)
    }

    /// From the navigation delegate's `webView(_:didFinish:)`.
    public func didFinish(_ webView: WKWebView) {
        guard let viewGuard = guards[ObjectIdentifier(webView)] else { return }
        perform(viewGuard.machine.loadFinished(), on: viewGuard)
    }

    /// From the navigation delegate's `webView(_:didFail:withError:)` and `webView(_:didFailProvisionalNavigation:withError:)`.
    public func didFail(_ webView: WKWebView) {
        guards[ObjectIdentifier(webView)]?.machine.navigationFailed()
    }

    /// A script dialog of `webView` waits for the app (``SatchelDialogs``): the page is not hung meanwhile.
    public func dialogOpened(_ webView: WKWebView) {
        guards[ObjectIdentifier(webView)]?.machine.dialogOpened()
    }

    public func dialogClosed(_ webView: WKWebView) {
        guards[ObjectIdentifier(webView)]?.machine.dialogClosed()
    }

    /// Whether `webView` is on screen: in a window and not hidden.
    static func isShown(_ webView: WKWebView) -> Bool {
        #if canImport(UIKit)
        webView.window != nil && !webView.isHidden
        #elseif canImport(AppKit)
        webView.window?.isVisible == true && !webView.isHiddenOrHasHiddenAncestor
        #else
        true
        #endif
    }

    /// The app goes to the background, where iOS suspends web processes: no probes until ``resumeHeartbeats()``.
    public func pauseHeartbeats() {
        for viewGuard in guards.values {
            viewGuard.machine.pauseHeartbeat()
            viewGuard.heartbeat?.cancel()
            viewGuard.heartbeat = nil
        }
    }

    public func resumeHeartbeats() {
        for viewGuard in guards.values { perform(viewGuard.machine.started(), on: viewGuard) }
    }

    private func perform(_ actions: [WebProcessRecovery.Action], on viewGuard: ViewGuard) {
        guard let webView = viewGuard.webView else {
            guards = guards.filter { $0.value.webView != nil }
            return
        }
        for action in actions {
            switch action {
            case .stopTasks:
                viewGuard.tasksStopped = driver.stopAll(in: ObjectIdentifier(webView))
            case .reload(let url):
                if let target = URL(string: url) { webView.load(URLRequest(url: target)) }
            case .showOfflinePage(let url):
                webView.loadHTMLString(engine.offlinePageHTML(for: url), baseURL: URL(string: url))
            case .terminateWebProcess:
                terminate?(webView)
            case .stopLoading:
                webView.stopLoading()
            case .scheduleLoadCheck(let after):
                Task { @MainActor [weak self, weak viewGuard] in
                    try? await Task.sleep(for: after)
                    guard let self, let viewGuard else { return }
                    self.perform(viewGuard.machine.loadCheck(now: .now, visible: viewGuard.webView.map(Self.isShown) ?? false), on: viewGuard)
                }
            case .scheduleResponsivenessCheck:
                // Apple's WebKit has no public responsiveness flag: nothing ever starts this check.
                break
            case .scheduleHeartbeat(let after):
                viewGuard.heartbeat?.cancel()
                viewGuard.heartbeat = Task { @MainActor [weak self, weak viewGuard] in
                    try? await Task.sleep(for: after)
                    guard !Task.isCancelled, let self, let viewGuard else { return }
                    self.perform(viewGuard.machine.heartbeatDue(now: .now, visible: viewGuard.webView.map(Self.isShown) ?? false), on: viewGuard)
                }
            case .sendProbe(let id):
                // Any answer counts, an error too: the process replied. A stuck process does not reply at all.
                webView.evaluateJavaScript(WebProcessRecovery.probeScript) { [weak viewGuard] _, _ in
                    viewGuard?.machine.probeAnswered(id)
                }
            case .notifyPage(let reason):
                webView.evaluateJavaScript(WebProcessRecovery.pageNotice(reason), completionHandler: nil)
            case .report(let reason, let url, let recovery):
                onRecovery?(Report(webView: webView, reason: reason, url: url, recovery: recovery, tasksStopped: viewGuard.tasksStopped))
                recovered?(webView, reason)
            }
        }
    }
}

extension String {
    fileprivate var nilIfBlank: String? { isEmpty || self == "about:blank" ? nil : self }
}
#endif
