import SatchelCore
import SatchelHTTP

/// What the engine made of a request: a response from a package (or a definite error), or a miss that the
/// caller sends to the network. The two are kept apart on purpose (androidx WebViewAssetLoader's rule):
/// a miss means "not mine, try the network"; a 404 means "mine, and it does not exist".
public enum EngineResult: Sendable {
    case response(ResourceResponse)
    case miss(EngineMiss)

    public var response: ResourceResponse? {
        if case .response(let response) = self { return response }
        return nil
    }

    public var miss: EngineMiss? {
        if case .miss(let miss) = self { return miss }
        return nil
    }
}

public struct EngineMiss: Sendable, Equatable {
    public enum Reason: String, Sendable, Equatable {
        /// No installed package claims the host and path.
        case noPackage
        /// A package claims the URL but holds no such file (and its route allows the network).
        case notInPackage
        /// The route says the network comes first or only.
        case networkRoute
        /// Only GET, HEAD and OPTIONS are answered from packages.
        case method
        /// Not an http, https or configured custom scheme.
        case scheme
    }

    public var reason: Reason
    /// The strategy of the route that matched; offline-first when no package matched.
    public var strategy: Strategy
    public var timeoutMs: Int?
    /// The package and version that claimed the URL, if any (`id@version`).
    public var package: String?
    /// The URL to fetch: a custom scheme replaced by the upstream scheme.
    public var upstreamURL: String
    /// The request to forward: its body restored and every satchel header and parameter removed.
    public var request: ResourceRequest
    /// Which channel restored the body, if any.
    public var bodyChannel: BodyChannel

    public init(
        reason: Reason, strategy: Strategy, timeoutMs: Int? = nil, package: String? = nil, upstreamURL: String,
        request: ResourceRequest, bodyChannel: BodyChannel = .none
    ) {
        self.reason = reason
        self.strategy = strategy
        self.timeoutMs = timeoutMs
        self.package = package
        self.upstreamURL = upstreamURL
        self.request = request
        self.bodyChannel = bodyChannel
    }
}
