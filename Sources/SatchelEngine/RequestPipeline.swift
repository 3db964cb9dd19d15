import SatchelCore

/// The whole path of a request (DESIGN.md): restore body -> route to a package -> strategy -> package or
/// network -> response. ``ResourceEngine`` answers from packages; this adds the network fallback with the
/// route's strategy and the offline page.
///
/// - offline-first (default): the package, else the network;
/// - network-first: the network within the route's timeout, else the package;
/// - offline-only: the package, else 404 (the engine decides);
/// - network-only: the network.
/// When both fail on a navigation (`Accept: text/html` or `Sec-Fetch-Mode: navigate`), the package's
/// offline page answers with 503; otherwise the network's error does (502/504, `X-Satchel-Error`).
public final class RequestPipeline: Sendable {
    public let engine: ResourceEngine
    public let fetcher: any NetworkFetcher
    public let policy: NetworkPolicy

    public init(engine: ResourceEngine, fetcher: any NetworkFetcher = URLSessionFetcher(), policy: NetworkPolicy) {
        self.engine = engine
        self.fetcher = fetcher
        self.policy = policy
    }

    /// What happened, for logs and the status page.
    public enum Outcome: String, Sendable {
        case package, network, packageAfterNetworkFailure = "package-after-network-failure", offlinePage = "offline-page", error
    }

    public func respond(to request: ResourceRequest) async -> (response: ResourceResponse, outcome: Outcome, bodyChannel: BodyChannel) {
        let result = await engine.handle(request)
        guard case .miss(let miss) = result else { return (result.response!, .package, .none) }
        var timeouts = policy.timeouts
        if let milliseconds = miss.timeoutMs { timeouts.responseHead = .milliseconds(milliseconds) }
        do {
            let upstream = try await policy.upstreamRequest(for: miss.request, upstreamURL: miss.upstreamURL)
            return (try await fetcher.fetch(upstream, timeouts: timeouts), .network, miss.bodyChannel)
        } catch is CancellationError {
            return (FetchError.connectionFailed("cancelled").response, .error, miss.bodyChannel)
        } catch {
            let failure = error as? FetchError ?? .connectionFailed("\(error)")
            if miss.reason == .networkRoute, miss.strategy == .networkFirst,
                case .response(let response) = engine.handleSynchronously(request, packageOnly: true)
            {
                return (response, .packageAfterNetworkFailure, miss.bodyChannel)
            }
            if Self.isNavigation(request), let package = miss.package, let page = engine.offlinePage(package: package) {
                return (page, .offlinePage, miss.bodyChannel)
            }
            return (failure.response, .error, miss.bodyChannel)
        }
    }

    static func isNavigation(_ request: ResourceRequest) -> Bool {
        request.headers["Sec-Fetch-Mode"]?.lowercased() == "navigate" || (request.headers["Accept"]?.contains("text/html") ?? false)
    }
}
