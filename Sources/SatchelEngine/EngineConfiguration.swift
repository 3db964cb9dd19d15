import SatchelCore

/// When a newly activated version reaches the engine.
public enum ActivationMode: String, Sendable {
    /// The versions active when the engine started are served until the next launch (CodePush's
    /// `ON_NEXT_RESTART`): a loaded single-page app never loses its lazy chunks. Apps use this.
    case pinnedAtLaunch = "launch"
    /// A new activation applies to the next request; responses in flight finish from the version they
    /// started with. The local server uses this.
    case immediate
}

/// Which origins may read package responses from script (CORS, Fetch standard).
public enum CORSPolicy: Sendable, Equatable {
    /// No `Access-Control-*` headers: same-origin pages only.
    case none
    /// `Access-Control-Allow-Origin: *`.
    case anyOrigin
    /// Echo the request's `Origin` when listed (with `Vary: Origin`).
    case origins(Set<String>)
}

/// `Cache-Control` per kind of response. HTML revalidates by default, so a new version's pages are picked up
/// at once; other files may be reused briefly, and revalidation is a cheap 304 thanks to the strong ETag.
public struct CachePolicy: Sendable, Equatable {
    public var html: String
    public var other: String

    public init(html: String = "no-cache", other: String = "max-age=600") {
        self.html = html
        self.other = other
    }
}

/// Whether a restored body must carry this launch's ``BodyProof``.
public enum BodyProofPolicy: Sendable {
    /// Restore a body only with a valid proof made from this secret (the default: a fresh random secret for each
    /// configuration, i.e. each launch). The hook gets the secret through its configuration.
    case required(BodyProofSecret)
    /// Restore bodies without proof, as seed 004's original hooks send them. The cost: any content shown in the
    /// web view (an `<img src>` with `POST_DATA=` in its query, a link, a third-party frame) can make the app
    /// send a cookie-bearing POST to its own origins, which SameSite cookies were meant to prevent. Only for an
    /// app that cannot update its hook yet.
    case notRequired
}

public struct EngineConfiguration: Sendable {
    /// Custom URL schemes served alike with http and https (`satchel://m.shop.com/...`).
    public var customSchemes: Set<String>
    /// The scheme a custom scheme stands for when a request goes to the network.
    public var upstreamScheme: String
    public var cors: CORSPolicy
    public var cache: CachePolicy
    /// Adds `X-Satchel-Source: <id>@<version> <path>` to package responses, for debugging.
    public var diagnosticHeader: Bool
    public var activation: ActivationMode
    /// Files up to this size are kept in memory after their first read.
    public var cacheableFileSize: Int
    /// Memory the small-file cache may use.
    public var cacheBytes: Int
    /// Where hooks put lost request bodies; nil turns body restoration off.
    public var bodyChannels: BodyChannels?
    /// Whether restored bodies must prove they came from this launch's hook.
    public var bodyProof: BodyProofPolicy

    public init(
        customSchemes: Set<String> = ["satchel"], upstreamScheme: String = "https", cors: CORSPolicy = .none,
        cache: CachePolicy = CachePolicy(), diagnosticHeader: Bool = false, activation: ActivationMode = .pinnedAtLaunch,
        cacheableFileSize: Int = 64 << 10, cacheBytes: Int = 64 << 20, bodyChannels: BodyChannels? = BodyChannels(),
        bodyProof: BodyProofPolicy = .required(.random())
    ) {
        self.customSchemes = Set(customSchemes.map { $0.lowercased() })
        self.upstreamScheme = upstreamScheme
        self.cors = cors
        self.cache = cache
        self.diagnosticHeader = diagnosticHeader
        self.activation = activation
        self.cacheableFileSize = cacheableFileSize
        self.cacheBytes = cacheBytes
        self.bodyChannels = bodyChannels
        self.bodyProof = bodyProof
    }
}
