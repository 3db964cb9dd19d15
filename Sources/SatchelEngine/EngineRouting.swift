import SatchelCore
import SatchelHTTP

/// Where the engine sends a request before any strategy runs (``ResourceEngine/route(_:)``).
public enum EngineRouting: Sendable {
    /// A definite answer: a URL or body that cannot be routed (400, 413), or a body without proof (403).
    case answer(ResourceResponse)
    /// Routed: the request as restored, its route and what the package holds for it.
    case routed(RoutedRequest)
}

/// A request the engine has routed: restored, matched to a package and route, its file looked up (not read).
public struct RoutedRequest: Sendable {
    /// The request with its body restored and Satchel's fields removed: what the network is asked.
    public let request: ResourceRequest
    public let bodyChannel: BodyChannel
    /// The URL the network is asked for: a custom scheme replaced by the upstream scheme.
    public let upstreamURL: String
    /// Why no package can answer this request whatever its route says (no package claims it, a method a
    /// package does not serve, a scheme the engine does not know); nil when the package may.
    public let outside: EngineMiss.Reason?
    /// The strategy of the route that matched; offline-first when none did.
    public let strategy: Strategy
    public let timeoutMs: Int?
    /// How the network leg uses an HTTP cache: the page's `X-Satchel-Cache`, else the package's `cachePolicies`
    /// for the path (also on ``request``).
    public var cachePolicy: RequestCachePolicy? { request.cachePolicy }
    /// `id@version` of the package that claims the request, if one does.
    public var package: String? { entry?.label }

    let method: RequestMethod
    let entry: ResourceEngine.PackageEntry?
    let decodedPath: String
    let file: ResourceEngine.PackageEntry.File?

    init(
        request: ResourceRequest, bodyChannel: BodyChannel, upstreamURL: String, method: RequestMethod, outside: EngineMiss.Reason?,
        route: Route? = nil, package: ResourceEngine.PackageEntry? = nil, decodedPath: String = "", file: ResourceEngine.PackageEntry.File? = nil
    ) {
        var request = request
        if request.cachePolicy == nil, let package, !package.manifest.cachePolicies.isEmpty {
            request.cachePolicy = CacheRoute.matching(decodedPath, in: package.manifest.cachePolicies)?.requestPolicy
        }
        self.request = request
        self.bodyChannel = bodyChannel
        self.upstreamURL = upstreamURL
        self.method = method
        self.outside = outside
        strategy = outside == .scheme ? .networkOnly : route?.strategy ?? .offlineFirst
        timeoutMs = route?.timeoutMs
        entry = package
        self.decodedPath = decodedPath
        self.file = file
    }

    /// Whether the package holds a file (or the entry) for this request.
    public var isInPackage: Bool { file != nil }

    /// The strategy that decides this request: the route's, unless no package can answer it at all, when only
    /// the network can (``NetworkOnly``).
    public var handler: any RouteStrategy { outside == nil ? strategy.handler : NetworkOnly() }

    /// The miss this request is when the network must be asked, and why.
    public var miss: EngineMiss {
        let reason = outside ?? (strategy == .networkFirst || strategy == .networkOnly ? .networkRoute : .notInPackage)
        return EngineMiss(
            reason: reason, strategy: strategy, timeoutMs: timeoutMs, package: package, upstreamURL: upstreamURL, request: request,
            bodyChannel: bodyChannel)
    }
}
