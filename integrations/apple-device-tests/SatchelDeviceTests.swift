// What only a device can tell (docs/testing.md, "What only a device can tell"): an app team adds this file to its
// app's XCTest target (iOS, on a device or a simulator; the memory kill needs a device) with SatchelWebKit linked,
// and runs it on each iOS release it supports. Nothing here runs in this repository: the Apple type-check compiles it
// against the WebKit stand-in, so it keeps up with the adapter's API.
#if canImport(WebKit)
import Foundation
import SatchelCore
import SatchelEngine
import SatchelHTTP
import SatchelHost
import SatchelWebKit
import WebKit
import XCTest

/// An upstream that records what reached it and answers with the size and the bytes' hex.
final class RecordingUpstream: AsyncNetworkFetcher, @unchecked Sendable {
    private let lock = NSLock()
    private var received: [ResourceRequest] = []
    var requests: [ResourceRequest] { lock.withLock { received } }

    func fetchResponse(_ request: ResourceRequest, timeouts: FetchTimeouts) async throws -> ResourceResponse {
        lock.withLock { received.append(request) }
        let body = request.body ?? []
        let text = "\(body.count) " + body.map { String(format: "%02x", $0) }.joined()
        return ResourceResponse(status: 200, headers: ["Content-Type": "text/plain"], body: .bytes(Array(text.utf8)))
    }
}

/// A package served from a folder: `index.html` under `/app/` of app.example; anything else goes to the upstream.
struct FolderPackage: PackageSource {
    let package: ServedPackage
    func servedPackages() throws -> [ServedPackage] { [package] }
    func changeToken() -> [Int64] { [0] }
    func pin(_ packages: [ServedPackage]) throws -> any Sendable { 0 }

    static func make(page: String, version: String = "1.0.0") throws -> FolderPackage {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("satchel-device-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let bytes = Array(page.utf8)
        try Data(bytes).write(to: URL(fileURLWithPath: folder + "/index.html"))
        let manifest = try Manifest(
            id: PackageID("device"), version: SemanticVersion(version), createdAt: Timestamp(secondsSinceEpoch: 0),
            scope: Scope(hosts: [HostPattern("app.example")], pathPrefix: PathPrefix("/app/")),
            files: [FileRecord(path: try SafePath(validating: "index.html"), size: Int64(bytes.count), sha256: Digests.sha256Hex(bytes), mime: "text/html")])
        return FolderPackage(package: ServedPackage(manifest: manifest, folder: folder))
    }
}

/// The adapter with its round trips counted: how often the jar asks `WKHTTPCookieStore` for every cookie.
final class CountingCookieStore: CookieStore, @unchecked Sendable {
    let adapter: WKCookieStoreAdapter
    private let lock = NSLock()
    private var count = 0
    var reads: Int { lock.withLock { count } }

    init(_ adapter: WKCookieStoreAdapter) { self.adapter = adapter }

    func allCookies() async -> [Cookie] {
        lock.withLock { count += 1 }
        return await adapter.allCookies()
    }
    func setCookie(_ cookie: Cookie) async { await adapter.setCookie(cookie) }
    func deleteCookie(_ cookie: Cookie) async { await adapter.deleteCookie(cookie) }
    func deleteAllCookies() async { await adapter.deleteAllCookies() }
    func observeChanges(_ changed: @escaping @Sendable () -> Void) -> Bool { adapter.observeChanges(changed) }
    func kept(_ cookie: Cookie) -> Cookie? { adapter.kept(cookie) }
}

/// Two versions of one package, the newer on trial until a verdict: the store's part of judging a trial, and of counting
/// the launches that show pages, in memory.
final class TrialSource: PackageSource, TrialRecords, LaunchRecords, @unchecked Sendable {
    enum Serving { case trial, confirmed, rolledBack(TrialFailure) }
    let fallback: ServedPackage
    let candidate: ServedPackage
    private let lock = NSLock()
    private var serving = Serving.trial
    private var launchesCounted = 0
    var state: Serving { lock.withLock { serving } }
    /// Launches the container counted (the first page of each ``SatchelWebViews`` begins one).
    var launches: Int { lock.withLock { launchesCounted } }

    init(fallback: ServedPackage, candidate: ServedPackage) {
        self.fallback = fallback
        self.candidate = candidate
    }

    func servedPackages() throws -> [ServedPackage] {
        lock.withLock { if case .rolledBack = serving { [fallback] } else { [candidate] } }
    }
    func changeToken() -> [Int64] { lock.withLock { if case .rolledBack = serving { [1] } else { [2] } } }
    func pin(_ packages: [ServedPackage]) throws -> any Sendable { 0 }

    func trialVersion(of id: PackageID) throws -> SemanticVersion? {
        lock.withLock { if case .trial = serving { candidate.manifest.version } else { nil } }
    }
    func confirmTrial(_ id: PackageID, version: SemanticVersion) throws -> Bool {
        lock.withLock {
            guard case .trial = serving, version == candidate.manifest.version else { return false }
            serving = .confirmed
            return true
        }
    }
    func countPageLaunch() throws -> LaunchCount {
        lock.withLock {
            launchesCounted += 1
            guard case .trial = serving else { return LaunchCount() }
            return LaunchCount(trials: [candidate.manifest.id: launchesCounted])
        }
    }
    func rollBackTrial(_ id: PackageID, version: SemanticVersion, because failure: TrialFailure) throws -> TrialRollbackOutcome {
        lock.withLock {
            guard case .trial = serving, version == candidate.manifest.version else { return .notOnTrial }
            serving = .rolledBack(failure)
            return .rolledBack(serving: fallback.manifest.version)
        }
    }
}

/// Forwards what the container needs from the navigation delegate (as an app's delegate does) and waits for loads.
@MainActor
final class ContainerDelegate: NSObject, WKNavigationDelegate {
    let satchel: SatchelWebViews
    private var finished: [CheckedContinuation<Void, Never>] = []

    init(satchel: SatchelWebViews) { self.satchel = satchel }

    func webView(_ webView: WKWebView, didStartProvisionalNavigation navigation: WKNavigation!) {
        satchel.didStartProvisionalNavigation(webView)
    }

    func webView(_ webView: WKWebView, didCommit navigation: WKNavigation!) {
        satchel.didCommit(webView)
    }

    func webView(
        _ webView: WKWebView, decidePolicyFor navigationResponse: WKNavigationResponse,
        decisionHandler: @escaping @MainActor @Sendable (WKNavigationResponsePolicy) -> Void
    ) {
        satchel.navigationResponse(webView, navigationResponse)
        decisionHandler(.allow)
    }

    func webView(_ webView: WKWebView, didFinish navigation: WKNavigation!) {
        satchel.didFinish(webView)
        let waiting = finished
        finished = []
        for waiter in waiting { waiter.resume() }
    }

    func webViewWebContentProcessDidTerminate(_ webView: WKWebView) {
        satchel.webContentProcessDidTerminate(webView)
    }

    func nextLoad() async {
        await withCheckedContinuation { finished.append($0) }
    }
}

@MainActor
final class SatchelDeviceTests: XCTestCase {
    let page = "<!doctype html><html><head><title>device</title></head><body>device</body></html>"

    func makeSatchel(upstream: any NetworkFetcher, terminate: ((WKWebView) -> Void)? = nil) throws -> SatchelWebViews {
        let engine = try ResourceEngine(source: try FolderPackage.make(page: page))
        return try SatchelWebViews(
            engine: engine, policy: NetworkPolicy(allowedHosts: [try HostPattern("app.example")]), fetcher: upstream,
            hook: HookScript.Configuration(origins: ["satchel://app.example"]), ephemeral: true,
            recovery: WebProcessRecovery.Configuration(unresponsiveTimeout: .seconds(5), heartbeat: .seconds(1)), terminate: terminate)
    }

    /// HttpOnly and SameSite survive WKHTTPCookieStore both ways (HTTPCookie's properties differ by release).
    func testCookieAttributesRoundTripThroughWKHTTPCookieStore() async throws {
        let satchel = try makeSatchel(upstream: RecordingUpstream())
        let jar = satchel.cookies
        for field in ["a=1; Path=/; HttpOnly; SameSite=Strict", "b=2; Path=/; Secure; SameSite=None", "c=3; Path=/; SameSite=Lax", "d=4; Path=/"] {
            let stored = try await jar.set(field, for: "https://app.example/")
            XCTAssertNoThrow(try stored.get(), field)
        }
        let read = Dictionary(uniqueKeysWithValues: try await jar.cookies().map { ($0.name, $0) })
        XCTAssertEqual(read["a"]?.httpOnly, true)
        XCTAssertEqual(read["a"]?.sameSite, .strict)
        XCTAssertEqual(read["b"]?.sameSite, Cookie.SameSite.none)
        XCTAssertEqual(read["c"]?.sameSite, .lax)
        // No attribute: stored with no policy, which Apple documents as sent cross-site; read back as None.
        XCTAssertEqual(read["d"]?.sameSite, Cookie.SameSite.none)
    }

    /// Each call to the store answers well inside the jar's bound (5 s), over many calls; the slowest is printed so a
    /// release that regresses shows up before its callback stops coming.
    func testCookieStoreCallsAnswerWithinTheBound() async throws {
        let satchel = try makeSatchel(upstream: RecordingUpstream())
        var slowest: Duration = .zero
        for index in 0..<100 {
            let started = ContinuousClock.now
            _ = try await satchel.cookies.set("n\(index)=\(index); Path=/", for: "https://app.example/")
            _ = try await satchel.cookies.cookies()
            slowest = max(slowest, ContinuousClock.now - started)
        }
        print("slowest set+read: \(slowest)")
        XCTAssertLessThan(slowest, satchel.cookies.configuration.storeTimeout)
    }

    /// `WKHTTPCookieStoreObserver` keeps the jar's copy fresh on this release: reads between changes cost no round trip,
    /// and a cookie set in the store behind the jar's back (as the web view's own loads set them) reaches the jar once
    /// WebKit calls the observer. The round trips of 100 reads are printed.
    func testCookieStoreObserverKeepsTheJarFresh() async throws {
        let dataStore = WKWebsiteDataStore.nonPersistent()
        let store = CountingCookieStore(WKCookieStoreAdapter(store: dataStore.httpCookieStore))
        let jar = AppCookieJar(store: store)
        let request = ResourceRequest(url: "satchel://app.example/")
        _ = try await jar.set("a=1; Path=/", for: "https://app.example/")
        for _ in 0..<100 { _ = try await jar.cookieHeader(for: "https://app.example/x", request: request) }
        print("round trips for a write and 100 reads: \(store.reads)")
        // At first, once the observer is registered, and once for its callback after the write: never one per read.
        XCTAssertLessThanOrEqual(store.reads, 5)
        // Another adapter on the same store writes without the jar knowing.
        await WKCookieStoreAdapter(store: dataStore.httpCookieStore).setCookie(Cookie(name: "b", value: "2", domain: "app.example"))
        var header: String?
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            header = try await jar.cookieHeader(for: "https://app.example/x", request: request)
            if header == "a=1; b=2" { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        XCTAssertEqual(header, "a=1; b=2", "the observer was not called for a change the jar did not make")
    }

    /// The bodies a page sends arrive upstream byte for byte, whichever way this release of WebKit delivers them
    /// (httpBody, httpBodyStream, or not at all: then the hook's channels carry them).
    func testRequestBodiesArriveByteForByte() async throws {
        let upstream = RecordingUpstream()
        let satchel = try makeSatchel(upstream: upstream)
        let webView = satchel.makeWebView()
        let probe = ContainerDelegate(satchel: satchel)
        webView.navigationDelegate = probe
        webView.load(URLRequest(url: URL(string: "satchel://app.example/app/index.html")!))
        await probe.nextLoad()
        let cases = [
            "new Uint8Array([0, 1, 2, 127, 128, 255])",
            "'text with ü and \\u{1F600}'",
            "(() => { const f = new FormData(); f.append('a', '1'); return new URLSearchParams(f); })()",
        ]
        for body in cases {
            let script = "const r = await fetch('/api/echo', {method: 'POST', body: \(body)}); return await r.text();"
            let answer = try await webView.callAsyncJavaScript(script, arguments: [:], in: nil, contentWorld: .page) as? String
            let sent = upstream.requests.last?.body ?? []
            XCTAssertEqual(answer, "\(sent.count) " + sent.map { String(format: "%02x", $0) }.joined(), body)
            XCTAssertFalse(sent.isEmpty, "\(body): the body was lost")
        }
    }

    /// A page past the memory WebKit allows: its process is killed and the view reloads what it showed (device only:
    /// the simulator's limits differ).
    func testMemoryKillRecovers() async throws {
        let satchel = try makeSatchel(upstream: RecordingUpstream())
        let webView = satchel.makeWebView()
        let probe = ContainerDelegate(satchel: satchel)
        webView.navigationDelegate = probe
        var reports: [WebContentRecovery.Report] = []
        satchel.recovery.onRecovery = { reports.append($0) }
        webView.load(URLRequest(url: URL(string: "satchel://app.example/app/index.html")!))
        await probe.nextLoad()
        webView.evaluateJavaScript("const keep = []; (function grow() { for (let i = 0; i < 16; i++) keep.push(new Float64Array(1 << 20).fill(i)); setTimeout(grow, 0); })();")
        await probe.nextLoad()
        XCTAssertEqual(reports.first?.recovery, .reloaded(url: "satchel://app.example/app/index.html"))
    }

    /// A release on trial whose own script throws on start is rolled back by the container, with the message, and the
    /// same view shows the fallback; a good one is confirmed after the grace period. (WebKitGTK proves the same in
    /// tools/webkit-test; this checks Apple's WebKit delivers the hook's signals and the delegate's calls alike.)
    func testTrialJudgedInTheView() async throws {
        for (page, expected) in [
            ("<!doctype html><title>candidate</title><script>throw new Error('candidate broke')</script>", "script-error"),
            ("<!doctype html><title>candidate</title><p>fine</p>", "confirmed"),
        ] {
            let source = TrialSource(
                fallback: try FolderPackage.make(page: page.replacingOccurrences(of: "candidate", with: "fallback"), version: "1.0.0").package,
                candidate: try FolderPackage.make(page: page, version: "2.0.0").package)
            let satchel = try SatchelWebViews(
                engine: try ResourceEngine(source: source), policy: NetworkPolicy(allowedHosts: []), fetcher: RecordingUpstream(),
                hook: HookScript.Configuration(origins: ["satchel://app.example"]), ephemeral: true, trials: source,
                trialJudging: TrialJudge.Configuration(grace: .seconds(1), loadTimeout: .seconds(10)))
            var verdicts: [TrialReport] = []
            satchel.trialHandler = { _, report in verdicts.append(report) }
            let webView = satchel.makeWebView()
            let delegate = ContainerDelegate(satchel: satchel)
            webView.navigationDelegate = delegate
            webView.load(URLRequest(url: URL(string: "satchel://app.example/app/index.html")!))
            await delegate.nextLoad()
            // The page began the launch: counted once, before it was answered (decision 0036).
            XCTAssertEqual(source.launches, 1, page)
            try await Task.sleep(for: .seconds(2))
            XCTAssertEqual(verdicts.count, 1, page)
            let title = try await webView.callAsyncJavaScript("return document.title", arguments: [:], in: nil, contentWorld: .page) as? String
            if expected == "confirmed" {
                XCTAssertEqual(verdicts.first?.decision, "confirmed")
                XCTAssertEqual(title, "candidate")
            } else {
                XCTAssertEqual(verdicts.first?.failure, .scriptError("Error: candidate broke"))
                XCTAssertEqual(verdicts.first?.serving?.description, "1.0.0")
                XCTAssertEqual(title, "fallback")
            }
        }
    }

    /// A view that is not on screen (a warm view) is never judged hung, however long its process stays silent.
    func testHiddenViewIsNeverTerminated() async throws {
        var terminated = 0
        let satchel = try makeSatchel(upstream: RecordingUpstream()) { _ in terminated += 1 }
        let pool = WarmWebViewPool(capacity: 1, make: satchel.makeWebView)
        pool.warm()
        try await Task.sleep(for: .seconds(20))
        XCTAssertEqual(terminated, 0)
    }
}
#endif
