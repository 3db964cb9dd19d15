import SatchelCore
import SatchelHTTP

/// The whole path of a request (docs/architecture.md): restore body -> route to a package -> the route's
/// strategy -> package or network -> response. One loader serves `satchel serve` and both WebKit adapters:
/// ``ResourceEngine`` routes and answers from packages, a ``RouteStrategy`` decides between package and network,
/// the ``NetworkFetcher`` (the HTTP cache, or a fetcher itself) fetches, and a navigation neither source can answer
/// gets the package's offline page.
///
/// Two entry points, one path: ``respond(to:)`` for callers in a task, and ``start(_:on:completion:)`` for a caller
/// on an executor of its own (the server on its event loop), which answers package hits at once and delivers the
/// network's answer on that executor, so neither takes a task or a thread hop.
public final class ResourceLoader: Sendable {
    public let engine: ResourceEngine
    public let fetcher: any NetworkFetcher
    public let policy: NetworkPolicy

    public init(engine: ResourceEngine, fetcher: any NetworkFetcher, policy: NetworkPolicy) {
        self.engine = engine
        self.fetcher = fetcher
        self.policy = policy
    }

    /// What happened, for logs and the status page.
    public enum Outcome: String, Sendable {
        case package, network, packageAfterNetworkFailure = "package-after-network-failure", offlinePage = "offline-page", error
        /// A body claimed without this launch's proof (403): nothing was sent upstream.
        case refused
    }

    public struct Answer: Sendable {
        public var response: ResourceResponse
        public var outcome: Outcome
        /// Which channel restored the request's body.
        public var bodyChannel: BodyChannel

        public init(response: ResourceResponse, outcome: Outcome, bodyChannel: BodyChannel) {
            self.response = response
            self.outcome = outcome
            self.bodyChannel = bodyChannel
        }
    }

    /// How ``start(_:on:completion:)`` went: answered before returning (a package hit, a definite error, a fetch that
    /// failed at once), or pending with a handle that cancels it.
    public typealias Start = Started<Answer>

    /// The load awaited (``AwaitedCallback`` over ``start(_:on:completion:)``); cancelling the task cancels it.
    public func respond(to request: ResourceRequest) async -> Answer {
        await AwaitedCallback.value(starting: { start(request, on: InlineExecutor.shared, completion: $0) })
    }

    public func start(_ request: ResourceRequest, on executor: any AnswerExecutor, completion: @escaping @Sendable (Answer) -> Void) -> Start {
        let routed: RoutedRequest
        switch engine.route(request) {
        case .answer(let response):
            // The engine answers 403 for one thing only, a body claimed without proof of origin.
            return .answered(Answer(response: response, outcome: response.status == 403 ? .refused : .package, bodyChannel: .none))
        case .routed(let route):
            routed = route
        }
        let load = Load(routed, loader: self, executor: executor, completion: completion)
        routed.handler.handle(load)
        return load.leaveStrategy()
    }

    static func isNavigation(_ request: ResourceRequest) -> Bool {
        request.kind.wantsPage
    }
}

/// One request through a loader: what a strategy asks for and how its answer gets to the caller, once. Its state
/// is behind a lock: the network's answer may arrive on another thread while the strategy is still running.
final class Load: StrategyLoad, FetchHandle, @unchecked Sendable {
    private let routed: RoutedRequest
    private let loader: ResourceLoader
    private let executor: any AnswerExecutor
    private let lock = Locked(State())

    private struct State {
        /// True while the strategy runs in ``ResourceLoader/start(_:on:completion:)``: an answer then is returned.
        var inStart = true
        var answer: ResourceLoader.Answer?
        var completion: (@Sendable (ResourceLoader.Answer) -> Void)?
        var inFlight: (any FetchHandle)?
        var cancelled = false
    }

    init(_ routed: RoutedRequest, loader: ResourceLoader, executor: any AnswerExecutor, completion: @escaping @Sendable (ResourceLoader.Answer) -> Void) {
        self.routed = routed
        self.loader = loader
        self.executor = executor
        lock.withLock { $0.completion = completion }
    }

    /// The strategy returned: its answer if it gave one already, else the promise of one.
    func leaveStrategy() -> ResourceLoader.Start {
        let answer: ResourceLoader.Answer? = lock.withLock { state in
            state.inStart = false
            if state.answer != nil { state.completion = nil }
            return state.answer
        }
        return answer.map { .answered($0) } ?? .pending(self)
    }

    func fromPackage() -> ResourceResponse? { loader.engine.packageAnswer(routed) }

    func fromNetwork(then: @escaping @Sendable (Result<ResourceResponse, FetchError>) -> Void) {
        // A request that may only be answered from a cache, with no cache on the way: nothing can answer it.
        if routed.cachePolicy?.policy == .returnCacheDontLoad, loader.fetcher.responseCache == nil {
            return then(.failure(.notCached("return-cache-dont-load, and no HTTP cache is configured")))
        }
        let policy = loader.policy
        var timeouts = policy.timeouts
        if let milliseconds = routed.timeoutMs { timeouts.responseHead = .milliseconds(milliseconds) }
        guard policy.cookies != nil else {
            let upstream: ResourceRequest
            do { upstream = try policy.upstreamRequestWithoutCookies(for: routed.request, upstreamURL: routed.upstreamURL) } catch {
                return finish(error.response, .error)
            }
            return send(upstream, timeouts: timeouts, then: then)
        }
        // Cookies come from an asynchronous store (WebKit's): the one step that needs a task before the fetch.
        // Made and stored under the lock: the task's send needs it, so its fetch's handle is always stored after this
        // one. Stored after the lock was let go, a cookie read answered from the jar's snapshot (no wait) could send
        // first, and this finished task's handle would replace the fetch's: a cancel then reached nothing and the
        // upstream request of a page that went away ran on (webkit-test's "abandoned before its response started").
        lock.withLock { state in
            state.inFlight = TaskHandle(Task { [routed, executor, timeouts] in
                do throws(FetchError) {
                    let upstream = try await policy.upstreamRequest(for: routed.request, upstreamURL: routed.upstreamURL)
                    executor.execute { self.send(upstream, timeouts: timeouts, then: then) }
                } catch {
                    executor.execute { self.finish(error.response, .error) }
                }
            })
        }
    }

    private func send(_ upstream: ResourceRequest, timeouts: FetchTimeouts, then: @escaping @Sendable (Result<ResourceResponse, FetchError>) -> Void) {
        if lock.withLock({ $0.cancelled }) { return finishCancelled() }
        let handle = loader.fetcher.fetch(upstream, timeouts: timeouts, on: executor) { result in
            switch result {
            case .success(let response): then(.success(response))
            case .failure(let error) where error is CancellationError: self.finishCancelled()
            case .failure(let error): then(.failure(error as? FetchError ?? .connectionFailed("\(error)")))
            }
        }
        guard let handle else { return }
        // Cancelled while the fetch was being made: cancel it too (its answer ends the load as cancelled).
        if lock.withLock({ state -> Bool in state.inFlight = handle; return state.cancelled }) { handle.cancel() }
    }

    private func finishCancelled() {
        finish(FetchError.connectionFailed("cancelled").response, .error)
    }

    func finish(_ response: ResourceResponse, _ outcome: ResourceLoader.Outcome) {
        let answer = ResourceLoader.Answer(response: response, outcome: outcome, bodyChannel: routed.bodyChannel)
        let completion: (@Sendable (ResourceLoader.Answer) -> Void)? = lock.withLock { state in
            guard state.answer == nil else { return nil }
            state.answer = answer
            state.inFlight = nil
            if state.inStart { return nil }
            defer { state.completion = nil }
            return state.completion
        }
        completion?(answer)
    }

    func finishUnanswered(_ failure: FetchError) {
        if ResourceLoader.isNavigation(routed.request), let package = routed.package, let page = loader.engine.offlinePage(package: package) {
            return finish(page, .offlinePage)
        }
        finish(failure.response, .error)
    }

    func finishAbsent() { finish(loader.engine.absentAnswer(routed), .package) }

    /// ``FetchHandle``: the caller no longer wants the answer; what is in flight is cancelled, and the answer (an
    /// error, unless one was there already) still comes, once.
    func cancel() {
        let inFlight = lock.withLock { state -> (any FetchHandle)? in
            state.cancelled = true
            return state.inFlight
        }
        inFlight?.cancel()
    }
}
