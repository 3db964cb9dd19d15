import Foundation
import SatchelCore
import SatchelEngine
import SatchelHTTP
import SatchelHost
import SatchelPublishing
import SatchelStore
import SatchelTestSupport
import SatchelUpdate
import Testing

/// The shop's releases on a fake CDN, each page naming its version, and a signed catalog offering one of them.
private struct Shop {
    let key = SigningKey.generate()
    let origin = FakeOrigin()
    let base = "https://cdn.example/releases/"
    var bundles: [String: String] = [:]

    init(folder: String, versions: [String]) throws {
        for version in versions {
            let source = folder + "/src-\(version)"
            try makeTree(source, [
                "index.html": "<h1>shop \(version)</h1>", "app.js": "console.log('\(version)')", "style.css": "/* \(version) */",
            ])
            let options = PackOptions(
                id: try PackageID("shop"), version: try SemanticVersion(version),
                scope: try Scope(hosts: [HostPattern("m.shop.example")], pathPrefix: PathPrefix("/")), signingKey: key,
                sourceDateEpoch: 1_700_000_000)
            let bundle = try Packer.pack(source: source, options: options, outputFolder: folder + "/release").bundle
            bundles[version] = bundle
            origin.put(base + URL(fileURLWithPath: bundle).lastPathComponent, try readBytes(bundle))
        }
    }

    /// Publishes a catalog whose only entry is `version`.
    func offer(_ version: String) throws {
        let bundle = bundles[version]!
        let bytes = try readBytes(bundle)
        let entry = CatalogEntry(
            id: try PackageID("shop"), version: try SemanticVersion(version), url: URL(fileURLWithPath: bundle).lastPathComponent,
            size: Int64(bytes.count), sha256: Digests.sha256Hex(bytes))
        let catalog = try Catalog(expires: Timestamp(secondsSinceEpoch: 4_000_000_000), packages: [entry]).canonicalBytes
        origin.put(base + "catalog.json", catalog)
        origin.put(base + "catalog.json.sig", Array(try key.signature(for: catalog).base64.utf8))
    }
}

/// A scheme task that keeps what it was answered.
private final class PageTask: SchemeTask, @unchecked Sendable {
    let request: ResourceRequest
    private let lock = NSLock()
    private var body: [UInt8] = []
    private var finished = false
    private var failure: String?

    init(url: String) { request = ResourceRequest(url: url) }

    func didReceive(_ head: ResponseHead) {}
    func didReceive(_ data: [UInt8], ready: @escaping @Sendable () -> Void) {
        lock.withLock { body += data }
        ready()
    }
    func didFinish() { lock.withLock { finished = true } }
    func didFail(_ error: any Error) { lock.withLock { failure = "\(error)" } }

    var ended: Bool { lock.withLock { finished || failure != nil } }
    /// The body, or what the task failed with.
    var answer: String { lock.withLock { failure.map { "failed: \($0)" } ?? String(decoding: body, as: UTF8.self) } }
}

/// What a scheme task's web view is to the driver: an identity its tasks are grouped by.
private final class WebViewStandIn: Sendable {}

/// One process of the app, made as docs/apple.md's `OfflinePages` makes it at every launch, a background one included:
/// the store, the engine, the container's scheme-task driver (with the launch that shows pages, as `SatchelWebViews`
/// wires it from `trials: store`), and the updater.
private final class AppProcess {
    let store: PackageStore
    let engine: ResourceEngine
    let launch: PageLaunch
    let driver: SchemeTaskDriver
    let updater: Updater
    private let queue = DispatchQueue(label: "satchel.page-launch-test")

    init(root: String, shop: Shop, maxTrialLaunches: Int) throws {
        store = try PackageStore(root: root, configuration: StoreConfiguration(trustedKeys: [shop.key.verifyingKey], maxTrialLaunches: maxTrialLaunches))
        engine = try ResourceEngine(source: store, configuration: EngineConfiguration(customSchemes: ["satchel"]))
        launch = PageLaunch(records: store, engine: engine)
        let loader = ResourceLoader(engine: engine, fetcher: shop.origin, policy: NetworkPolicy(allowedHosts: []))
        driver = SchemeTaskDriver(layer: RequestLayer(loader: loader, configuration: .webKit(hook: nil, cookies: nil)), queue: queue, launch: launch)
        updater = Updater(store: store, fetcher: shop.origin, options: UpdaterOptions(
            catalogURL: shop.base + "catalog.json", trustedKeys: [shop.key.verifyingKey],
            retry: RetryPolicy(attempts: 3, initialDelay: .milliseconds(1), maxDelay: .milliseconds(5))))
    }

    /// Shows `paths` in each of `views` web views, every request started in one turn of the executor (so they race to
    /// begin the launch), and returns every answer, view by view.
    func showPages(_ paths: [String], views: Int) async throws -> [String] {
        let groups = (0..<views).map { _ in WebViewStandIn() }
        let tasks = groups.map { _ in paths.map { PageTask(url: "satchel://m.shop.example" + $0) } }
        queue.async { [driver] in
            for (view, viewTasks) in zip(groups, tasks) {
                for task in viewTasks { driver.start(task, group: ObjectIdentifier(view)) }
            }
        }
        // A bound on a test that would otherwise hang, not a speed goal: far beyond a loaded machine's worst (a
        // clean-clone CI run beside other builds took more than 30 s here; the whole suite's run takes about 2 minutes).
        #expect(await eventually(within: .seconds(600)) { tasks.joined().allSatisfy(\.ended) })
        return tasks.joined().map(\.answer)
    }

    var shop: PackageState? { try? store.state(of: PackageID("shop")) }
}

@Suite("Only a launch that shows the app's pages counts against a trial (decision 0036)")
struct PageLaunchTests {
    @Test("a background launch that updates spends no trial; a launch that shows pages spends one, however many views, pages and requests")
    func backgroundLaunchesSpendNothing() async throws {
        try await withTemporaryFolder { folder async throws in
            let shop = try Shop(folder: folder, versions: ["1.0.0", "1.1.0"])
            let root = folder + "/store"
            do {
                let store = try PackageStore(root: root, configuration: StoreConfiguration(trustedKeys: [shop.key.verifyingKey]))
                try store.install(bundle: shop.bundles["1.0.0"]!)
                try store.confirm(PackageID("shop"))
            }
            try shop.offer("1.1.0")

            // A BGAppRefreshTask launch: the app makes everything it makes at launch, updates, and shows no page.
            do {
                let app = try AppProcess(root: root, shop: shop, maxTrialLaunches: 2)
                let report = try await app.updater.run()
                #expect(report.outcomes.map { "\($0.action.rawValue) \($0.to)" } == ["installed 1.1.0"])
                #expect(app.shop?.trial?.description == "1.1.0")
                #expect(app.shop?.launches == 0)
                #expect(app.launch.outcome == nil)
            }
            // More background launches than the trial has launches: the trial is still whole.
            for _ in 0..<3 {
                let app = try AppProcess(root: root, shop: shop, maxTrialLaunches: 2)
                #expect(try await app.updater.run().outcomes.map(\.action) == [.upToDate])
                #expect(app.shop?.launches == 0)
            }

            // The user opens the app: two views, three files each, all at once; then another page later in the launch.
            let app = try AppProcess(root: root, shop: shop, maxTrialLaunches: 2)
            let answers = try await app.showPages(["/index.html", "/app.js", "/style.css"], views: 2)
            #expect(answers == Array(repeating: ["<h1>shop 1.1.0</h1>", "console.log('1.1.0')", "/* 1.1.0 */"], count: 2).flatMap { $0 })
            #expect(app.shop?.launches == 1)
            #expect(try await app.showPages(["/index.html"], views: 1) == ["<h1>shop 1.1.0</h1>"])
            #expect(app.shop?.launches == 1)
            #expect(app.launch.outcome?.count?.trials == [try PackageID("shop"): 1])
            #expect(app.launch.outcome?.failures == [])
            #expect(app.shop?.trial?.description == "1.1.0")
        }
    }

    @Test("the launch's versions are pinned at its first page: a trial past its launches falls back before that page is answered")
    func trialOutOfLaunchesFallsBackBeforeTheFirstPage() async throws {
        try await withTemporaryFolder { folder async throws in
            let shop = try Shop(folder: folder, versions: ["1.0.0", "1.1.0"])
            let root = folder + "/store"
            do {
                let store = try PackageStore(root: root, configuration: StoreConfiguration(trustedKeys: [shop.key.verifyingKey]))
                try store.install(bundle: shop.bundles["1.0.0"]!)
                try store.confirm(PackageID("shop"))
                try store.install(bundle: shop.bundles["1.1.0"]!)
            }
            do {
                let app = try AppProcess(root: root, shop: shop, maxTrialLaunches: 1)
                #expect(try await app.showPages(["/index.html"], views: 1) == ["<h1>shop 1.1.0</h1>"])
                #expect(app.shop?.launches == 1)
            }
            // Its engine pinned the trial when it was made; the first page comes after the trial's last launch.
            let app = try AppProcess(root: root, shop: shop, maxTrialLaunches: 1)
            #expect(app.engine.servedPackages.map(\.manifest.version.description) == ["1.1.0"])
            #expect(try await app.showPages(["/index.html", "/app.js"], views: 1) == ["<h1>shop 1.0.0</h1>", "console.log('1.0.0')"])
            #expect(app.shop?.active.description == "1.0.0")
            #expect(app.shop?.failed.map(\.description) == ["1.1.0"])
            let shopID = try PackageID("shop")
            #expect(app.launch.outcome?.count?.rolledBack == [
                LaunchCount.Rollback(id: shopID, from: try SemanticVersion("1.1.0"), to: try SemanticVersion("1.0.0")),
            ])
            #expect(app.engine.servedPackages.map(\.manifest.version.description) == ["1.0.0"])
        }
    }

    @Test("a process that updated in the background and is then opened shows what it installed, from its first page, on the trial's first launch")
    func openedAfterABackgroundUpdate() async throws {
        try await withTemporaryFolder { folder async throws in
            let shop = try Shop(folder: folder, versions: ["1.0.0", "1.1.0"])
            let root = folder + "/store"
            do {
                let store = try PackageStore(root: root, configuration: StoreConfiguration(trustedKeys: [shop.key.verifyingKey]))
                try store.install(bundle: shop.bundles["1.0.0"]!)
                try store.confirm(PackageID("shop"))
            }
            try shop.offer("1.1.0")
            let app = try AppProcess(root: root, shop: shop, maxTrialLaunches: 2)
            #expect(app.engine.servedPackages.map(\.manifest.version.description) == ["1.0.0"])
            #expect(try await app.updater.run().outcomes.map(\.action) == [.installed])
            #expect(app.shop?.launches == 0)
            #expect(try await app.showPages(["/index.html"], views: 1) == ["<h1>shop 1.1.0</h1>"])
            #expect(app.shop?.launches == 1)
        }
    }
}
