import CSatchelGLib
import CWebKitGTK
import Foundation
import SatchelCache
import SatchelCore
import SatchelEngine
import SatchelHTTP
import SatchelHost
import SatchelWebKit

/// Satchel in a WebKitGTK app: a `WebKitWebContext` whose custom schemes the engine answers, a network session whose
/// cookie store the engine shares, and web views with the body hook and its `satchelBody` handler. Create it on the
/// main thread after `gtk_init`, before the first load.
///
/// ```swift
/// let store = try PackageStore(root: "store")
/// let engine = try ResourceEngine(source: store)
/// let satchel = SatchelWebContext(
///     engine: engine, policy: NetworkPolicy(allowedHosts: [try HostPattern("m.shop.com")]),
///     hook: HookScript.Configuration(origins: ["satchel://m.shop.com"]))
/// let webView = satchel.makeWebView()
/// gtk_window_set_child(window, webView)
/// webkit_web_view_load_uri(webView, "satchel://m.shop.com/")
/// ```
public final class SatchelWebContext: @unchecked Sendable {
    /// `WebKitWebContext*`.
    public let context: OpaquePointer
    /// `WebKitNetworkSession*`.
    public let session: OpaquePointer
    public let handler: URISchemeHandler
    public let bodies: BodyMessageHandler
    /// The app's cookie jar: pages (`document.cookie` through the hook), native code and the network fallback share
    /// it; its store is the session's WebKit cookie manager. Logout: ``AppCookieJar/clear()``.
    public let cookies: AppCookieJar
    /// The JS bridge's native half: register handlers for `window.satchel.call` here.
    public let bridge: AppBridge
    /// The app's HTTP cache, when one was given.
    public let httpCache: HTTPCache?
    let bridgeMessages: BridgeMessageHandler?
    /// The origins the hook (and so the bridge) serves: native code calls into a view only while it shows one.
    public var appOrigins: [String] { pageSetup?.origins ?? [] }
    public let executor: GLibMainContextExecutor
    /// The hook's source, injected at document start into the documents of the app's origins; nil: no hook.
    public var hookScript: String? { pageSetup?.script }
    /// The request layer every task goes through.
    public let layer: RequestLayer
    /// The one page set-up both WebKit adapters install (``PageSetup``); nil without a hook.
    public var pageSetup: PageSetup? { layer.pageSetup }

    /// - Parameters:
    ///   - policy: the network fallback's rules; its ``CookieProvider`` becomes WebKit's cookie store.
    ///   - fetcher: how misses reach the network (on Linux, `NIOFetcher` from SatchelNetwork; the app shuts it
    ///     down when it is done with it).
    ///   - hook: the hook's configuration (origins such as `satchel://m.shop.com`), or nil for no hook: then every
    ///     request that may carry a body is refused (see ``URISchemeHandler``).
    ///   - ephemeral: a network session that keeps nothing on disk (cookies included).
    ///   - memoryLimit: megabytes a web process may use before WebKit kills it (its view then recovers, with the
    ///     reason `exceeded-memory-limit`); nil: WebKit's defaults, which kill nothing.
    ///   - recovery: when a view that keeps dying gets the offline page instead of another reload, and how long an
    ///     unresponsive view is given (see ``WebProcessRecovery``).
    ///   - trials: where the versions on trial are (the app's `PackageStore`). The first page a view asks for begins the
    ///     launch that shows pages (``launch``): the store counts it against every trial, so a process that shows no
    ///     page spends none, and the app never counts launches itself. With the hook and its proofs (the page's signals
    ///     come through it, and WebKitGTK does not say which frame sent one), each view also judges a page served from a
    ///     version on trial and confirms it, or rolls it back with its reason and shows the fallback in every view
    ///     (``TrialJudge``, ``trialHandler``). nil: no launch counted, no judging.
    ///   - trialJudging: the judge's grace period, load timeout, thresholds and whether `ready()` is required.
    ///   - cache: the app's HTTP cache, opened in private mode (one user: `private` answers kept, `s-maxage` not
    ///     read): every network fallback of the pages goes through it, with the cache policies of routes and requests;
    ///     logging out (``AppCookieJar/clear()``) empties it. nil: none (WebKit's own cache never sees a scheme
    ///     handler's answers).
    public init(
        engine: ResourceEngine, policy: NetworkPolicy, fetcher: any NetworkFetcher,
        hook: HookScript.Configuration?, ephemeral: Bool = true, chunkSize: Int = 256 << 10, memoryLimit: Int? = nil,
        recovery: WebProcessRecovery.Configuration = WebProcessRecovery.Configuration(), cache: HTTPCache? = nil,
        dialogs: ScriptDialogs.Configuration = ScriptDialogs.Configuration(), applicationName: ApplicationName? = nil,
        media: MediaPolicy = MediaPolicy(), trials: (any TrialRecords & LaunchRecords)? = nil, trialJudging: TrialJudge.Configuration = TrialJudge.Configuration()
    ) throws {
        // The page's signals are the judge's evidence, and they come through the hook with its proofs: WebKitGTK does
        // not say which frame posted a message, so without both no view judges.
        court = hook != nil && engine.proofCheck != nil ? trials.map { TrialCourt(engine: engine, records: $0, configuration: trialJudging) } : nil
        self.media = media
        httpCache = cache
        dialogConfiguration = dialogs
        self.applicationName = applicationName
        executor = GLibMainContextExecutor()
        self.engine = engine
        recoveryConfiguration = recovery
        context = satchel_web_context_new(guint(max(0, memoryLimit ?? 0)))!
        session = ephemeral ? webkit_network_session_new_ephemeral() : webkit_network_session_get_default()
        if !ephemeral { g_object_ref(UnsafeMutableRawPointer(session)) }
        cookies = AppCookieJar(
            store: WebKitCookieStore(manager: webkit_network_session_get_cookie_manager(session), executor: executor),
            customSchemes: engine.configuration.customSchemes)
        var policy = policy
        policy.cookies = cookies
        if let applicationName {
            // The same user agent the views send (WebKit's with the app's details), for fallbacks that carry none.
            let settings = webkit_settings_new()
            webkit_settings_set_user_agent_with_application_details(settings, applicationName.name, applicationName.version)
            policy.userAgent = webkit_settings_get_user_agent(settings).map { String(cString: $0) }
            g_object_unref(UnsafeMutableRawPointer(settings))
        }
        let loader = ResourceLoader(engine: engine, fetcher: cache.map { CachingFetcher(cache: $0, upstream: fetcher) } ?? fetcher, policy: policy)
        // The request layer with a WebKit adapter's configuration: the hook as a user script (it proves every body it
        // moves with this launch's secret, and provides document.cookie and window.satchel on the app's pages), the
        // app's cookie jar, redirects as pages.
        let layer = RequestLayer(loader: loader, configuration: .webKit(hook: hook, cookies: cookies))
        self.layer = layer
        let launch = trials.map { PageLaunch(records: $0, engine: engine) }
        self.launch = launch
        let driver = SchemeTaskDriver(layer: layer, executor: executor, chunkSize: chunkSize, launch: launch)
        handler = URISchemeHandler(driver: driver)
        handler.register(on: context, schemes: engine.configuration.customSchemes)
        let pageSetup = layer.pageSetup
        bodies = BodyMessageHandler(layer: layer)
        let bridge = AppBridge(proofCheck: engine.proofCheck)
        self.bridge = bridge
        let executor = self.executor
        bridgeMessages = pageSetup.map { BridgeMessageHandler(bridge: bridge, name: $0.bridgeHandlerName, executor: executor) }
        mediaRelay = try MediaRelay(driver: driver)
        mediaScript = MediaScript.render(relayBaseURL: mediaRelay.baseURL, schemes: engine.configuration.customSchemes)
        startNotifications()
    }

    /// How pages may play media: set on each view as it is made (``MediaPolicy``).
    public let media: MediaPolicy
    /// The app's name and version in every view's user agent (`Shop/2.3.0`), or nil for WebKit's own.
    public let applicationName: ApplicationName?

    /// Media from the custom schemes over loopback HTTP (see ``MediaRelay``), on the same driver.
    public let mediaRelay: MediaRelay
    /// See ``MediaScript``: always injected, hook or not.
    public let mediaScript: String

    public var driver: SchemeTaskDriver { handler.driver }

    public let engine: ResourceEngine
    let recoveryConfiguration: WebProcessRecovery.Configuration
    /// Told, on the main context's thread, every time a view's web process ended and what was done about it.
    public var recoveryHandler: ((RecoveryReport) -> Void)?
    /// The app's JS dialogs (``ScriptDialogs``): asked, on the main context's thread, for each `alert`, `confirm`,
    /// `prompt` and `beforeunload` of a view on screen; it answers once, from any thread, within the configured bound
    /// or the default answers. nil: every dialog gets the default at once.
    public var dialogHandler: ((UnsafeMutablePointer<WebKitWebView>, ScriptDialog, @escaping @Sendable (ScriptDialogAnswer) -> Void) -> Void)?
    /// Told of every dialog and how it was answered (type, message, answer, by whom).
    public var dialogReportHandler: ((UnsafeMutablePointer<WebKitWebView>, ScriptDialogs.Report) -> Void)?
    /// Told of each view's load progress for a progress bar (``LoadProgress``: 0 to 1, never backwards within a
    /// navigation, 1 when the load finished).
    public var progressHandler: ((UnsafeMutablePointer<WebKitWebView>, Double) -> Void)?
    let dialogConfiguration: ScriptDialogs.Configuration
    /// Told, on the main context's thread, of each trial a view decided (``TrialJudge``), after the store and every
    /// view were brought in line: confirmed, or rolled back with its reason and the fallback loading.
    public var trialHandler: ((UnsafeMutablePointer<WebKitWebView>, TrialReport) -> Void)?
    /// The trials' rules and store; nil when the app judges no trials.
    public let court: TrialCourt?
    /// The launch that shows the app's pages: counted against the store's trials, and its versions pinned, before the
    /// first page is answered, the media relay's included (decision 0036); nil when the app passed no store.
    public let launch: PageLaunch?

    /// What the context keeps for one view, for as long as it lives.
    private struct ViewParts {
        let recovery: ViewRecovery
        let dialogs: ViewDialogs
        let progress: ViewProgress
        let history: ViewHistory
        let trial: ViewTrial?
    }

    /// Pools of warm views made here: a rollback drops their views that show the version rolled back.
    private var pools: [WeakPool] = []
    private struct WeakPool { weak var pool: WarmViewPool? }

    func register(_ pool: WarmViewPool) {
        pools = pools.filter { $0.pool != nil } + [WeakPool(pool: pool)]
    }

    /// Every view made here, by view.
    private var views: [UnsafeMutableRawPointer: ViewParts] = [:]

    /// A web view on this context: the media script and the hook at document start in every frame, and the body
    /// handler.
    public func makeWebView() -> UnsafeMutablePointer<WebKitWebView> {
        let manager = webkit_user_content_manager_new()!
        let media = webkit_user_script_new(mediaScript, WEBKIT_USER_CONTENT_INJECT_ALL_FRAMES, WEBKIT_USER_SCRIPT_INJECT_AT_DOCUMENT_START, nil, nil)
        webkit_user_content_manager_add_script(manager, media)
        webkit_user_script_unref(media)
        // satchel:restored for a page shown again from the back-forward cache, hook or not.
        let restored = webkit_user_script_new(
            BackNavigation.restoredEventScript, WEBKIT_USER_CONTENT_INJECT_ALL_FRAMES, WEBKIT_USER_SCRIPT_INJECT_AT_DOCUMENT_START, nil, nil)
        webkit_user_content_manager_add_script(manager, restored)
        webkit_user_script_unref(restored)
        if let pageSetup {
            // Only into documents of the app's own origins (top frames and the app's own frames): the hook holds the
            // launch's secret. WebKit's allow list keeps it out of every other page and frame; the hook itself also
            // stays inert on a foreign origin.
            let script = pageSetup.allowList.withCStrings { allowList in
                webkit_user_script_new(pageSetup.script, WEBKIT_USER_CONTENT_INJECT_ALL_FRAMES, WEBKIT_USER_SCRIPT_INJECT_AT_DOCUMENT_START, allowList, nil)
            }
            webkit_user_content_manager_add_script(manager, script)
            webkit_user_script_unref(script)
            bodies.register(on: manager)
            bridgeMessages?.register(on: manager)
        }
        let autoplay: WebKitAutoplayPolicy = switch self.media.autoplay {
        case .allowed: WEBKIT_AUTOPLAY_ALLOW
        case .muted: WEBKIT_AUTOPLAY_ALLOW_WITHOUT_SOUND
        case .never: WEBKIT_AUTOPLAY_DENY
        }
        let view = satchel_web_view_new(context, session, manager, autoplay)!
        let trial = court.flatMap { court in
            pageSetup.map { ViewTrial(view: view, manager: manager, context: self, court: court, handlerName: $0.trialHandlerName) }
        }
        let settings = webkit_web_view_get_settings(view)
        webkit_settings_set_media_playback_requires_user_gesture(settings, self.media.autoplay == .never ? 1 : 0)
        webkit_settings_set_media_playback_allows_inline(settings, self.media.inlinePlayback ? 1 : 0)
        g_object_unref(UnsafeMutableRawPointer(manager))
        // The white-screen guard, for as long as the view lives.
        let raw = UnsafeMutableRawPointer(view)
        // The app's name in WebKit's user agent, for pages and for every request the view makes.
        if let applicationName {
            webkit_settings_set_user_agent_with_application_details(webkit_web_view_get_settings(view), applicationName.name, applicationName.version)
        }
        let recovery = ViewRecovery(view: view, context: self, configuration: recoveryConfiguration)
        let dialogs = ViewDialogs(view: view, context: self, recovery: recovery, configuration: dialogConfiguration)
        views[raw] = ViewParts(
            recovery: recovery, dialogs: dialogs, progress: ViewProgress(view: view, context: self), history: ViewHistory(view: view), trial: trial)
        // The judge's clocks stop while the page waits on a dialog (and while the view is hidden: ViewTrial's own).
        dialogs.waitingChanged = { [weak trial] waiting in trial?.dialogWaiting(waiting) }
        satchel_weak_ref(raw, { data, object in
            guard let data, let object else { return }
            Unmanaged<SatchelWebContext>.fromOpaque(data).takeUnretainedValue().viewFinalized(object)
        }, Unmanaged.passUnretained(self).toOpaque())
        // The bridge's visibility event: the view's window shown or hidden.
        let visibility: @convention(c) (UnsafeMutableRawPointer?, gpointer?) -> Void = { view, data in
            guard let view, let data else { return }
            let satchel = Unmanaged<SatchelWebContext>.fromOpaque(data).takeUnretainedValue()
            satchel.send(event: "visibility", detail: ["visible": .bool(gtk_widget_get_mapped(view.assumingMemoryBound(to: GtkWidget.self)) != 0)], to: view.assumingMemoryBound(to: WebKitWebView.self))
        }
        let me = Unmanaged.passUnretained(self).toOpaque()
        _ = satchel_signal_connect(raw, "map", unsafeBitCast(visibility, to: GCallback.self), me)
        _ = satchel_signal_connect(raw, "unmap", unsafeBitCast(visibility, to: GCallback.self), me)
        return view
    }

    // MARK: Snapshots

    /// A PNG of what `view` shows (``Snapshots``): WebKit's snapshot of the visible region when it shows something;
    /// when it is one color throughout (a WebGL canvas the compositor's copy cannot read), the page's own pixels from
    /// its `snapshot` bridge handler, if it has one. Main context thread; `completion` is called there, once.
    public func snapshot(_ view: UnsafeMutablePointer<WebKitWebView>, completion: @escaping (Result<(png: Data, source: Snapshots.Source, blank: Bool), BridgeError>) -> Void) {
        // The view is held until the answer: the page may be asked from a task, after the app let the view go.
        g_object_ref(UnsafeMutableRawPointer(view))
        let request = SnapshotRequest(context: self, view: view) { result in
            completion(result)
            g_object_unref(UnsafeMutableRawPointer(view))
        }
        webkit_web_view_get_snapshot(view, WEBKIT_SNAPSHOT_REGION_VISIBLE, WEBKIT_SNAPSHOT_OPTIONS_NONE, nil, { source, result, data in
            let request = Unmanaged<SnapshotRequest>.fromOpaque(data!).takeRetainedValue()
            var error: UnsafeMutablePointer<GError>?
            guard let texture = webkit_web_view_get_snapshot_finish(UnsafeMutableRawPointer(source)?.assumingMemoryBound(to: WebKitWebView.self), result, &error) else {
                let message = error.map { String(cString: $0.pointee.message) } ?? "?"
                if let error { g_error_free(error) }
                return request.completion(.failure(BridgeError("snapshot failed: \(message)")))
            }
            defer { g_object_unref(UnsafeMutableRawPointer(texture)) }
            let width = Int(gdk_texture_get_width(texture)), height = Int(gdk_texture_get_height(texture))
            var pixels = [UInt8](repeating: 0, count: max(0, width * height * 4))
            pixels.withUnsafeMutableBufferPointer { gdk_texture_download(texture, $0.baseAddress, gsize(width * 4)) }
            let bytes = gdk_texture_save_to_png_bytes(texture)
            var size: gsize = 0
            let png = Data(bytes: g_bytes_get_data(bytes, &size)!, count: Int(size))
            g_bytes_unref(bytes)
            guard pixels.withUnsafeBytes(Snapshots.isBlank) else { return request.completion(.success((png, .platform, false))) }
            request.askPage(fallback: png)
        }, Unmanaged.passRetained(request).toOpaque())
    }

    /// Touched on the main context's thread only; it crosses the task that asks the page.
    private final class SnapshotRequest: @unchecked Sendable {
        let context: SatchelWebContext
        let view: UnsafeMutablePointer<WebKitWebView>
        let completion: (Result<(png: Data, source: Snapshots.Source, blank: Bool), BridgeError>) -> Void
        init(context: SatchelWebContext, view: UnsafeMutablePointer<WebKitWebView>,
             completion: @escaping (Result<(png: Data, source: Snapshots.Source, blank: Bool), BridgeError>) -> Void) {
            self.context = context
            self.view = view
            self.completion = completion
        }

        /// The platform's snapshot was blank: the page's own pixels, or the blank one when the page has none to give.
        func askPage(fallback: Data) {
            let target = ViewReference(view)
            let outcome = LockedOutcome()
            Task { [context] in
                let answer = try? await context.callPage(target.view, name: Snapshots.pageHandler)
                outcome.png = answer?.string.flatMap(Snapshots.png(fromDataURL:))
                context.executor.execute { self.finish(outcome.png, fallback: fallback) }
            }
        }

        private func finish(_ png: Data?, fallback: Data) {
            completion(.success(png.map { ($0, .page, false) } ?? (fallback, .platform, true)))
        }
    }

    /// Carries the page's answer from the task back to the main context.
    private final class LockedOutcome: @unchecked Sendable {
        var png: Data?
    }

    // MARK: Trials

    /// A view's recovery ended its page: its judge hears why.
    func recovered(_ view: UnsafeMutablePointer<WebKitWebView>, reason: WebProcessRecovery.Reason) {
        views[UnsafeMutableRawPointer(view)]?.trial?.recovery(reason)
    }

    /// A view's judge decided: the store and the engine first (``TrialCourt/carryOut(_:_:)``, off the main thread: it
    /// takes the store's lock), then every view's judge hears it, and after a rollback the fallback shows everywhere the
    /// version did: warm views that hold it are dropped, every view showing the package loads its URL again (one whose
    /// page never finished loading gets a new web process first: it may still be spinning), and then the app is told.
    func trialDecided(_ subject: TrialJudge.Subject, _ verdict: TrialJudge.Verdict, in deciding: UnsafeMutablePointer<WebKitWebView>) {
        guard let court else { return }
        for parts in views.values where parts.trial?.view != deciding { parts.trial?.settled(subject, verdict) }
        let target = ViewReference(deciding)
        g_object_ref(UnsafeMutableRawPointer(deciding))
        Task.detached { [executor] in
            let report = court.carryOut(subject, verdict)
            executor.execute { [weak self] in
                defer { g_object_unref(UnsafeMutableRawPointer(target.view)) }
                self?.verdictCarriedOut(report, subject: subject, in: target.view)
            }
        }
    }

    private func verdictCarriedOut(_ report: TrialReport, subject: TrialJudge.Subject, in deciding: UnsafeMutablePointer<WebKitWebView>) {
        guard let court else { return }
        if report.fallbackToShow, let failure = report.failure {
            let shows = { (url: String) in court.showsPackage(subject.id, url: url) }
            for pool in pools { pool.pool?.drop(where: shows) }
            for raw in views.keys {
                let view = raw.assumingMemoryBound(to: WebKitWebView.self)
                guard let url = webkit_web_view_get_uri(view).map({ String(cString: $0) }), shows(url) else { continue }
                // After the judge's own load timeout (or the recovery's, which stops the load but leaves the process) the
                // page may be spinning: a new process loads the fallback (the recovery reloads the URL). A hung page the
                // recovery already terminated (`unresponsive`) has a new one.
                if view == deciding, failure.why == TrialFailure.loadTimeout(nil).why {
                    webkit_web_view_terminate_web_process(view)
                } else {
                    webkit_web_view_load_uri(view, url)
                }
            }
        }
        trialHandler?(deciding, report)
    }

    // MARK: Back navigation

    /// Whether `view` can go back within the app's pages: the first page it showed is its root (``BackNavigation``).
    public func canGoBack(_ view: UnsafeMutablePointer<WebKitWebView>) -> Bool {
        views[UnsafeMutableRawPointer(view)]?.history.canGoBack ?? false
    }

    /// Goes back when ``canGoBack(_:)``; returns whether it did (false: the app leaves the view instead).
    @discardableResult
    public func goBack(_ view: UnsafeMutablePointer<WebKitWebView>) -> Bool {
        guard canGoBack(view) else { return false }
        webkit_web_view_go_back(view)
        return true
    }

    // MARK: The app's cache

    /// Forgets what the HTTP cache holds for one host, for every host of package `id` (its scope), or everything.
    public func clearCache(host: String? = nil, package id: String? = nil) {
        httpCache?.clear(host: host, package: id, in: engine)
    }

    // MARK: Native code and pages

    /// Sends event `name` to the page in `view` (its `window.satchel.on(name, …)` listeners), if it shows one of the
    /// app's origins. Main context thread.
    public func send(event name: String, detail: BridgeValue, to view: UnsafeMutablePointer<WebKitWebView>) {
        guard AppBridge.mayCall(url: webkit_web_view_get_uri(view).map { String(cString: $0) }, origins: appOrigins) else { return }
        webkit_web_view_evaluate_javascript(view, AppBridge.eventScript(name: name, detail: detail), -1, nil, nil, nil, nil, nil)
    }

    /// Sends event `name` to every view made here. Main context thread.
    public func broadcast(event name: String, detail: BridgeValue) {
        for view in views.keys { send(event: name, detail: detail, to: view.assumingMemoryBound(to: WebKitWebView.self)) }
    }

    /// Calls the page's handler `name` (`window.satchel.handle(name, fn)`) in `view` and returns its result; throws
    /// ``BridgeError`` when the view does not show one of the app's origins, the page has no such handler, or it threw.
    /// Callable from anywhere: the call is made on the main context's thread.
    public func callPage(_ view: UnsafeMutablePointer<WebKitWebView>, name: String, params: BridgeValue = .null) async throws -> BridgeValue {
        let target = ViewReference(view)
        let text: String = try await withCheckedThrowingContinuation { continuation in
            executor.execute { [appOrigins] in
                let view = target.view
                guard AppBridge.mayCall(url: webkit_web_view_get_uri(view).map { String(cString: $0) }, origins: appOrigins) else {
                    return continuation.resume(throwing: BridgeError("satchel: the view does not show one of the app's pages"))
                }
                let call = PageCall(continuation)
                webkit_web_view_call_async_javascript_function(view, AppBridge.invocationScript(name: name, params: params), -1, nil, nil, nil, nil, { source, result, data in
                    let call = Unmanaged<PageCall>.fromOpaque(data!).takeRetainedValue()
                    var error: UnsafeMutablePointer<GError>?
                    let value = webkit_web_view_call_async_javascript_function_finish(UnsafeMutableRawPointer(source)?.assumingMemoryBound(to: WebKitWebView.self), result, &error)
                    if let error {
                        call.continuation.resume(throwing: BridgeError(String(cString: error.pointee.message)))
                        g_error_free(error)
                    } else if let value, let text = jsc_value_to_string(value) {
                        call.continuation.resume(returning: String(cString: text))
                        g_free(text)
                    } else {
                        call.continuation.resume(returning: "null")
                    }
                    if let value { g_object_unref(UnsafeMutableRawPointer(value)) }
                }, Unmanaged.passRetained(call).toOpaque())
            }
        }
        return try BridgeValue(json: text)
    }

    /// A view handed across threads; used on the main context's thread only.
    private struct ViewReference: @unchecked Sendable {
        let view: UnsafeMutablePointer<WebKitWebView>
        init(_ view: UnsafeMutablePointer<WebKitWebView>) { self.view = view }
    }

    private final class PageCall {
        let continuation: CheckedContinuation<String, any Error>
        init(_ continuation: CheckedContinuation<String, any Error>) { self.continuation = continuation }
    }

    /// The jar changed: every page showing an app origin reads its cookies again on its next `document.cookie`.
    private func cookiesChanged() {
        for view in views.keys {
            let view = view.assumingMemoryBound(to: WebKitWebView.self)
            guard AppBridge.mayCall(url: webkit_web_view_get_uri(view).map { String(cString: $0) }, origins: appOrigins) else { continue }
            webkit_web_view_evaluate_javascript(
                view, "window.__satchelHook && window.__satchelHook.cookiesChanged && window.__satchelHook.cookiesChanged();", -1, nil, nil, nil, nil, nil)
        }
    }

    /// Starts telling pages about cookie changes and the network (called once the context is complete).
    private func startNotifications() {
        final class Weak: @unchecked Sendable { weak var context: SatchelWebContext? }
        let weak = Weak()
        weak.context = self
        cookies.observe { [executor, httpCache] change in
            // Logout: the private cache holds the last user's answers.
            if change == .cleared { httpCache?.clear() }
            executor.execute { weak.context?.cookiesChanged() }
        }
        let monitor = g_network_monitor_get_default()
        let changed: @convention(c) (UnsafeMutableRawPointer?, gboolean, gpointer?) -> Void = { _, available, data in
            Unmanaged<SatchelWebContext>.fromOpaque(data!).takeUnretainedValue().broadcast(event: "network", detail: ["online": .bool(available != 0)])
        }
        _ = satchel_signal_connect(UnsafeMutableRawPointer(monitor), "network-changed", unsafeBitCast(changed, to: GCallback.self), Unmanaged.passUnretained(self).toOpaque())
    }

    /// A view is gone: its guard and its task group go with it.
    private func viewFinalized(_ view: UnsafeMutableRawPointer) {
        guard let parts = views.removeValue(forKey: view) else { return ViewKey.forget(view) }
        // Dialogs first: answering them tells the view's recovery.
        parts.dialogs.viewGone()
        parts.recovery.viewGone()
        parts.trial?.viewGone()
        ViewKey.forget(view)
    }

    /// Stops the heartbeat of every view (the app is hidden and its pages should not be probed, or a debugger holds
    /// a web process); ``resumeHeartbeats()`` starts them again.
    public func pauseHeartbeats() {
        for parts in views.values { parts.recovery.pauseHeartbeat() }
    }

    public func resumeHeartbeats() {
        for parts in views.values { parts.recovery.resumeHeartbeat() }
    }
}


extension Array where Element == String {
    /// A NULL-terminated C array of C strings, as GLib's `const gchar * const *` parameters take them.
    func withCStrings<Result>(_ body: (UnsafePointer<UnsafePointer<CChar>?>) -> Result) -> Result {
        let copies = map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let pointers = copies.map { UnsafePointer($0) } + [nil]
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
