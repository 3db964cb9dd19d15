// docs/apple.md's code, compiled: a documentation test (Tests/DocumentationTests/AppleGuideTests.swift) checks that
// every ```swift block of docs/apple.md is, in order, the text between a BEGIN and an END line below. Edit both
// together.
// BEGIN APPLE GUIDE
import Foundation
import SatchelCore  // keys, trust, versions, package ids
import SatchelEngine  // the engine: ResourceEngine, EngineConfiguration
import SatchelHTTP  // NetworkPolicy
import SatchelStore  // PackageStore, StoreConfiguration
import SatchelUpdate  // Updater, UpdaterOptions
import SatchelWebKit  // SatchelWebViews, URLSessionFetcher, SatchelBackgroundLocks; re-exports SatchelHost
import WebKit
#if canImport(BackgroundTasks) && !os(macOS)
import BackgroundTasks  // the background refresh (iOS, Mac Catalyst)
#endif
// END APPLE GUIDE

// BEGIN APPLE GUIDE
/// Satchel in an iOS app: made once at launch, on the main actor, before the first web view.
@MainActor
final class OfflinePages {
    let store: PackageStore
    let webViews: SatchelWebViews
    let updater: Updater

    init(rootKeys: [String], publicKey: String, catalogURL: String) throws {
        // The store: Application Support, outside backups (the CDN holds everything in it).
        var folder = try FileManager.default.url(
            for: .applicationSupportDirectory, in: .userDomainMask, appropriateFor: nil, create: true
        ).appendingPathComponent("Satchel", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var values = URLResourceValues()
        values.isExcludedFromBackup = true
        try folder.setResourceValues(values)

        // Built-in bundles: the zips in the app bundle's `offline` folder, served from their archives, the floor.
        let builtIns = Bundle.main.resourceURL.map { [$0.appendingPathComponent("offline").path] } ?? []
        // Root keys: the publisher's trust documents say which keys sign catalogs and bundles, so those keys can be
        // rotated and revoked without an app release. The plain key counts only until a first trust version is held.
        let key = try VerifyingKey(base64: publicKey)
        let anchor = try TrustAnchor(rootKeys: rootKeys.map { try VerifyingKey(base64: $0) }, threshold: 1)
        store = try PackageStore(root: folder.path, configuration: StoreConfiguration(
            trustedKeys: [key], builtIns: builtIns, trustAnchor: anchor))
        // No launch is counted here: this also runs when the system starts the app in the background to refresh, which
        // shows no page. The first page a view asks for counts it (`trials: store` below), before anything is served.

        // One HTTP stack for pages and updates; misses go through the app's private HTTP cache.
        let fetcher = URLSessionFetcher()
        let engine = try ResourceEngine(source: store, configuration: EngineConfiguration(customSchemes: ["satchel"]))
        webViews = try SatchelWebViews(
            engine: engine, policy: NetworkPolicy(allowedHosts: [try HostPattern("m.shop.com")]), fetcher: fetcher,
            hook: HookScript.Configuration(origins: ["satchel://m.shop.com"]),
            // The launch counted at its first page; each view judges a version on trial from its page: confirmed once
            // healthy, rolled back with a reason.
            trials: store)
        // The catalog is checked under the store's root keys; entries whose `minRuntime` is above this Satchel's
        // (`SatchelRuntime.version`, the default `runtime`) are skipped.
        updater = Updater(
            store: store, fetcher: fetcher, options: UpdaterOptions(catalogURL: catalogURL, trustedKeys: [key]))
    }
}
// END APPLE GUIDE

// BEGIN APPLE GUIDE
extension OfflinePages {
    /// A page in a new view: `satchel://` is answered by the scheme handler, bodies come back through the hook.
    /// `navigation` is the app's delegate below, kept by the app (a view holds its delegate weakly).
    func makePageView(path: String = "/", navigation: PageNavigation) -> WKWebView {
        let webView = webViews.makeWebView()
        webView.navigationDelegate = navigation
        webView.load(URLRequest(url: URL(string: "satchel://m.shop.com" + path)!))
        return webView
    }

    /// An app that knows better than the judge (its own health check passed) may still end a trial itself.
    func confirmShop() throws {
        try store.confirm(try PackageID("shop"))
    }
}
// END APPLE GUIDE

// BEGIN APPLE GUIDE
/// The app's navigation delegate, set on every view: it forwards to Satchel the calls its trial judge and white-screen
/// recovery read, and lets every response through (an app with policies of its own decides after the forward).
@MainActor
final class PageNavigation: NSObject, WKNavigationDelegate {
    let satchel: SatchelWebViews

    init(satchel: SatchelWebViews) { self.satchel = satchel }

    func webView(_ webView: WKWebView, didStartProvisionalNavigation navigation: WKNavigation!) {
        satchel.didStartProvisionalNavigation(webView)
    }

    func webView(
        _ webView: WKWebView, decidePolicyFor navigationResponse: WKNavigationResponse,
        decisionHandler: @escaping @MainActor @Sendable (WKNavigationResponsePolicy) -> Void
    ) {
        satchel.navigationResponse(webView, navigationResponse)
        decisionHandler(.allow)
    }

    func webView(_ webView: WKWebView, didCommit navigation: WKNavigation!) { satchel.didCommit(webView) }

    func webView(_ webView: WKWebView, didFinish navigation: WKNavigation!) { satchel.didFinish(webView) }

    func webView(_ webView: WKWebView, didFail navigation: WKNavigation!, withError error: any Error) {
        satchel.didFail(webView)
    }

    func webView(
        _ webView: WKWebView, didFailProvisionalNavigation navigation: WKNavigation!, withError error: any Error
    ) {
        satchel.didFail(webView)
    }

    func webViewWebContentProcessDidTerminate(_ webView: WKWebView) { satchel.webContentProcessDidTerminate(webView) }
}
// END APPLE GUIDE

// BEGIN APPLE GUIDE
extension OfflinePages {
    /// At each return to the foreground, and from a `BGAppRefreshTask`: fetch the catalog, download what is new,
    /// install it on trial. The new version serves from the next launch that shows a page; updating counts none.
    func update() async {
        do {
            let report = try await updater.run()
            for outcome in report.outcomes where outcome.action == .installed {
                print("satchel: \(outcome.id) \(outcome.to) installed via \(outcome.via?.rawValue ?? "?")")
            }
            for failure in report.failures { print("satchel: \(failure.id) not updated: \(failure.error)") }
        } catch {
            print("satchel: no update: \(error)")  // offline, or the catalog was refused: the store is unchanged
        }
    }
}
// END APPLE GUIDE

// BEGIN APPLE GUIDE
extension OfflinePages {
    /// With the store in an App Group container: no lock held while the app is suspended (iOS ends an app suspended
    /// with a file lock there). Keep the returned object as long as the store.
    func releaseLocksWhileSuspended() -> SatchelBackgroundLocks {
        let locks = SatchelBackgroundLocks(store: store, engine: webViews.engine)
        locks.resumeHandler = { outcome in
            // Back after a suspension longer than the lease: versions the pages came from were removed meanwhile, and
            // the engine now serves the active ones (reload the views showing the old ones).
            if outcome.reloaded { print("satchel: removed while suspended:", outcome.resumed?.lost ?? [:]) }
            for failure in outcome.failures { print(failure) }
        }
        return locks
    }

    /// From a `BGAppRefreshTask`, which runs while the store is suspended: locks only for the task's length (call
    /// `locks.suspend()` from its expiration handler too).
    func updateInBackground(_ locks: SatchelBackgroundLocks) async {
        locks.resume()
        await update()
        locks.suspend()
    }
}
// END APPLE GUIDE

// BEGIN APPLE GUIDE
#if canImport(BackgroundTasks) && !os(macOS)
extension OfflinePages {
    /// The refresh task's identifier: listed under `BGTaskSchedulerPermittedIdentifiers` in Info.plist.
    static let refreshTask = "com.shop.app.satchel-refresh"

    /// From `application(_:didFinishLaunchingWithOptions:)`, before it returns: the system may have launched the app to
    /// run the task. The handler runs on the main queue (`using: .main`), where this class lives.
    func registerBackgroundRefresh(locks: SatchelBackgroundLocks) {
        _ = BGTaskScheduler.shared.register(forTaskWithIdentifier: Self.refreshTask, using: .main) { task in
            self.scheduleBackgroundRefresh()  // the next one: a request runs once
            let update = Task { @MainActor in
                await self.updateInBackground(locks)  // resume, update, suspend
                task.setTaskCompleted(success: !Task.isCancelled)
            }
            // Out of time: the update stops at its next step, lets the locks go, and the task is completed.
            task.expirationHandler = { @Sendable in update.cancel() }
        }
    }

    /// At launch, on each move to the background, and from each refresh: a refresh no sooner than 6 hours from now,
    /// when the system chooses (it may be much later, or not at all while the app is unused).
    func scheduleBackgroundRefresh() {
        let request = BGAppRefreshTaskRequest(identifier: Self.refreshTask)
        request.earliestBeginDate = Date(timeIntervalSinceNow: 6 * 3600)
        do { try BGTaskScheduler.shared.submit(request) } catch { print("satchel: no background refresh: \(error)") }
    }
}
#endif
// END APPLE GUIDE
