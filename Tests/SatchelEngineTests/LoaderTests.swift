import Foundation
import SatchelCore
@testable import SatchelEngine
import SatchelHTTP
import SatchelTestSupport
import Testing

/// A fetcher that answers as told, recording what it was asked and on which executor, and whether it was cancelled.
final class ScriptedFetcher: NetworkFetcher, @unchecked Sendable {
    enum Script { case answerAtOnce(Int), answerLater(Int), fail(FetchError), hang }
    let script: Script
    private let lock = NSLock()
    private(set) var executors: [ObjectIdentifier] = []
    private(set) var requests: [ResourceRequest] = []
    private(set) var cancelled = 0
    private var pending: (@Sendable (Result<ResourceResponse, any Error>) -> Void)?

    init(_ script: Script) { self.script = script }

    func fetch(
        _ request: ResourceRequest, timeouts: FetchTimeouts, on executor: any AnswerExecutor,
        completion: @escaping @Sendable (Result<ResourceResponse, any Error>) -> Void
    ) -> (any FetchHandle)? {
        lock.withLock {
            executors.append(ObjectIdentifier(executor))
            requests.append(request)
        }
        switch script {
        case .answerAtOnce(let status):
            completion(.success(ResourceResponse(status: status)))
            return nil
        case .answerLater(let status):
            executor.execute { completion(.success(ResourceResponse(status: status))) }
        case .fail(let error):
            executor.execute { completion(.failure(error)) }
        case .hang:
            lock.withLock { pending = completion }
        }
        return Handle(self)
    }

    final class Handle: FetchHandle, @unchecked Sendable {
        let fetcher: ScriptedFetcher
        init(_ fetcher: ScriptedFetcher) { self.fetcher = fetcher }
        func cancel() {
            let pending = fetcher.lock.withLock { () -> (@Sendable (Result<ResourceResponse, any Error>) -> Void)? in
                fetcher.cancelled += 1
                defer { fetcher.pending = nil }
                return fetcher.pending
            }
            pending?(.failure(CancellationError()))
        }
    }
}

/// A fetcher that wraps another and passes everything on, as the HTTP cache does.
struct PassThrough: NetworkFetcher {
    let inner: any NetworkFetcher
    func fetch(
        _ request: ResourceRequest, timeouts: FetchTimeouts, on executor: any AnswerExecutor,
        completion: @escaping @Sendable (Result<ResourceResponse, any Error>) -> Void
    ) -> (any FetchHandle)? {
        inner.fetch(request, timeouts: timeouts, on: executor, completion: completion)
    }
}

/// An executor that queues work until the test runs it, so the test sees what is delivered later.
final class QueueExecutor: AnswerExecutor, @unchecked Sendable {
    private let lock = NSLock()
    private var queue: [@Sendable () -> Void] = []
    func execute(_ work: @escaping @Sendable () -> Void) { lock.withLock { queue.append(work) } }
    func runAll() {
        while let work = lock.withLock({ queue.isEmpty ? nil : queue.removeFirst() }) { work() }
    }
}

final class Answers: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var received: [ResourceLoader.Answer] = []
    func add(_ answer: ResourceLoader.Answer) { lock.withLock { received.append(answer) } }
}

@Suite("The loader: one path, strategies as types, answers on the caller's executor")
struct LoaderTests {
    func loader(_ folder: String, fetcher: any NetworkFetcher, routes: [Route] = []) throws -> ResourceLoader {
        let package = try makePackage(in: folder, files: ["index.html": text("home"), "data.json": text("{}")], routes: routes)
        let engine = try ResourceEngine(source: FolderSource([package]))
        return ResourceLoader(engine: engine, fetcher: fetcher, policy: NetworkPolicy(allowedHosts: [try HostPattern("m.shop.com")]))
    }

    @Test("a package hit is answered before start returns, and the completion is never called")
    func hitAnswersAtOnce() async throws {
        try withTemporaryFolder { folder in
            let fetcher = ScriptedFetcher(.hang)
            let loader = try loader(folder, fetcher: fetcher)
            let answers = Answers()
            let start = loader.start(ResourceRequest(url: "satchel://m.shop.com/index.html"), on: InlineExecutor.shared) { answers.add($0) }
            guard case .answered(let answer) = start else { Issue.record("not answered at once"); return }
            #expect(answer.outcome == .package && answer.response.status == 200)
            #expect(answers.received.isEmpty && fetcher.requests.isEmpty)
        }
    }

    @Test("a fetch that answers while the strategy runs is returned; one that answers later comes once, on the caller's executor")
    func networkAnswers() async throws {
        try withTemporaryFolder { folder in
            let atOnce = try loader(folder + "/a", fetcher: ScriptedFetcher(.answerAtOnce(201)))
            guard case .answered(let answer) = atOnce.start(ResourceRequest(url: "satchel://m.shop.com/api"), on: InlineExecutor.shared, completion: { _ in }) else {
                Issue.record("an answer inside start was not returned"); return
            }
            #expect(answer.outcome == .network && answer.response.status == 201)

            let fetcher = ScriptedFetcher(.answerLater(202))
            let later = try loader(folder + "/b", fetcher: PassThrough(inner: fetcher))
            let executor = QueueExecutor()
            let answers = Answers()
            guard case .pending = later.start(ResourceRequest(url: "satchel://m.shop.com/api"), on: executor, completion: { answers.add($0) }) else {
                Issue.record("not pending"); return
            }
            #expect(answers.received.isEmpty, "nothing before the executor runs")
            executor.runAll()
            #expect(answers.received.map(\.response.status) == [202])
            // The wrapper passed the caller's executor on: the fetcher's fast path survives wrapping.
            #expect(fetcher.executors == [ObjectIdentifier(executor)])
        }
    }

    @Test("network-first falls back to the package when the network fails; network-only gives the error")
    func strategiesOnFailure() async throws {
        try await withTemporaryFolder { folder in
            let routes = [try Route(prefix: "/data.json", strategy: .networkFirst, timeoutMs: 100), try Route(prefix: "/live", strategy: .networkOnly)]
            let loader = try loader(folder, fetcher: ScriptedFetcher(.fail(.timedOut("slow"))), routes: routes)
            let fallback = await loader.respond(to: ResourceRequest(url: "satchel://m.shop.com/data.json"))
            #expect(fallback.outcome == .packageAfterNetworkFailure && fallback.response.status == 200)
            let live = await loader.respond(to: ResourceRequest(url: "satchel://m.shop.com/live"))
            #expect(live.outcome == .error && live.response.status == 504)
        }
    }

    @Test("cancelling a pending load cancels its fetch and still answers once")
    func cancelling() async throws {
        try withTemporaryFolder { folder in
            let fetcher = ScriptedFetcher(.hang)
            let loader = try loader(folder, fetcher: fetcher)
            let answers = Answers()
            guard case .pending(let handle) = loader.start(ResourceRequest(url: "satchel://m.shop.com/api"), on: InlineExecutor.shared, completion: { answers.add($0) }) else {
                Issue.record("not pending"); return
            }
            handle.cancel()
            handle.cancel()
            #expect(fetcher.cancelled == 1)
            #expect(answers.received.count == 1)
            #expect(answers.received.first?.outcome == .error)
        }
    }

    @Test("a task that is cancelled while its load waits gets its answer, and the fetch is cancelled")
    func taskCancellation() async throws {
        try await withTemporaryFolder { folder in
            let fetcher = ScriptedFetcher(.hang)
            let loader = try loader(folder, fetcher: fetcher)
            let task = Task { await loader.respond(to: ResourceRequest(url: "satchel://m.shop.com/api")) }
            while fetcher.requests.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
            task.cancel()
            let answer = await task.value
            #expect(answer.outcome == .error)
            #expect(fetcher.cancelled == 1)
        }
    }

    @Test("the engine alone runs the same strategies, its first question to the network ending as the miss", arguments: [
        ("/index.html", Strategy.offlineFirst, "response 200"), ("/absent.js", .offlineFirst, "miss notInPackage"),
        ("/index.html", .networkFirst, "miss networkRoute"), ("/index.html", .offlineOnly, "response 200"),
        ("/absent.js", .offlineOnly, "response 404"), ("/index.html", .networkOnly, "miss networkRoute"),
    ])
    func engineAlone(path: String, strategy: Strategy, expected: String) async throws {
        try withTemporaryFolder { folder in
            let loader = try loader(folder, fetcher: ScriptedFetcher(.hang), routes: [try Route(prefix: "/", strategy: strategy)])
            switch loader.engine.handle(ResourceRequest(url: "satchel://m.shop.com" + path)) {
            case .response(let response): #expect("response \(response.status)" == expected)
            case .miss(let miss): #expect("miss \(miss.reason)" == expected)
            }
        }
    }
}
