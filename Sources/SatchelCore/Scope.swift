/// A host a package claims: an exact lower-case name (`m.shop.com`) or one wildcard label (`*.shop.com`,
/// which matches `a.shop.com` but neither `shop.com` nor `a.b.shop.com`).
public struct HostPattern: Hashable, Sendable, CustomStringConvertible, Codable {
    public let value: String

    public init(_ raw: String) throws(FieldError) {
        let name = raw.hasPrefix("*.") ? String(raw.dropFirst(2)) : raw
        guard Self.isHostName(name) else {
            throw FieldError(
                field: "host", value: raw,
                reason: "must be a lower-case DNS name (letters, digits and '-' in labels of 1-63 characters), optionally starting with '*.'")
        }
        value = raw
    }

    public init(from decoder: any Decoder) throws {
        try self.init(try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }

    public var isWildcard: Bool { value.hasPrefix("*.") }

    /// The part after `*.` for a wildcard, else the whole name.
    public var baseName: Substring { isWildcard ? value.dropFirst(2) : Substring(value) }

    /// Whether this pattern claims `host` (already lower-cased, without port).
    public func matches(_ host: String) -> Bool {
        guard isWildcard else { return host == value }
        let base = baseName
        guard host.utf8.count > base.utf8.count + 1, host.hasSuffix("." + base) else { return false }
        return !host.dropLast(base.utf8.count + 1).contains(".")
    }

    public var description: String { value }

    static func isHostName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 253 else { return false }
        for label in name.split(separator: ".", omittingEmptySubsequences: false) {
            let bytes = Array(label.utf8)
            guard (1...63).contains(bytes.count), bytes.first != 0x2D, bytes.last != 0x2D else { return false }
            for b in bytes where !((b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == 0x2D) {
                return false
            }
        }
        return true
    }
}

/// The URL path under which a package is mounted: starts and ends with `/` (default `/`). The prefix is
/// stripped before the file lookup, so `/app/index.html` under `/app/` is the file `index.html`.
public struct PathPrefix: Hashable, Sendable, CustomStringConvertible, Codable {
    public let value: String
    public static let root = PathPrefix(uncheckedValue: "/")

    public init(_ raw: String) throws(FieldError) {
        guard raw.hasPrefix("/"), raw.hasSuffix("/") else {
            throw FieldError(field: "pathPrefix", value: raw, reason: "must start and end with '/', like /app/")
        }
        if raw != "/" {
            do {
                _ = try SafePath(validating: String(raw.dropFirst().dropLast()))
            } catch {
                throw FieldError(field: "pathPrefix", value: raw, reason: error.reason.rawValue)
            }
        }
        value = raw
    }

    private init(uncheckedValue: String) { value = uncheckedValue }

    public init(from decoder: any Decoder) throws {
        try self.init(try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }

    public var description: String { value }
}

/// What a package claims: its hosts and its path prefix.
public struct Scope: Hashable, Sendable, Codable {
    public var hosts: [HostPattern]
    public var pathPrefix: PathPrefix

    public init(hosts: [HostPattern], pathPrefix: PathPrefix = .root) throws(FieldError) {
        guard !hosts.isEmpty else {
            throw FieldError(field: "scope.hosts", value: "", reason: "a package must claim at least one host")
        }
        var seen = Set<HostPattern>()
        for host in hosts where !seen.insert(host).inserted {
            throw FieldError(field: "scope.hosts", value: host.value, reason: "is listed twice")
        }
        self.hosts = hosts
        self.pathPrefix = pathPrefix
    }

    enum CodingKeys: String, CodingKey { case hosts, pathPrefix }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try self.init(
            hosts: try container.decode([HostPattern].self, forKey: .hosts),
            pathPrefix: try container.decode(PathPrefix.self, forKey: .pathPrefix))
    }
}

/// How a route answers: from the package, from the network, or one before the other. iOS developers know
/// them as `NSURLRequest` cache policies: offline-first is `returnCacheDataElseLoad`, offline-only is
/// `returnCacheDataDontLoad`, network-only is `reloadIgnoringLocalCacheData`, and network-first is
/// `useProtocolCachePolicy` with the package standing in for the cache.
public enum Strategy: String, Sendable, Hashable, Codable, CaseIterable {
    case offlineFirst = "offline-first"
    case networkFirst = "network-first"
    case offlineOnly = "offline-only"
    case networkOnly = "network-only"

    public init(parsing raw: String) throws(FieldError) {
        guard let strategy = Strategy(rawValue: raw) else {
            throw FieldError(
                field: "strategy", value: raw,
                reason: "must be one of " + Strategy.allCases.map(\.rawValue).joined(separator: ", "))
        }
        self = strategy
    }
}

/// A strategy for the URL paths under `prefix` (an absolute URL path such as `/api/`).
public struct Route: Hashable, Sendable, Codable {
    public var prefix: String
    public var strategy: Strategy
    /// How long the network may take before the route gives up on it; only network strategies use it.
    public var timeoutMs: Int?

    public static let maxTimeoutMs = 600_000

    public init(prefix: String, strategy: Strategy, timeoutMs: Int? = nil) throws(FieldError) {
        guard prefix.hasPrefix("/") else {
            throw FieldError(field: "routes.prefix", value: prefix, reason: "must be an absolute URL path starting with '/'")
        }
        if prefix != "/" {
            let inner = prefix.hasSuffix("/") ? String(prefix.dropFirst().dropLast()) : String(prefix.dropFirst())
            do { _ = try SafePath(validating: inner) } catch {
                throw FieldError(field: "routes.prefix", value: prefix, reason: error.reason.rawValue)
            }
        }
        if let timeoutMs {
            guard (1...Self.maxTimeoutMs).contains(timeoutMs) else {
                throw FieldError(field: "routes.timeoutMs", value: String(timeoutMs), reason: "must be between 1 and \(Self.maxTimeoutMs)")
            }
            guard strategy == .networkFirst || strategy == .networkOnly else {
                throw FieldError(field: "routes.timeoutMs", value: String(timeoutMs), reason: "only network-first and network-only routes use a timeout")
            }
        }
        self.prefix = prefix
        self.strategy = strategy
        self.timeoutMs = timeoutMs
    }

    /// Parses the CLI form `<prefix>=<strategy>[:<timeoutMs>]`, e.g. `/api/=network-first:3000`.
    public init(parsing spec: String) throws(FieldError) {
        guard let equals = spec.firstIndex(of: "=") else {
            throw FieldError(field: "route", value: spec, reason: "must look like <prefix>=<strategy>[:<timeoutMs>], e.g. /api/=network-first:3000")
        }
        let prefix = String(spec[..<equals])
        var strategyText = Substring(spec[spec.index(after: equals)...])
        var timeout: Int?
        if let colon = strategyText.firstIndex(of: ":") {
            guard let ms = Int(strategyText[strategyText.index(after: colon)...]) else {
                throw FieldError(field: "route", value: spec, reason: "the timeout after ':' must be a whole number of milliseconds")
            }
            timeout = ms
            strategyText = strategyText[..<colon]
        }
        try self.init(prefix: prefix, strategy: try Strategy(parsing: String(strategyText)), timeoutMs: timeout)
    }

    enum CodingKeys: String, CodingKey { case prefix, strategy, timeoutMs }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try self.init(
            prefix: try container.decode(String.self, forKey: .prefix),
            strategy: try container.decode(Strategy.self, forKey: .strategy),
            timeoutMs: try container.decodeIfPresent(Int.self, forKey: .timeoutMs))
    }
}
