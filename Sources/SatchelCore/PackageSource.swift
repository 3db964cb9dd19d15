/// One version the engine may serve: its manifest and where its files' bytes are.
public struct ServedPackage: Sendable {
    public let manifest: Manifest
    public let files: PackageFiles

    public init(manifest: Manifest, files: PackageFiles) {
        self.manifest = manifest
        self.files = files
    }

    /// An installed version: one file per manifest entry under `folder`.
    public init(manifest: Manifest, folder: String) {
        self.init(manifest: manifest, files: .folder(folder))
    }

    /// `id@version`.
    public var label: String { "\(manifest.id)@\(manifest.version)" }

    /// The folder of an installed version; nil for a bundle served from its archive.
    public var folder: String? {
        if case .folder(let folder) = files { return folder }
        return nil
    }

    /// Where a file's bytes are; nil when the source has no such file.
    public func location(of file: FileRecord) -> FileLocation? {
        switch files {
        case .folder(let folder): .region(path: folder + "/" + file.path.value, offset: 0)
        case .archive(let archive): archive.location(of: file)
        }
    }
}

extension ServedPackage: Equatable {
    public static func == (lhs: ServedPackage, rhs: ServedPackage) -> Bool {
        lhs.manifest == rhs.manifest && lhs.files == rhs.files
    }
}

/// Where a served package's files are (Hummingbird's FileProvider split: the engine owns HTTP policy, the source
/// owns the bytes).
public enum PackageFiles: Sendable, Equatable {
    /// An installed version: `<folder>/<path>` for each file.
    case folder(String)
    /// A bundle served straight from its archive, never extracted (a built-in).
    case archive(any PackageArchive)

    public static func == (lhs: PackageFiles, rhs: PackageFiles) -> Bool {
        switch (lhs, rhs) {
        case (.folder(let a), .folder(let b)): a == b
        case (.archive(let a), .archive(let b)): a.path == b.path
        default: false
        }
    }
}

/// A bundle whose files are read from its archive in place. The source implements it; the engine only asks where
/// each file's bytes are.
public protocol PackageArchive: Sendable {
    /// The archive file.
    var path: String { get }
    /// Where `file`'s bytes are in the archive; nil when it holds no such file.
    func location(of file: FileRecord) -> FileLocation?
}

/// Where one file's bytes are.
public enum FileLocation: Sendable {
    /// The file's bytes as they are, starting `offset` bytes into the file at `path`: a whole file in a folder
    /// (offset 0) or a stored entry of a zip. The engine serves a region of it (sendfile, Range).
    case region(path: String, offset: Int64)
    /// Bytes that must be decoded first (a deflated zip entry); the source decodes them.
    case encoded(any EncodedFile)
}

/// A file stored encoded, decoded on demand by its source.
public protocol EncodedFile: Sendable {
    /// The whole file (the engine asks only for small files, which it may cache).
    func decodeAll() throws -> [UInt8]
    /// The bytes of `range` (decoded offsets, inclusive), decoded lazily in chunks of at most `chunkSize`; memory
    /// stays bounded by one chunk whatever the file's size. Bytes before the range are decoded and dropped.
    func decode(range: ClosedRange<Int64>, chunkSize: Int) -> AsyncThrowingStream<[UInt8], any Error>
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
    /// The versions to serve and a pin on them, taken so that no removal can fall between reading which versions
    /// are active and pinning them. The engine calls this; the default (read, then pin) suits sources that never
    /// delete anything.
    func pinnedPackages() throws -> (packages: [ServedPackage], pin: any Sendable)
    /// ``pinnedPackages()`` when it can be done without waiting for anyone (another process or thread holding what
    /// it needs); nil at once otherwise. A request's thread calls this: it must never wait on another process (an
    /// event loop would stall every connection it serves). The default suits sources that never wait.
    func pinnedPackagesWithoutWaiting() throws -> (packages: [ServedPackage], pin: any Sendable)?
}

extension PackageSource {
    public func pinnedPackages() throws -> (packages: [ServedPackage], pin: any Sendable) {
        let packages = try servedPackages()
        return (packages, try pin(packages))
    }

    public func pinnedPackagesWithoutWaiting() throws -> (packages: [ServedPackage], pin: any Sendable)? {
        try pinnedPackages()
    }
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
/// short walk. The lookups are inlinable, so the engine's module specializes them for its own `Value` (generic
/// code across the module boundary instantiated type metadata at run time on every request).
public struct ScopeIndex<Value: Sendable>: Sendable {
    @usableFromInline var exact: [String: [(prefix: String, value: Value)]] = [:]
    @usableFromInline var wildcard: [String: [(prefix: String, value: Value)]] = [:]

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
        @usableFromInline let exact: [(prefix: String, value: Value)]?
        @usableFromInline let wildcard: [(prefix: String, value: Value)]?

        @usableFromInline
        init(exact: [(prefix: String, value: Value)]?, wildcard: [(prefix: String, value: Value)]?) {
            self.exact = exact
            self.wildcard = wildcard
        }

        /// The package for a decoded absolute path, with the prefix it matched. A path equal to a prefix
        /// without its trailing slash (`/app` for `/app/`) matches too.
        @inlinable
        public func match(path: String) -> (prefix: String, value: Value)? {
            let fromExact = exact.flatMap { ScopeIndex.first(in: $0, path: path) }
            guard let fromWildcard = wildcard.flatMap({ ScopeIndex.first(in: $0, path: path) }) else { return fromExact }
            guard let fromExact else { return fromWildcard }
            return fromWildcard.prefix.utf8.count > fromExact.prefix.utf8.count ? fromWildcard : fromExact
        }
    }

    /// The packages claiming `host` (lower-case, no port), or nil.
    @inlinable
    public func candidates(host: String) -> Candidates? {
        let exactList = exact[host]
        let wildcardList = wildcardList(host)
        return exactList == nil && wildcardList == nil ? nil : Candidates(exact: exactList, wildcard: wildcardList)
    }

    /// Whether any package claims `host`.
    @inlinable
    public func claims(host: String) -> Bool { candidates(host: host) != nil }

    @inlinable
    public func match(host: String, path: String) -> (prefix: String, value: Value)? {
        candidates(host: host)?.match(path: path)
    }

    /// The first (longest) prefix of a list sorted longest first that matches `path`.
    @usableFromInline
    static func first(in list: [(prefix: String, value: Value)], path: String) -> (prefix: String, value: Value)? {
        for item in list where path.hasPrefix(item.prefix) || (path.utf8.count + 1 == item.prefix.utf8.count && path + "/" == item.prefix) {
            return item
        }
        return nil
    }

    @usableFromInline
    func wildcardList(_ host: String) -> [(prefix: String, value: Value)]? {
        guard !wildcard.isEmpty, let dot = host.utf8.firstIndex(of: UInt8(ascii: ".")) else { return nil }
        return wildcard[String(Substring(host.utf8[host.utf8.index(after: dot)...]))]
    }
}
