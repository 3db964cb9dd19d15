#if canImport(WebKit)
import Foundation
import SatchelCore
import SatchelHost
import SatchelEngine
import SatchelHTTP
import WebKit

/// Satchel in an app on Apple platforms, the counterpart of the WebKitGTK adapter's `SatchelWebContext`: one website
/// data store and process pool for every view, custom schemes the engine answers, the app's cookie jar on the data
/// store's `WKHTTPCookieStore`, the hook (bodies, `document.cookie`, `window.satchel`) in the app's pages, the bridge,
/// and white-screen recovery. The logic is the shared, Linux-tested types; this class only wires WebKit to them.
///
/// ```swift
/// let satchel = SatchelWebViews(engine: engine, policy: policy, fetcher: URLSessionFetcher(),
///                               hook: HookScript.Configuration(origins: ["satchel://m.shop.com"]))
/// satchel.bridge.register("login") { params in … }
/// let webView = satchel.makeWebView()            // or from a WarmWebViewPool(make: satchel.makeWebView)
/// webView.navigationDelegate = myDelegate       // forwarding to satchel.recovery (see WebContentRecovery)
/// webView.load(URLRequest(url: URL(string: "satchel://m.shop.com/")!))
/// ```
@MainActor
public final class SatchelWebViews {
    public let engine: ResourceEngine
    public let driver: SchemeTaskDriver
    public let schemeHandler: SatchelSchemeHandler
    public let cookies: AppCookieJar
    public let bridge: AppBridge
    public let recovery: WebContentRecovery
    /// Every view's JS dialogs (its `uiDelegate`): set ``SatchelDialogs/handler`` to show them.
    public let dialogs: SatchelDialogs
    /// Every view's load progress, for a progress bar (the app forwards its observation of `estimatedProgress`).
    public let progress = WebLoadProgress()
    /// The app's name and version in every view's user agent (`applicationNameForUserAgent`), or nil.
    public let applicationName: ApplicationName?
    /// How pages may play media, set on each view's configuration before the view is made (``MediaPolicy``).
    public let media: MediaPolicy
    public let dataStore: WKWebsiteDataStore
    public let processPool: WKProcessPool
    /// The app's HTTP cache, when the fetcher has one.
    public let responseCache: (any ResponseCache)?
    /// The request layer every task goes through, with a WebKit adapter's ``HostConfiguration``.
    public let layer: RequestLayer
    /// What each view gets for the app's pages (nil: no hook, and every request that may carry a body is refused by
    /// the engine): the one page set-up both WebKit adapters install.
    public var pageSetup: PageSetup? { layer.pageSetup }
    /// The hook's source (``PageSetup/script``).
    public var hookScript: String? { pageSetup?.script }
    /// The origins the hook serves: native code calls into a view only while it shows one.
    public var appOrigins: [String] { pageSetup?.origins ?? [] }
    /// The judges of releases on trial (nil when the app passed no store, or no hook).
    public let trials: WebContentTrials?
    /// The launch that shows the app's pages: counted against the store's trials, and its versions pinned, before the
    /// first page is answered (decision 0036); nil when the app passed no store.
    public let launch: PageLaunch?
    /// Told of each trial a view decided, after the store and every view were brought in line.
    public var trialHandler: ((WKWebView?, TrialReport) -> Void)?
    private let trialMessages: SatchelTrialMessageHandler?
    private let terminate: ((WKWebView) -> Void)?
    private var pools: [WeakPool] = []

    private final class WeakPool {
        weak var pool: WarmWebViewPool?
        init(_ pool: WarmWebViewPool) { self.pool = pool }
    }

    private let bodies: SatchelBodyMessageHandler
    private let bridgeMessages: SatchelBridgeMessageHandler?
    private var views: [WeakView] = []

    private final class WeakView {
        weak var view: WKWebView?
        init(_ view: WKWebView) { self.view = view }
    }

    /// - Parameters:
    ///   - fetcher: how misses reach the network (`URLSessionFetcher` on Apple platforms), wrapped in SatchelCache's
    ///     `CachingFetcher` (private mode) for the app's HTTP cache: logging out (``AppCookieJar/clear()``) then
    ///     empties it too.
    ///   - ephemeral: a data store that keeps nothing on disk (cookies included).
    ///   - trials: where the versions on trial are (the app's `PackageStore`). The first page a view asks for begins the
    ///     launch that shows pages (``launch``): the store counts it against every trial, so a process that only
    ///     updates in the background spends none, and the app never counts launches itself. With the hook, each view
    ///     also judges a page served from a version on trial (``TrialJudge``, ``trials``) and confirms it, or rolls it
    ///     back with its reason and shows the fallback in every view. nil: no launch counted, no judging.
    ///   - trialJudging: the judge's grace period, load timeout, thresholds and whether `ready()` is required.
    ///   - terminate: what to do with a view whose page stopped answering (Apple's WebKit cannot terminate a web
    ///     process); nil turns the heartbeat off (see ``WebContentRecovery``).
    /// - Throws: ``CustomSchemeError`` for a custom scheme WebKit handles itself (registering it would raise an
    ///   Objective-C exception and end the app).
    public init(
        engine: ResourceEngine, policy: NetworkPolicy, fetcher: any NetworkFetcher, hook: HookScript.Configuration?, ephemeral: Bool = false,
        recovery configuration: WebProcessRecovery.Configuration = WebProcessRecovery.Configuration(), terminate: ((WKWebView) -> Void)? = nil,
        dialogs dialogConfiguration: ScriptDialogs.Configuration = ScriptDialogs.Configuration(), applicationName: ApplicationName? = nil,
        media: MediaPolicy = MediaPolicy(), trials records: (any TrialRecords & LaunchRecords)? = nil, trialJudging: TrialJudge.Configuration = TrialJudge.Configuration()
    ) throws(CustomSchemeError) {
        self.terminate = terminate
        self.media = media
        try CustomSchemeCheck.check(engine.configuration.customSchemes) { WKWebView.handlesURLScheme($0) }
        self.engine = engine
        dataStore = ephemeral ? WKWebsiteDataStore.nonPersistent() : WKWebsiteDataStore.default()
        processPool = WKProcessPool()
        cookies = AppCookieJar(store: WKCookieStoreAdapter(store: dataStore.httpCookieStore), customSchemes: engine.configuration.customSchemes)
        var policy = policy
        policy.cookies = cookies
        layer = RequestLayer(loader: ResourceLoader(engine: engine, fetcher: fetcher, policy: policy), configuration: .webKit(hook: hook, cookies: cookies))
        let launch = records.map { PageLaunch(records: $0, engine: engine) }
        self.launch = launch
        driver = SchemeTaskDriver(layer: layer, queue: .main, launch: launch)
        schemeHandler = SatchelSchemeHandler(driver: driver)
        bodies = SatchelBodyMessageHandler(layer: layer)
        let bridge = AppBridge(proofCheck: engine.proofCheck)
        self.bridge = bridge
        bridgeMessages = layer.pageSetup.map { SatchelBridgeMessageHandler(bridge: bridge, pageSetup: $0) }
        let recovery = WebContentRecovery(driver: driver, engine: engine, configuration: configuration, terminate: terminate)
        self.recovery = recovery
        dialogs = SatchelDialogs(recovery: recovery, configuration: dialogConfiguration)
        // The page's signals are the judge's evidence and come through the hook: without it no view judges. (Apple's
        // WebKit names the sending frame, so unproven messages are still kept to the app's frames.)
        let trials = hook == nil ? nil : records.map { WebContentTrials(court: TrialCourt(engine: engine, records: $0, configuration: trialJudging)) }
        self.trials = trials
        let pageSetup = layer.pageSetup
        trialMessages = trials.flatMap { trials in pageSetup.map { SatchelTrialMessageHandler(pageSetup: $0, trials: trials) } }
        self.applicationName = applicationName
        let responseCache = fetcher.responseCache
        self.responseCache = responseCache
        let jarChanged: @Sendable (AppCookieJar.Change) -> Void = { [weak self] change in
            // Logout: the private cache holds the last user's answers.
            if change == .cleared { responseCache?.clear(host: nil) }
            Task { @MainActor in self?.cookiesChanged() }
        }
        cookies.observe(jarChanged)
        recovery.recovered = { [weak trials] webView, reason in trials?.recovered(webView, reason: reason) }
        dialogs.waitingChanged = { [weak trials] webView, waiting in trials?.dialogWaiting(webView, waiting) }
        trials?.decided = { [weak self] webView, subject, verdict in self?.trialDecided(subject, verdict, in: webView) }
    }

    /// A new view on the shared data store and process pool, guarded by ``recovery``.
    public func makeWebView() -> WKWebView {
        let configuration = WKWebViewConfiguration()
        configuration.processPool = processPool
        configuration.websiteDataStore = dataStore
        for scheme in engine.configuration.customSchemes.sorted() { configuration.setURLSchemeHandler(schemeHandler, forURLScheme: scheme) }
        let content = WKUserContentController()
        // satchel:restored for a page shown again from the back-forward cache, hook or not.
        content.addUserScript(WKUserScript(source: BackNavigation.restoredEventScript, injectionTime: .atDocumentStart, forMainFrameOnly: false))
        if let pageSetup {
            // Every frame: the app's own frames need it, and WKUserScript has no allow list (WebKitGTK's has); on any
            // other origin the hook returns before it does anything, and both handlers refuse messages from frames
            // whose security origin is not one of the app's (PageSetup.admits).
            content.addUserScript(WKUserScript(source: pageSetup.script, injectionTime: .atDocumentStart, forMainFrameOnly: false))
            content.addScriptMessageHandler(bodies, contentWorld: .page, name: pageSetup.bodyHandlerName)
            if let bridgeMessages { content.addScriptMessageHandler(bridgeMessages, contentWorld: .page, name: pageSetup.bridgeHandlerName) }
            if let trialMessages { content.add(trialMessages, contentWorld: .page, name: pageSetup.trialHandlerName) }
        }
        configuration.userContentController = content
        // Appended to WebKit's own user agent: pages and the requests the view makes carry the same one.
        configuration.applicationNameForUserAgent = applicationName?.description
        // WebKit reads these only when the view is made (004 §2.8.2).
        configuration.mediaTypesRequiringUserActionForPlayback = switch media.autoplay {
        case .allowed: []
        case .muted: .audio
        case .never: .all
        }
        #if canImport(UIKit)
        configuration.allowsInlineMediaPlayback = media.inlinePlayback
        #endif
        let webView = WKWebView(frame: .zero, configuration: configuration)
        webView.uiDelegate = dialogs
        recovery.attach(webView)
        trials?.attach(webView)
        views = views.filter { $0.view != nil } + [WeakView(webView)]
        return webView
    }

    // MARK: The navigation delegate's calls

    /// Forward the view's navigation delegate here (every call recovery, progress and back navigation need).
    public func didStartProvisionalNavigation(_ webView: WKWebView) {
        recovery.didStartProvisionalNavigation(webView)
        progress.didStartProvisionalNavigation(webView)
        trials?.didStartProvisionalNavigation(webView)
    }

    /// From `webView(_:decidePolicyFor:decisionHandler:)` with a navigation response (before the app's decision): the
    /// main frame's status is the entry document's, which a trial's judge reads.
    public func navigationResponse(_ webView: WKWebView, _ response: WKNavigationResponse) {
        trials?.navigationResponse(webView, response)
    }

    /// A pool of warm views made by ``makeWebView()``: a rollback drops its views that show the version rolled back.
    public func register(_ pool: WarmWebViewPool) {
        pools = pools.filter { $0.pool != nil } + [WeakPool(pool)]
    }

    /// From `webView(_:didCommit:)`: a new document; the judge of a trial looks up the version that serves it again.
    public func didCommit(_ webView: WKWebView) {
        trials?.didCommit(webView)
    }

    /// A view's judge decided: the store and the engine first (``TrialCourt/carryOut(_:_:)``, off the main actor: it
    /// takes the store's lock), then the other views' judges; after a rollback, warm views showing the package are
    /// dropped and every view showing it loads its URL again (one whose page never finished loading is handed to
    /// `terminate` first, when the app gave it: it may still be spinning), and then the app is told.
    private func trialDecided(_ subject: TrialJudge.Subject, _ verdict: TrialJudge.Verdict, in deciding: WKWebView) {
        guard let trials else { return }
        trials.settle(subject, verdict, except: deciding)
        let court = trials.court
        Task { @MainActor [weak self, weak deciding] in
            let report = await Task.detached { court.carryOut(subject, verdict) }.value
            guard let self else { return }
            self.verdictCarriedOut(report, subject: subject, in: deciding)
        }
    }

    private func verdictCarriedOut(_ report: TrialReport, subject: TrialJudge.Subject, in deciding: WKWebView?) {
        guard let court = trials?.court else { return }
        if report.fallbackToShow, let failure = report.failure {
            let shows = { (url: String) in court.showsPackage(subject.id, url: url) }
            for pool in pools { pool.pool?.drop(where: shows) }
            for view in views.compactMap(\.view) {
                guard let url = view.url, shows(url.absoluteString) else { continue }
                if view === deciding, failure.why == TrialFailure.loadTimeout(nil).why, let terminate {
                    terminate(view)
                } else {
                    view.load(URLRequest(url: url))
                }
            }
        }
        trialHandler?(deciding, report)
    }

    /// From `webView(_:didFinish:)`: the load finished; the first page a view shows becomes its root, and the text
    /// size WebKit may have grown on going back is reset (004 §2.8.4).
    public func didFinish(_ webView: WKWebView) {
        recovery.didFinish(webView)
        progress.didFinish(webView)
        trials?.didFinish(webView)
        histories[ObjectIdentifier(webView), default: BackNavigation()].committed(
            url: webView.url?.absoluteString ?? "", backLength: webView.backForwardList.backList.count)
        webView.evaluateJavaScript(BackNavigation.textSizeReset, completionHandler: nil)
    }

    /// From both failure callbacks.
    public func didFail(_ webView: WKWebView) {
        recovery.didFail(webView)
        progress.didFinish(webView)
        trials?.didFail(webView)
    }

    /// From `webViewWebContentProcessDidTerminate(_:)`.
    public func webContentProcessDidTerminate(_ webView: WKWebView) {
        recovery.webContentProcessDidTerminate(webView)
    }

    /// Whether `webView` can go back within the app's pages: the first page it showed is its root (``BackNavigation``).
    public func canGoBack(_ webView: WKWebView) -> Bool {
        histories[ObjectIdentifier(webView), default: BackNavigation()].canGoBack(
            webKitCanGoBack: webView.canGoBack, backLength: webView.backForwardList.backList.count)
    }

    /// Goes back when ``canGoBack(_:)``; returns whether it did (false: the app pops the screen instead).
    @discardableResult
    public func goBack(_ webView: WKWebView) -> Bool {
        guard canGoBack(webView) else { return false }
        webView.goBack()
        return true
    }

    private var histories: [ObjectIdentifier: BackNavigation] = [:]

    // MARK: Snapshots

    /// A PNG of what `webView` shows (``Snapshots``). A page that knows WebKit's snapshot cannot read its canvas (WebGL:
    /// measured blank in WebKitGTK, and reported so of WKWebView) answers the `snapshot` bridge call with its own pixels,
    /// which come first; any other page gets WebKit's snapshot. (WebKitGTK's adapter looks at WebKit's pixels first;
    /// on Apple reading them needs CoreGraphics, which the type-check here cannot see.)
    public func snapshot(of webView: WKWebView) async throws -> (png: Data, source: Snapshots.Source) {
        // Bounded: a stuck, suspended or navigating page never calls a script back, and WebKit's call ignores
        // cancellation, so whichever comes first, the answer or two seconds, is taken.
        let answer: BridgeValue? = await withCheckedContinuation { continuation in
            let resumed = Locked(false)
            let finish: @Sendable (BridgeValue?) -> Void = { value in
                if resumed.withLock({ done in defer { done = true }; return !done }) { continuation.resume(returning: value) }
            }
            Task { @MainActor in finish(try? await self.callPage(webView, name: Snapshots.pageHandler)) }
            Task {
                try? await Task.sleep(for: .seconds(2))
                finish(nil)
            }
        }
        if let png = answer?.string.flatMap(Snapshots.png(fromDataURL:)) { return (png, .page) }
        #if canImport(UIKit)
        let png: Data? = try await withCheckedThrowingContinuation { continuation in
            webView.takeSnapshot(with: nil) { image, error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume(returning: image?.pngData()) }
            }
        }
        guard let png else { throw BridgeError("satchel: WebKit gave no snapshot") }
        return (png, .platform)
        #else
        throw BridgeError("satchel: snapshots need UIKit's PNG encoding on this platform")
        #endif
    }

    /// Forgets what the HTTP cache holds for one host, for every host of package `id`, or everything.
    public func clearCache(host: String? = nil, package id: String? = nil) {
        responseCache?.clear(host: host, package: id, in: engine)
    }

    /// Sends event `name` to the page in `webView` (`window.satchel.on`), if it shows one of the app's origins.
    public func send(event name: String, detail: BridgeValue, to webView: WKWebView) {
        guard AppBridge.mayCall(url: webView.url?.absoluteString, origins: appOrigins) else { return }
        webView.evaluateJavaScript(AppBridge.eventScript(name: name, detail: detail), completionHandler: nil)
    }

    /// Sends event `name` to every view made here (for example `visibility` from the scene's lifecycle, `network`
    /// from `NWPathMonitor`).
    public func broadcast(event name: String, detail: BridgeValue) {
        for view in views.compactMap(\.view) { send(event: name, detail: detail, to: view) }
    }

    /// Calls the page's handler `name` (`window.satchel.handle`) in `webView` and returns its result.
    public func callPage(_ webView: WKWebView, name: String, params: BridgeValue = .null) async throws -> BridgeValue {
        guard AppBridge.mayCall(url: webView.url?.absoluteString, origins: appOrigins) else {
            throw BridgeError("satchel: the view does not show one of the app's pages")
        }
        let result = try await webView.callAsyncJavaScript(AppBridge.invocationScript(name: name, params: params), arguments: [:], in: nil, contentWorld: .page)
        guard let text = result as? String else { return .null }
        return try BridgeValue(json: text)
    }

    private func cookiesChanged() {
        for view in views.compactMap(\.view) where AppBridge.mayCall(url: view.url?.absoluteString, origins: appOrigins) {
            view.evaluateJavaScript(
                "window.__satchelHook && window.__satchelHook.cookiesChanged && window.__satchelHook.cookiesChanged();", completionHandler: nil)
        }
    }
}

/// The bridge's script message handler: `window.satchel.call` in the page, ``AppBridge`` natively; the reply (JSON
/// text) resolves the page's promise whenever the app's handler is done.
@MainActor
public final class SatchelBridgeMessageHandler: NSObject, WKScriptMessageHandlerWithReply {
    public let bridge: AppBridge
    /// The app's page set-up: only frames of its origins are answered.
    public let pageSetup: PageSetup

    public init(bridge: AppBridge, pageSetup: PageSetup) {
        self.bridge = bridge
        self.pageSetup = pageSetup
    }

    public func userContentController(
        _ userContentController: WKUserContentController, didReceive message: WKScriptMessage,
        replyHandler: @escaping @MainActor (Any?, String?) -> Void
    ) {
        // WebKit hands every frame the handler, a foreign one inside an app page too.
        let origin = FrameOrigin(message.frameInfo.securityOrigin)
        guard pageSetup.admits(origin) else { return replyHandler(nil, "satchel: the bridge does not answer frames of \(origin)") }
        let object = message.body as? [String: Any]
        let (id, name, params, token) = (object?["id"] as? String, object?["name"] as? String, object?["params"] as? String, object?["token"] as? String)
        let bridge = self.bridge
        Task { @MainActor in
            replyHandler(await bridge.receive(id: id, name: name, params: params, token: token), nil)
        }
    }
}
#endif
