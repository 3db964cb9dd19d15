import SatchelCore
import SatchelHTTP

/// The whole path of a request (docs/architecture.md): restore body -> route to a package -> strategy -> package or
/// network -> response. ``ResourceEngine`` answers from packages; this adds the network fallback with the
/// route's strategy and the offline page.
///
/// - offline-first (default): the package, else the network;
/// - network-first: the network within the route's timeout, else the package;
/// - offline-only: the package, else 404 (the engine decides);
/// - network-only: the network.
/// When both fail on a navigation (`Accept: text/html` or `Sec-Fetch-Mode: navigate`), the package's
/// offline page answers with 503; otherwise the network's error does (502/504, `X-Satchel-Error`).
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

    public func respond(to request: ResourceRequest) async -> (response: ResourceResponse, outcome: Outcome, bodyChannel: BodyChannel) {
        let fetch: Fetch
        switch await decide(request) {
        case .answer(let response, let outcome, let channel): return (response, outcome, channel)
        case .fetch(let planned): fetch = planned
        }
        do {
            return (try await fetcher.fetch(fetch.request, timeouts: fetch.timeouts), .network, fetch.miss.bodyChannel)
        } catch {
            return fallback(for: fetch, after: error)
        }
    }

    /// What the loader does with a request before any network: answer it (a package hit, a definite error, a
    /// host that is not allowed), or fetch this upstream request. The three steps (``decide(_:)``, the fetch,
    /// ``fallback(for:after:)``) are public so that a caller with a faster way to fetch (the NIO server, on its
    /// event loop) applies exactly the same rules.
    public enum Decision: Sendable {
        case answer(ResourceResponse, Outcome, BodyChannel)
        case fetch(Fetch)
    }

    /// A planned network request and what it falls back on.
    public struct Fetch: Sendable {
        /// The request to send: allowed host, upstream URL, hop-by-hop fields removed, cookies added.
        public let request: ResourceRequest
        /// The policy's timeouts, with the route's `timeoutMs` as the response-head timeout.
        public let timeouts: FetchTimeouts
        /// The engine's miss: strategy, package, restored request, body channel.
        public let miss: EngineMiss
    }

    public func decide(_ request: ResourceRequest) async -> Decision {
        let result = engine.handleSynchronously(request)
        guard case .miss(let miss) = result else { return Self.answer(result.response!) }
        do {
            return .fetch(plannedFetch(miss, upstream: try await policy.upstreamRequest(for: miss.request, upstreamURL: miss.upstreamURL)))
        } catch {
            return .answer(error.response, .error, miss.bodyChannel)
        }
    }

    /// ``decide(_:)`` without suspending; nil when it would have to wait (a ``CookieProvider`` is configured).
    public func decideWithoutWaiting(_ request: ResourceRequest) -> Decision? {
        guard policy.cookies == nil else { return nil }
        let result = engine.handleSynchronously(request)
        guard case .miss(let miss) = result else { return Self.answer(result.response!) }
        do {
            return .fetch(plannedFetch(miss, upstream: try policy.upstreamRequestWithoutCookies(for: miss.request, upstreamURL: miss.upstreamURL)))
        } catch {
            return .answer(error.response, .error, miss.bodyChannel)
        }
    }

    /// The engine's own answer. The engine answers 403 for one thing only, a body claimed without proof of
    /// origin (``BodyRestorationError/unproven(channel:reason:)``), so that is a refusal.
    private static func answer(_ response: ResourceResponse) -> Decision {
        .answer(response, response.status == 403 ? .refused : .package, .none)
    }

    private func plannedFetch(_ miss: EngineMiss, upstream: ResourceRequest) -> Fetch {
        var timeouts = policy.timeouts
        if let milliseconds = miss.timeoutMs { timeouts.responseHead = .milliseconds(milliseconds) }
        return Fetch(request: upstream, timeouts: timeouts, miss: miss)
    }

    /// The answer when the network failed: a network-first route falls back to its package; a navigation that
    /// neither can answer gets the package's offline page (503); anything else gets the network's error
    /// (502/504, `X-Satchel-Error`).
    public func fallback(for fetch: Fetch, after error: any Error) -> (response: ResourceResponse, outcome: Outcome, bodyChannel: BodyChannel) {
        let miss = fetch.miss
        if error is CancellationError { return (FetchError.connectionFailed("cancelled").response, .error, miss.bodyChannel) }
        let failure = error as? FetchError ?? .connectionFailed("\(error)")
        if miss.reason == .networkRoute, miss.strategy == .networkFirst,
            case .response(let response) = engine.handleSynchronously(miss.request, packageOnly: true)
        {
            return (response, .packageAfterNetworkFailure, miss.bodyChannel)
        }
        if Self.isNavigation(miss.request), let package = miss.package, let page = engine.offlinePage(package: package) {
            return (page, .offlinePage, miss.bodyChannel)
        }
        return (failure.response, .error, miss.bodyChannel)
    }

    static func isNavigation(_ request: ResourceRequest) -> Bool {
        request.headers["Sec-Fetch-Mode"]?.lowercased() == "navigate" || (request.headers["Accept"]?.contains("text/html") ?? false)
    }
}
