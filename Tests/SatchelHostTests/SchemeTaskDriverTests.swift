import Foundation
import SatchelCore
import SatchelEngine
import SatchelHTTP
import SatchelTestSupport
@testable import SatchelHost
import SatchelWebKit
import Testing

/// A stand-in for WKURLSchemeTask that records every call and every breach of WebKit's contract.
final class RecordingTask: SchemeTask, @unchecked Sendable {
    static let queueKey = DispatchSpecificKey<Int>()
    let request: ResourceRequest
    private let lock = NSLock()
    private(set) var calls: [String] = []
    private(set) var violations: [String] = []
    private(set) var bytes = 0
    private var responded = false
    private var ended = false
    private var stopped = false

    init(url: String) { request = ResourceRequest(url: url) }
    init(_ request: ResourceRequest) { self.request = request }

    private func record(_ call: String, _ check: () -> String?) {
        lock.withLock {
            if DispatchQueue.getSpecific(key: Self.queueKey) != 1 { violations.append("\(call) off the serial queue") }
            if stopped { violations.append("\(call) after stop") }
            if let problem = check() { violations.append(problem) }
            calls.append(call)
        }
    }

    func didReceive(_ head: ResponseHead) {
        record("response") {
            defer { responded = true }
            received = head
            return responded ? "second response" : ended ? "response after the end" : nil
        }
    }

    func didReceive(_ data: [UInt8], ready: @escaping @Sendable () -> Void) {
        record("data") {
            bytes += data.count
            body += data
            return !responded ? "data before the response" : ended ? "data after the end" : nil
        }
        ready()
    }

    func didFinish() {
        record("finish") {
            defer { ended = true }
            return !responded ? "finish before the response" : ended ? "second end" : nil
        }
    }

    func didFail(_ error: any Error) {
        record("fail") {
            defer { ended = true }
            return ended ? "second end" : nil
        }
    }

    /// Called on the queue just before the driver's stop.
    func markStopped() { lock.withLock { stopped = true } }

    var snapshot: (calls: [String], violations: [String], bytes: Int) { lock.withLock { (calls, violations, bytes) } }
    private var received: ResponseHead?
    private var body: [UInt8] = []
    /// The response head and the body's bytes so far.
    var response: (head: ResponseHead?, body: String) { lock.withLock { (received, String(decoding: body, as: UTF8.self)) } }

    /// Waits (up to 5 s) for the finish or the failure.
    func ended() async -> Bool {
        for _ in 0..<500 {
            if lock.withLock({ ended }) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }
}

@Suite("The scheme task driver keeps WebKit's contract")
struct SchemeTaskDriverTests {
    func driver(
        _ folder: String, queue: DispatchQueue, fetcher: (any NetworkFetcher)? = nil, allowed: [HostPattern] = [], overrides: [String: String] = [:],
        cookies: AppCookieJar? = nil
    ) throws -> SchemeTaskDriver {
        let files: [String: [UInt8]] = [
            "index.html": Array("<h1>hi</h1>".utf8),
            "small.js": (0..<(48 << 10)).map { UInt8(truncatingIfNeeded: $0) },
            "large.bin": (0..<(200 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 3) },
        ]
        let root = folder + "/pkg"
        var records: [FileRecord] = []
        for (path, bytes) in files {
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: root + "/" + path))
            let safe = try SafePath(validating: path)
            records.append(FileRecord(path: safe, size: Int64(bytes.count), sha256: Digests.sha256Hex(bytes), mime: MIMETable.entry(for: safe).type))
        }
        let manifest = try Manifest(
            id: PackageID("app"), version: SemanticVersion("1.0.0"), createdAt: Timestamp(secondsSinceEpoch: 0),
            scope: Scope(hosts: [HostPattern("app.example")]), files: records)
        struct Source: PackageSource {
            let package: ServedPackage
            func servedPackages() throws -> [ServedPackage] { [package] }
            func changeToken() -> [Int64] { [0] }
            func pin(_ packages: [ServedPackage]) throws -> any Sendable { 0 }
        }
        let engine = try ResourceEngine(source: Source(package: ServedPackage(manifest: manifest, folder: root)))
        let policy = NetworkPolicy(allowedHosts: allowed, upstreamOverrides: overrides, cookies: cookies)
        let loader = fetcher.map { ResourceLoader(engine: engine, fetcher: $0, policy: policy) } ?? ResourceLoader(engine: engine, fetcher: URLSessionFetcher(), policy: policy)
        return SchemeTaskDriver(layer: RequestLayer(loader: loader, configuration: .webKit(hook: nil, cookies: cookies)), queue: queue, chunkSize: 16 << 10)
    }

    func makeQueue() -> DispatchQueue {
        let queue = DispatchQueue(label: "satchel.webkit.test")
        queue.setSpecific(key: RecordingTask.queueKey, value: 1)
        return queue
    }

    @Test("without a stop: one response, the data in order, one finish; a miss outside the allow-list fails cleanly")
    func complete() async throws {
        try await withTemporaryFolder { folder async throws in
            let queue = makeQueue()
            let driver = try driver(folder, queue: queue)
            let task = RecordingTask(url: "satchel://app.example/large.bin")
            queue.async { driver.start(task) }
            for _ in 0..<500 where !task.snapshot.calls.contains("finish") { try await Task.sleep(for: .milliseconds(10)) }
            let result = task.snapshot
            #expect(result.violations.isEmpty)
            #expect(result.calls.first == "response")
            #expect(result.calls.last == "finish")
            #expect(result.bytes == 200 << 10)
            #expect(result.calls.filter { $0 == "data" }.count == 13)  // 16 KiB chunks
            let miss = RecordingTask(url: "https://elsewhere.example/x")
            queue.async { driver.start(miss) }
            for _ in 0..<500 where !miss.snapshot.calls.contains("finish") { try await Task.sleep(for: .milliseconds(10)) }
            #expect(miss.snapshot.violations.isEmpty)
            #expect(miss.snapshot.calls.first == "response")  // the 403 from the allow-list is a response
        }
    }

    @Test("10,000 races with stop arriving from another thread at random points: 0 violations")
    func races() async throws {
        try await withTemporaryFolder { folder async throws in
            let queue = makeQueue()
            let driver = try driver(folder, queue: queue)
            let urls = ["satchel://app.example/small.js", "satchel://app.example/large.bin", "satchel://app.example/index.html"]
            var tasks: [RecordingTask] = []
            let total = 10_000
            let batch = 100
            for start in stride(from: 0, to: total, by: batch) {
                await withTaskGroup(of: Void.self) { group in
                    for index in start..<min(total, start + batch) {
                        let task = RecordingTask(url: urls[index % urls.count])
                        tasks.append(task)
                        group.addTask {
                            queue.async { driver.start(task) }
                            // Stops land anywhere: at once, during the work, or (sometimes) after the end.
                            let delay = [0, 0, 50, 200, 1_000, 3_000, 20_000][index % 7]
                            if delay > 0 { try? await Task.sleep(for: .microseconds(Int.random(in: 0...delay))) }
                            await withCheckedContinuation { continuation in
                                DispatchQueue.global().async {
                                    queue.async {
                                        task.markStopped()
                                        driver.stop(task)
                                        continuation.resume()
                                    }
                                }
                            }
                        }
                    }
                }
            }
            // Let any work that was already in flight try (and fail) to reach its stopped task.
            try await Task.sleep(for: .milliseconds(500))
            await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
            var spread = ["before the response": 0, "between response and end": 0, "after the end": 0]
            var violations: [String] = []
            for task in tasks {
                let result = task.snapshot
                violations += result.violations
                if result.calls.isEmpty { spread["before the response"]! += 1 } else if result.calls.last == "finish" || result.calls.last == "fail" {
                    spread["after the end"]! += 1
                } else {
                    spread["between response and end"]! += 1
                }
            }
            print("scheme task races: \(tasks.count) stops; spread: \(spread.sorted { $0.key < $1.key })")
            #expect(tasks.count == total)
            #expect(violations.isEmpty, "\(violations.prefix(5))")
            #expect(spread.values.allSatisfy { $0 > 0 }, "stops must land in every phase: \(spread)")
        }
    }

    @Test("1,000 requests that finish, fail or are stopped leave no task behind in the driver")
    func bookkeeping() async throws {
        try await withTemporaryFolder { folder async throws in
            let queue = makeQueue()
            let driver = try driver(folder, queue: queue, fetcher: BreakingFetcher(), allowed: [try HostPattern("broken.example")])
            var tasks: [RecordingTask] = []
            for index in 0..<1_000 {
                // Finishes (package files), fails (an upstream that breaks mid-body), or is stopped mid-way.
                let url = ["satchel://app.example/large.bin", "satchel://app.example/index.html", "https://broken.example/x", "satchel://app.example/small.js"][index % 4]
                let task = RecordingTask(url: url)
                tasks.append(task)
                queue.async { driver.start(task) }
                if index % 4 == 3 {
                    queue.async {
                        task.markStopped()
                        driver.stop(task)
                    }
                }
            }
            // Every start (and stop) has run on the queue before the table is watched.
            await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
            for _ in 0..<3_000 where driver.activeTaskCount > 0 { try await Task.sleep(for: .milliseconds(10)) }
            let outcomes = tasks.map { $0.snapshot.calls.last ?? "nothing" }
            #expect(driver.startedTaskCount == 1_000)
            #expect(driver.activeTaskCount == 0, "tasks left behind: \(driver.activeTaskCount)")
            #expect(outcomes.filter { $0 == "finish" }.count >= 500, "\(Dictionary(grouping: outcomes, by: { $0 }).mapValues(\.count))")
            #expect(outcomes.filter { $0 == "fail" }.count == 250)
            #expect(tasks.allSatisfy { $0.snapshot.violations.isEmpty })
        }
    }

    @Test("a chunk is read only once the task is ready for it; a stop while the task holds a chunk ends the work")
    func backpressure() async throws {
        try await withTemporaryFolder { folder async throws in
            let queue = makeQueue()
            let driver = try driver(folder, queue: queue)
            let task = HoldingTask(url: "satchel://app.example/large.bin")
            queue.async { driver.start(task) }
            for _ in 0..<500 where task.chunks == 0 { try await Task.sleep(for: .milliseconds(5)) }
            try await Task.sleep(for: .milliseconds(100))
            #expect(task.chunks == 1, "the driver read ahead of a task that was not ready")
            // Release three chunks, one at a time.
            for expected in 2...4 {
                queue.async { task.release() }
                for _ in 0..<500 where task.chunks < expected { try await Task.sleep(for: .milliseconds(5)) }
                try await Task.sleep(for: .milliseconds(50))
                #expect(task.chunks == expected)
            }
            #expect(driver.activeTaskCount == 1)
            #expect(queue.sync { driver.activeTasks } == ["streaming satchel://app.example/large.bin"], "a task left active is named by phase and URL")
            queue.async { driver.stop(task) }
            for _ in 0..<500 where driver.activeTaskCount > 0 { try await Task.sleep(for: .milliseconds(5)) }
            #expect(driver.activeTaskCount == 0)
            try await Task.sleep(for: .milliseconds(100))
            #expect(task.chunks == 4, "nothing after the stop")
        }
    }

    @Test("a stop cancels the upstream request, except a keepalive one (a beacon), which still reaches the network whole; its answer is then dropped")
    func keepalive() async throws {
        try await withTemporaryFolder { folder async throws in
            let queue = makeQueue()
            let upstream = GatedFetcher()
            let driver = try driver(folder, queue: queue, fetcher: upstream, allowed: [try HostPattern("origin.example")])
            // What the hook sends for a beacon, and the same request without the marker; both stopped by WebKit before
            // the upstream answered (the page went away).
            let secret = try #require(driver.loader.engine.bodyProofSecret)
            let beacon = RecordingTask(BodyProof.attaching(to: ResourceRequest(method: "POST", url: "https://origin.example/beacon", headers: ["X-Satchel-Body": "bye", "X-Satchel-Keepalive": "1"]), secret: secret))
            let plain = RecordingTask(BodyProof.attaching(to: ResourceRequest(method: "POST", url: "https://origin.example/plain", headers: ["X-Satchel-Body": "bye"]), secret: secret))
            for task in [beacon, plain] {
                queue.async { driver.start(task) }
            }
            for _ in 0..<500 where upstream.waiting < 2 { try await Task.sleep(for: .milliseconds(5)) }
            #expect(upstream.waiting == 2)
            for task in [beacon, plain] {
                queue.async {
                    task.markStopped()
                    driver.stop(task)
                }
            }
            await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
            upstream.open()
            for _ in 0..<500 where upstream.outcomes.count < 2 { try await Task.sleep(for: .milliseconds(5)) }
            let outcomes = upstream.outcomes
            #expect(outcomes["/beacon"] == "answered", "\(outcomes)")
            #expect(outcomes["/plain"] == "cancelled", "\(outcomes)")
            // Once the beacon's request went out, its endless answer is not read on: the body is cancelled.
            for _ in 0..<500 where upstream.bodyCancelled("/beacon") != true { try await Task.sleep(for: .milliseconds(5)) }
            #expect(upstream.bodyCancelled("/beacon") == true)
            // The beacon went out as the page meant it: its body, no satchel header.
            let sent = try #require(upstream.requests["/beacon"])
            #expect(sent.body == Array("bye".utf8))
            #expect(sent.headers.filter { $0.name.lowercased().hasPrefix("x-satchel") }.isEmpty, "\(sent.headers)")
            #expect(driver.activeTaskCount == 0)
            // Nothing reached WebKit after its stop.
            try await Task.sleep(for: .milliseconds(100))
            #expect(beacon.snapshot.violations.isEmpty && plain.snapshot.violations.isEmpty, "\(beacon.snapshot.violations) \(plain.snapshot.violations)")
        }
    }

    @Test("stopAll(in:) ends every task of one web view (its process died): upstream requests cancelled, streams ended, other views untouched")
    func stopAllOfOneView() async throws {
        try await withTemporaryFolder { folder async throws in
            let queue = makeQueue()
            let upstream = GatedFetcher()
            let driver = try driver(folder, queue: queue, fetcher: upstream, allowed: [try HostPattern("origin.example")])
            final class View {}
            let views = (View(), View())
            let (dead, alive) = (ObjectIdentifier(views.0), ObjectIdentifier(views.1))
            // The dead view: a stream mid-body and a request still waiting for its answer; the other view: one waiting.
            let stream = HoldingTask(url: "satchel://app.example/large.bin")
            let waiting = RecordingTask(ResourceRequest(url: "https://origin.example/dead"))
            let other = RecordingTask(ResourceRequest(url: "https://origin.example/alive"))
            queue.async {
                driver.start(stream, group: dead)
                driver.start(waiting, group: dead)
                driver.start(other, group: alive)
            }
            for _ in 0..<500 where upstream.waiting < 2 || stream.chunks == 0 { try await Task.sleep(for: .milliseconds(5)) }
            #expect(driver.activeTaskCount == 3)
            let stopped = queue.sync {
                waiting.markStopped()
                return driver.stopAll(in: dead)
            }
            #expect(stopped == 2)
            #expect(driver.activeTaskCount == 1, "\(queue.sync { driver.activeTasks })")
            #expect(queue.sync { driver.activeTasks } == ["awaiting response https://origin.example/alive"])
            // The stream's task asking for more after the stop gets nothing.
            queue.async { stream.release() }
            upstream.open()
            for _ in 0..<500 where upstream.outcomes.count < 2 { try await Task.sleep(for: .milliseconds(5)) }
            #expect(upstream.outcomes["/dead"] == "cancelled", "\(upstream.outcomes)")
            #expect(upstream.outcomes["/alive"] == "answered", "\(upstream.outcomes)")
            try await Task.sleep(for: .milliseconds(100))
            #expect(waiting.snapshot.violations.isEmpty, "\(waiting.snapshot.violations)")
            #expect(stream.chunks == 1, "nothing more reached the dead view's stream")
            queue.sync { _ = driver.stopAll(in: alive) }
            for _ in 0..<500 where driver.activeTaskCount > 0 { try await Task.sleep(for: .milliseconds(5)) }
            #expect(driver.activeTaskCount == 0)
            withExtendedLifetime(views) {}
        }
    }

    @Test("the state machine: one response, data only while streaming, one end, nothing after stop")
    func stateMachine() {
        var state = SchemeTaskState()
        var actions: [SchemeTaskState.Action] = []
        actions.append(state.chunkReady())
        actions.append(state.responseReady())
        actions.append(state.responseReady())
        actions.append(state.chunkReady())
        actions.append(state.ended())
        actions.append(state.ended())
        actions.append(state.chunkReady())
        #expect(actions == [.drop, .send, .drop, .send, .send, .drop, .drop])
        let cancelAfterEnd = state.stopRequested()
        #expect(!cancelAfterEnd)
        var stopped = SchemeTaskState()
        let cancel = stopped.stopRequested()
        let afterStop = [stopped.responseReady(), stopped.chunkReady(), stopped.ended()]
        #expect(cancel)
        #expect(afterStop == [.drop, .drop, .drop])
    }
}

/// A task that takes one chunk and holds the `ready` callback until released.
final class HoldingTask: SchemeTask, @unchecked Sendable {
    let request: ResourceRequest
    private let lock = NSLock()
    private var held: (@Sendable () -> Void)?
    private var count = 0

    init(url: String) { request = ResourceRequest(url: url) }

    var chunks: Int { lock.withLock { count } }
    func didReceive(_ head: ResponseHead) {}
    func didReceive(_ data: [UInt8], ready: @escaping @Sendable () -> Void) {
        lock.withLock {
            count += 1
            held = ready
        }
    }
    func didFinish() {}
    func didFail(_ error: any Error) {}
    /// Call on the driver's queue.
    func release() {
        let ready = lock.withLock { () -> (@Sendable () -> Void)? in
            defer { held = nil }
            return held
        }
        ready?()
    }
}

/// An upstream that holds every request until `open()`, and records whether each was answered or cancelled first.
final class GatedFetcher: AsyncNetworkFetcher, @unchecked Sendable {
    private let lock = NSLock()
    private var gate: [CheckedContinuation<Void, Never>] = []
    private var isOpen = false
    private var seen: [String: ResourceRequest] = [:]
    private var results: [String: String] = [:]

    var waiting: Int { lock.withLock { gate.count } }
    var outcomes: [String: String] { lock.withLock { results } }
    var requests: [String: ResourceRequest] { lock.withLock { seen } }

    func open() {
        let waiters = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            isOpen = true
            defer { gate = [] }
            return gate
        }
        for waiter in waiters { waiter.resume() }
    }

    func fetchResponse(_ request: ResourceRequest, timeouts: FetchTimeouts) async throws -> ResourceResponse {
        let path = RequestURL(request.url)?.rawPath ?? request.url
        lock.withLock { seen[path] = request }
        await withCheckedContinuation { continuation in
            let now = lock.withLock { () -> Bool in
                if isOpen { return true }
                gate.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
        let cancelled = Task.isCancelled
        lock.withLock { results[path] = cancelled ? "cancelled" : "answered" }
        if cancelled { throw CancellationError() }
        let body = EndlessBody()
        lock.withLock { bodies[path] = body }
        return ResourceResponse(status: 200, headers: [:], body: .stream(BodyStream(reader: body)))
    }

    private var bodies: [String: EndlessBody] = [:]
    /// Whether the body answered for `path` was cancelled by its reader.
    func bodyCancelled(_ path: String) -> Bool? { lock.withLock { bodies[path] }?.cancelled }

    /// A body that never ends unless its reader cancels it.
    final class EndlessBody: BodyReader, @unchecked Sendable {
        private let lock = NSLock()
        private var wasCancelled = false
        var cancelled: Bool { lock.withLock { wasCancelled } }
        func nextChunk() async throws -> [UInt8]? {
            if cancelled { throw CancellationError() }
            try await Task.sleep(for: .milliseconds(1))
            return [UInt8](repeating: 1, count: 4096)
        }
        func cancel() { lock.withLock { wasCancelled = true } }
    }
}

/// An upstream whose body breaks after its first chunk.
struct BreakingFetcher: AsyncNetworkFetcher {
    struct Broken: Error {}
    func fetchResponse(_ request: ResourceRequest, timeouts: FetchTimeouts) async throws -> ResourceResponse {
        let (stream, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
        continuation.yield(Array(repeating: 7, count: 1000))
        continuation.finish(throwing: Broken())
        return ResourceResponse(status: 200, headers: ["Content-Type": "application/octet-stream"], body: .stream(BodyStream(stream)))
    }
}

@Suite("A network redirect of a navigation becomes a page that replaces the location")
struct NavigationRedirectTests {
    @Test("navigations (Accept: text/html) get the page; fetches keep the 3xx; the target is escaped and mapped back to the scheme")
    func pages() throws {
        let redirect = ResourceResponse(status: 302, headers: ["Location": "https://app.example/next?a=1&b=\"</script>"])
        var navigation = ResourceRequest(url: "satchel://app.example/login")
        navigation.headers.add("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
        let page = try #require(NavigationRedirect.page(for: redirect, of: navigation))
        guard case .bytes(let bytes) = page.body else { Issue.record("not bytes"); return }
        let html = String(decoding: bytes, as: UTF8.self)
        #expect(page.status == 200)
        #expect(html.contains("location.replace(\"satchel://app.example/next?a=1&b=\\\"\\u003c/script>\")"), "\(html)")
        #expect(html.contains("content=\"0;url=satchel://app.example/next?a=1&amp;b=&quot;&lt;/script&gt;\""), "\(html)")
        #expect(NavigationRedirect.page(for: redirect, of: ResourceRequest(url: "satchel://app.example/api")) == nil)
        #expect(NavigationRedirect.mappedBack("https://other.example/x", request: "satchel://app.example/") == "https://other.example/x")
        #expect(NavigationRedirect.mappedBack("/relative", request: "satchel://app.example/") == "/relative")
        #expect(NavigationRedirect.page(for: ResourceResponse(status: 304), of: navigation) == nil)
    }
}
