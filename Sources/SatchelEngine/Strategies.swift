import SatchelCore
import SatchelHTTP

/// A request on its way through the loader, as a route's strategy sees it: the two sources it may ask, and the
/// ways to end. A strategy ends every load exactly once.
public protocol StrategyLoad: AnyObject, Sendable {
    /// The package's answer; nil when the package holds nothing for this request.
    func fromPackage() -> ResourceResponse?
    /// Asks the network; `then` gets its answer, or why there is none (on the loader's executor). A refusal that
    /// no source can change (a host not on the allow-list) and a cancelled load end the load instead.
    func fromNetwork(then: @escaping @Sendable (Result<ResourceResponse, FetchError>) -> Void)
    /// Ends the load with an answer.
    func finish(_ response: ResourceResponse, _ outcome: ResourceLoader.Outcome)
    /// Ends a load that neither source answered: a navigation gets the package's offline page (503), anything
    /// else the network's error (502, 504).
    func finishUnanswered(_ failure: FetchError)
    /// Ends the load with the package's "not here" (404).
    func finishAbsent()
}

/// How a route combines its package and the network: one ``handle(_:)`` per strategy, as Workbox's strategies
/// are. iOS developers know them as `NSURLRequest` cache policies: offline-first is
/// `returnCacheDataElseLoad`, network-first `useProtocolCachePolicy` with a timeout, offline-only
/// `returnCacheDataDontLoad`, network-only `reloadIgnoringLocalCacheData`.
public protocol RouteStrategy: Sendable {
    func handle(_ load: any StrategyLoad)
}

extension Strategy {
    /// The strategy's ``RouteStrategy``.
    public var handler: any RouteStrategy {
        switch self {
        case .offlineFirst: OfflineFirst()
        case .networkFirst: NetworkFirst()
        case .offlineOnly: OfflineOnly()
        case .networkOnly: NetworkOnly()
        }
    }
}

/// The package, else the network (the default).
public struct OfflineFirst: RouteStrategy {
    public init() {}
    public func handle(_ load: any StrategyLoad) {
        if let answer = load.fromPackage() { return load.finish(answer, .package) }
        load.fromNetwork { result in
            switch result {
            case .success(let response): load.finish(response, .network)
            case .failure(let failure): load.finishUnanswered(failure)
            }
        }
    }
}

/// The network within the route's timeout, else the package.
public struct NetworkFirst: RouteStrategy {
    public init() {}
    public func handle(_ load: any StrategyLoad) {
        load.fromNetwork { result in
            switch result {
            case .success(let response): load.finish(response, .network)
            case .failure(let failure):
                if let answer = load.fromPackage() { return load.finish(answer, .packageAfterNetworkFailure) }
                load.finishUnanswered(failure)
            }
        }
    }
}

/// The package, never the network: what it lacks is a 404.
public struct OfflineOnly: RouteStrategy {
    public init() {}
    public func handle(_ load: any StrategyLoad) {
        if let answer = load.fromPackage() { return load.finish(answer, .package) }
        load.finishAbsent()
    }
}

/// The network, never the package (but a navigation it fails still gets the offline page).
public struct NetworkOnly: RouteStrategy {
    public init() {}
    public func handle(_ load: any StrategyLoad) {
        load.fromNetwork { result in
            switch result {
            case .success(let response): load.finish(response, .network)
            case .failure(let failure): load.finishUnanswered(failure)
            }
        }
    }
}

/// The engine alone (``ResourceEngine/handle(_:)``): a strategy run with no network, whose first
/// question to the network ends it as the miss a loader would fetch.
final class PackageOnlyLoad: StrategyLoad, @unchecked Sendable {
    private let routed: RoutedRequest
    private let engine: ResourceEngine
    private var result: EngineResult?

    private init(_ routed: RoutedRequest, engine: ResourceEngine) {
        self.routed = routed
        self.engine = engine
    }

    /// Strategies call back at once when the network is not asked, so the result is there when `handle` returns.
    static func result(of routed: RoutedRequest, engine: ResourceEngine) -> EngineResult {
        let load = PackageOnlyLoad(routed, engine: engine)
        routed.handler.handle(load)
        return load.result ?? .miss(routed.miss)
    }

    func fromPackage() -> ResourceResponse? { engine.packageAnswer(routed) }
    func fromNetwork(then: @escaping @Sendable (Result<ResourceResponse, FetchError>) -> Void) { result = .miss(routed.miss) }
    func finish(_ response: ResourceResponse, _ outcome: ResourceLoader.Outcome) { result = .response(response) }
    func finishUnanswered(_ failure: FetchError) { result = .response(failure.response) }
    func finishAbsent() { result = .response(engine.absentAnswer(routed)) }
}
