/// One installed version the engine may serve: its manifest and the folder holding its files.
public struct ServedPackage: Sendable, Equatable {
    public let manifest: Manifest
    /// Absolute folder of the version's files (`<store>/packages/<id>/versions/<version>`).
    public let folder: String

    public init(manifest: Manifest, folder: String) {
        self.manifest = manifest
        self.folder = folder
    }
}

/// Where the engine gets its packages from: the seam between HTTP policy (the engine) and bytes on disk
/// (the store), so that the engine can be tested without a store. `PackageStore` implements it.
public protocol PackageSource: Sendable {
    /// The versions active now, one per package.
    func servedPackages() throws -> [ServedPackage]
    /// A cheap value that changes whenever the active versions may have changed. The engine compares it on
    /// each request in `immediate` activation mode.
    func changeToken() -> [Int64]
    /// Keeps these versions from being garbage-collected while the returned value is alive.
    func pin(_ packages: [ServedPackage]) throws -> any Sendable
}

extension Manifest {
    /// The strategy for a URL path (decoded, absolute): the route with the longest matching prefix, else
    /// offline-first. A prefix matches at a segment boundary: `/api` matches `/api` and `/api/x`, not `/apix`.
    public func route(forPath path: String) -> Route? {
        var best: Route?
        for route in routes where Self.prefix(route.prefix, matches: path) {
            if best == nil || route.prefix.utf8.count > best!.prefix.utf8.count { best = route }
        }
        return best
    }

    static func prefix(_ prefix: String, matches path: String) -> Bool {
        guard path.hasPrefix(prefix) else { return false }
        if prefix.hasSuffix("/") || path.utf8.count == prefix.utf8.count { return true }
        return path.utf8[path.utf8.index(path.utf8.startIndex, offsetBy: prefix.utf8.count)] == UInt8(ascii: "/")
    }
}

/// Finds the package that claims a host and path: an exact host first, then a one-label wildcard, and among
/// the packages of that host the longest path prefix. Built once per activation; a lookup is a hash and a
/// short walk.
public struct ScopeIndex<Value: Sendable>: Sendable {
    private var exact: [String: [(prefix: String, value: Value)]] = [:]
    private var wildcard: [String: [(prefix: String, value: Value)]] = [:]

    public init(_ entries: [(scope: Scope, value: Value)]) {
        for entry in entries {
            for host in entry.scope.hosts {
                let item = (prefix: entry.scope.pathPrefix.value, value: entry.value)
                if host.isWildcard { wildcard[String(host.baseName), default: []].append(item) } else { exact[host.value, default: []].append(item) }
            }
        }
        // Longest prefix first, so the first match wins.
        for key in exact.keys { exact[key]!.sort { $0.prefix.utf8.count > $1.prefix.utf8.count } }
        for key in wildcard.keys { wildcard[key]!.sort { $0.prefix.utf8.count > $1.prefix.utf8.count } }
    }

    /// The packages that claim a host, looked up once; nil when none does.
    public struct Candidates: Sendable {
        let exact: [(prefix: String, value: Value)]?
        let wildcard: [(prefix: String, value: Value)]?

        /// The package for a decoded absolute path, with the prefix it matched. A path equal to a prefix
        /// without its trailing slash (`/app` for `/app/`) matches too.
        public func match(path: String) -> (prefix: String, value: Value)? {
            let fromExact = exact.flatMap { ScopeIndex.first(in: $0, path: path) }
            guard let fromWildcard = wildcard.flatMap({ ScopeIndex.first(in: $0, path: path) }) else { return fromExact }
            guard let fromExact else { return fromWildcard }
            return fromWildcard.prefix.utf8.count > fromExact.prefix.utf8.count ? fromWildcard : fromExact
        }
    }

    /// The packages claiming `host` (lower-case, no port), or nil.
    public func candidates(host: String) -> Candidates? {
        let exactList = exact[host]
        let wildcardList = wildcardList(host)
        return exactList == nil && wildcardList == nil ? nil : Candidates(exact: exactList, wildcard: wildcardList)
    }

    /// Whether any package claims `host`.
    public func claims(host: String) -> Bool { candidates(host: host) != nil }

    public func match(host: String, path: String) -> (prefix: String, value: Value)? {
        candidates(host: host)?.match(path: path)
    }

    /// The first (longest) prefix of a list sorted longest first that matches `path`.
    private static func first(in list: [(prefix: String, value: Value)], path: String) -> (prefix: String, value: Value)? {
        for item in list where path.hasPrefix(item.prefix) || (path.utf8.count + 1 == item.prefix.utf8.count && path + "/" == item.prefix) {
            return item
        }
        return nil
    }

    private func wildcardList(_ host: String) -> [(prefix: String, value: Value)]? {
        guard !wildcard.isEmpty, let dot = host.firstIndex(of: ".") else { return nil }
        return wildcard[String(host[host.index(after: dot)...])]
    }
}
