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

/// The `Cache-Control` text package responses carry, per kind of file. HTML revalidates by default, so a new
/// version's pages are picked up at once; other files may be reused briefly, and revalidation is a cheap 304 thanks
/// to the strong ETag. (What the browser or web view may keep; unrelated to the engine's own small-file cache.)
public struct PackageCacheControl: Sendable, Equatable {
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
    /// Restore bodies without proof, as the legacy hooks send them (a `BODY` header, pair-encoded `POST_DATA`; docs/body-restoration.md). The cost: any content shown in the
    /// web view (an `<img src>` with `POST_DATA=` in its query, a link, a third-party frame) can make the app
    /// send a cookie-bearing POST to its own origins, which SameSite cookies were meant to prevent. Only for an
    /// app that cannot update its hook yet.
    case notRequired
}

/// How much of the package files the engine keeps in memory after their first read (``SmallFileCache``).
public struct SmallFileCacheLimits: Sendable, Equatable {
    /// Files up to this size are kept after their first read; larger ones are always read from disk.
    public var maxFileSize: Int
    /// Memory all kept files may use together; 0 turns the cache off.
    public var totalBytes: Int

    public init(maxFileSize: Int = 64 << 10, totalBytes: Int = 64 << 20) {
        self.maxFileSize = maxFileSize
        self.totalBytes = totalBytes
    }
}

public struct EngineConfiguration: Sendable {
    /// Custom URL schemes served alike with http and https (`satchel://m.shop.com/...`).
    public var customSchemes: Set<String>
    /// The scheme a custom scheme stands for when a request goes to the network.
    public var upstreamScheme: String
    public var cors: CORSPolicy
    /// `Cache-Control` on package responses.
    public var cacheControl: PackageCacheControl
    /// Adds `X-Satchel-Source: <id>@<version> <path>` to package responses, for debugging.
    public var diagnosticHeader: Bool
    public var activation: ActivationMode
    /// The in-memory cache of small package files.
    public var smallFileCache: SmallFileCacheLimits
    /// Where hooks put lost request bodies; nil turns body restoration off.
    public var bodyChannels: BodyChannels?
    /// Whether restored bodies must prove they came from this launch's hook.
    public var bodyProof: BodyProofPolicy

    public init(
        customSchemes: Set<String> = ["satchel"], upstreamScheme: String = "https", cors: CORSPolicy = .none,
        cacheControl: PackageCacheControl = PackageCacheControl(), diagnosticHeader: Bool = false,
        activation: ActivationMode = .pinnedAtLaunch, smallFileCache: SmallFileCacheLimits = SmallFileCacheLimits(),
        bodyChannels: BodyChannels? = BodyChannels(),
        bodyProof: BodyProofPolicy = .required(.random())
    ) {
        self.customSchemes = Set(customSchemes.map { $0.lowercased() })
        self.upstreamScheme = upstreamScheme
        self.cors = cors
        self.cacheControl = cacheControl
        self.diagnosticHeader = diagnosticHeader
        self.activation = activation
        self.smallFileCache = smallFileCache
        self.bodyChannels = bodyChannels
        self.bodyProof = bodyProof
    }
}
