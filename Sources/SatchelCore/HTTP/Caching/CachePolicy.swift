/// How the network leg of a request uses the app's HTTP cache (a route's strategy decides between the package and the
/// network; this decides how the network is asked). The names are the source articles' (`NSURLRequest`'s cache
/// policies) and Workbox's `stale-while-revalidate`.
public enum CachePolicy: String, Sendable, Hashable, Codable, CaseIterable {
    /// RFC 9111 as it is: fresh answers from the cache, stale ones revalidated.
    case useProtocolPolicy = "use-protocol-policy"
    /// Ask the origin, whatever is stored; store what it answers.
    case reloadIgnoringCache = "reload-ignoring-cache"
    /// A stored answer of any age (within the max age, when one is given), without asking the origin; else the origin.
    case returnCacheElseLoad = "return-cache-else-load"
    /// A stored answer of any age (within the max age), or a failure: never the network (offline only).
    case returnCacheDontLoad = "return-cache-dont-load"
    /// Always revalidate a stored answer with the origin before using it.
    case reloadRevalidating = "reload-revalidating"
    /// A stored answer of any age (within the max age) at once, and a refresh from the origin behind it when it is
    /// not fresh; the origin when nothing is stored.
    case staleWhileRevalidate = "stale-while-revalidate"

    /// The policies that answer from the cache without asking the origin first: the ones a max age bounds.
    public var answersFromCacheFirst: Bool {
        self == .returnCacheElseLoad || self == .returnCacheDontLoad || self == .staleWhileRevalidate
    }
}

/// A cache policy for one request or route, with the oldest stored answer it accepts.
public struct RequestCachePolicy: Sendable, Hashable {
    public var policy: CachePolicy
    /// Seconds; a stored answer older than this is not used by a cache-first policy (for `return-cache-dont-load` it
    /// counts as missing). nil: any age.
    public var maxAge: Int?

    public static let maxMaxAge = 400 * 86_400

    public init(policy: CachePolicy, maxAge: Int? = nil) throws(FieldError) {
        if let maxAge {
            guard (0...Self.maxMaxAge).contains(maxAge) else {
                throw FieldError(field: "maxAge", value: String(maxAge), reason: "must be between 0 and \(Self.maxMaxAge) seconds")
            }
            guard policy.answersFromCacheFirst else {
                throw FieldError(field: "maxAge", value: String(maxAge), reason: "only return-cache-else-load, return-cache-dont-load and stale-while-revalidate take a max age")
            }
        }
        self.policy = policy
        self.maxAge = maxAge
    }

    /// `<policy>[:<seconds>]`, as `X-Satchel-Cache` and `--route-cache` write it.
    public init(parsing text: some StringProtocol) throws(FieldError) {
        let trimmed = String(Substring(text).trimmingSpaces)
        let parts = trimmed.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard let policy = CachePolicy(rawValue: String(parts[0]).lowercased()) else {
            throw FieldError(
                field: "cache policy", value: trimmed,
                reason: "must be one of \(CachePolicy.allCases.map(\.rawValue).joined(separator: ", ")), optionally :<seconds>")
        }
        var maxAge: Int?
        if parts.count == 2 {
            guard let seconds = Int(parts[1]), parts[1].allSatisfy(\.isNumber) else {
                throw FieldError(field: "cache policy", value: trimmed, reason: "the max age after ':' must be whole seconds")
            }
            maxAge = seconds
        }
        try self.init(policy: policy, maxAge: maxAge)
    }

    public var description: String { policy.rawValue + (maxAge.map { ":\($0)" } ?? "") }
}

/// A manifest's cache policy for the URLs under a path prefix (`cachePolicies`).
public struct CacheRoute: Hashable, Sendable, Codable {
    public var prefix: String
    public var policy: CachePolicy
    public var maxAge: Int?

    public init(prefix: String, policy: CachePolicy, maxAge: Int? = nil) throws(FieldError) {
        guard prefix.hasPrefix("/") else {
            throw FieldError(field: "cachePolicies.prefix", value: prefix, reason: "must be an absolute URL path starting with '/'")
        }
        _ = try RequestCachePolicy(policy: policy, maxAge: maxAge)
        self.prefix = prefix
        self.policy = policy
        self.maxAge = maxAge
    }

    /// The CLI form `<prefix>=<policy>[:<seconds>]`, e.g. `/api/=stale-while-revalidate:600`.
    public init(parsing spec: String) throws(FieldError) {
        guard let equals = spec.firstIndex(of: "=") else {
            throw FieldError(field: "route-cache", value: spec, reason: "must look like <prefix>=<policy>[:<seconds>], e.g. /api/=stale-while-revalidate:600")
        }
        let parsed = try RequestCachePolicy(parsing: spec[spec.index(after: equals)...])
        try self.init(prefix: String(spec[..<equals]), policy: parsed.policy, maxAge: parsed.maxAge)
    }

    public var requestPolicy: RequestCachePolicy { try! RequestCachePolicy(policy: policy, maxAge: maxAge) }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try self.init(
            prefix: try container.decode(String.self, forKey: .prefix), policy: try container.decode(CachePolicy.self, forKey: .policy),
            maxAge: try container.decodeIfPresent(Int.self, forKey: .maxAge))
    }

    /// The route for `path` among `routes`: the longest prefix that matches it.
    public static func matching(_ path: String, in routes: [CacheRoute]) -> CacheRoute? {
        routes.filter { path.hasPrefix($0.prefix) }.max { $0.prefix.utf8.count < $1.prefix.utf8.count }
    }
}

/// This runtime's version: what a catalog entry's and a manifest's `minRuntime` are compared with, and the first
/// version of each manifest feature an older runtime refuses.
public enum SatchelRuntime {
    public static let version = try! SemanticVersion("0.2.0")
    /// The first runtime that reads a manifest's `cachePolicies`.
    public static let cachePolicies = try! SemanticVersion("0.2.0")
}
