// docs/apple.md's code, compiled: a documentation test (Tests/DocumentationTests/AppleGuideTests.swift) checks that
// every ```swift block of docs/apple.md is, in order, the text between a BEGIN and an END line below. Edit both
// together.
import Foundation
import SatchelCore
import SatchelEngine
import SatchelHTTP
import SatchelStore
import SatchelUpdate
import SatchelWebKit
import WebKit

// BEGIN APPLE GUIDE
/// Satchel in an iOS app: made once at launch, on the main actor, before the first web view.
@MainActor
final class OfflinePages {
    let store: PackageStore
    let webViews: SatchelWebViews
    let updater: Updater

    init(publicKey: String, catalogURL: String, appVersion: String) throws {
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
        let key = try VerifyingKey(base64: publicKey)
        store = try PackageStore(root: folder.path, configuration: StoreConfiguration(trustedKeys: [key], builtIns: builtIns))
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
        updater = Updater(store: store, fetcher: fetcher, options: UpdaterOptions(
            catalogURL: catalogURL, trustedKeys: [key], runtime: try SemanticVersion(appVersion)))
    }
}
// END APPLE GUIDE

// BEGIN APPLE GUIDE
extension OfflinePages {
    /// A page in a new view: `satchel://` is answered by the scheme handler, bodies come back through the hook.
    func makePageView(path: String = "/") -> WKWebView {
        let webView = webViews.makeWebView()
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
extension OfflinePages {
    /// At each return to the foreground, and from a `BGAppRefreshTask`: fetch the catalog, download what is new,
    /// install it on trial. The new version serves from the next launch that shows a page; updating counts none.
    func update() async {
        do {
            let report = try await updater.run()
            for outcome in report.outcomes where outcome.action == .installed {
                print("satchel: \(outcome.id) \(outcome.to) installed via \(outcome.via ?? "?")")
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
