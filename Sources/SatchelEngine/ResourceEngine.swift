import SatchelCore
import SatchelHTTP

/// The scheme-handler engine: given a request for `satchel://m.shop.com/app/index.html` or an intercepted
/// `https://m.shop.com/app/index.html`, finds the package and file that answer it and builds the HTTP
/// response (MIME type, ETag/304, Range/206/416, HEAD, OPTIONS and CORS, Cache-Control), or returns a miss
/// for the network.
///
/// ```swift
/// let engine = try ResourceEngine(source: store, configuration: EngineConfiguration())
/// switch engine.handle(ResourceRequest(url: "satchel://m.shop.com/index.html")) {
/// case .response(let response): ...   // send it; `.file` bodies are read in chunks or sent with sendfile
/// case .miss(let miss): ...           // fetch `miss.upstreamURL` from the network
/// }
/// ```
///
/// Versions are pinned per launch: the engine serves the versions that were active when it was created
/// (and pins them in the store so gc keeps them), unless ``ActivationMode/immediate`` is configured.
/// Thread-safe; `handle` may be called from many tasks at once. A file is never read whole into memory,
/// except small files that the small-file cache keeps.
public final class ResourceEngine: Sendable {
    public let configuration: EngineConfiguration
    private let source: any PackageSource
    private let snapshot: Locked<Snapshot>
    private let smallFiles: SmallFileCache
    /// The headers a hook may add (``BodyChannels/allHeaders``), listed once: the hot path checks every request.
    private let restorerHeaders: [String]
    /// The query parameters a hook may add (``BodyChannels/allParameters``), listed once for the same reason.
    private let restorerParameters: [String]
    /// Bodies pages hand over for the body-store channel (the WebKit adapter's message handler and the
    /// server's `POST /_satchel/bodies/<id>` put them here).
    public let bodyStore: BodyStore
    /// How restored bodies prove they came from this launch's hook; nil when the configuration does not ask.
    public let proofCheck: BodyProofCheck?

    /// The secret the hook makes its proofs from (for ``HookScript``'s configuration); nil when no proof is asked.
    public var bodyProofSecret: BodyProofSecret? { proofCheck?.secret }

    /// The packages being served, indexed once per activation.
    final class Snapshot: Sendable {
        private static let generations = Locked(0)
        /// Changes with every reload: what a cache in front of the engine keys on.
        let generation: Int
        let token: [Int64]
        let index: ScopeIndex<PackageEntry>
        let packages: [ServedPackage]
        let pin: (any Sendable)?

        init(token: [Int64], packages: [ServedPackage], pin: (any Sendable)?) {
            generation = Self.generations.withLock { value -> Int in
                value += 1
                return value
            }
            self.token = token
            self.packages = packages
            self.pin = pin
            index = ScopeIndex(packages.map { (scope: $0.manifest.scope, value: PackageEntry($0)) })
        }
    }

    /// One package with every per-file header value computed once.
    final class PackageEntry: Sendable {
        /// A class, so passing one around on the hot path is a single retain rather than one per string.
        final class File: Sendable {
            let record: FileRecord
            /// The file holding the bytes: the file itself, or the archive of a stored zip entry.
            let location: String
            /// Where the bytes start in ``location`` (0 for a file in a folder).
            let offset: Int64
            /// Set when the bytes must be decoded (a deflated entry of a bundle served from its archive).
            let encoded: (any EncodedFile)?
            /// Unique for the life of the process, so the cache never hashes a long path.
            let cacheKey: Int
            let etag: String
            let contentType: String
            let isHTML: Bool

            init(record: FileRecord, location: FileLocation, cacheKey: Int, etag: String, contentType: String, isHTML: Bool) {
                self.record = record
                switch location {
                case .region(let path, let offset):
                    self.location = path
                    self.offset = offset
                    encoded = nil
                case .encoded(let file):
                    self.location = ""
                    offset = 0
                    encoded = file
                }
                self.cacheKey = cacheKey
                self.etag = etag
                self.contentType = contentType
                self.isHTML = isHTML
            }
        }

        let manifest: Manifest
        let label: String
        let files: [String: File]
        /// `Last-Modified` of every file: the bundle's build time (`createdAt`), formatted once.
        let lastModified: String

        init(_ package: ServedPackage) {
            manifest = package.manifest
            label = package.label
            lastModified = package.manifest.createdAt.httpDate
            var files: [String: File] = [:]
            files.reserveCapacity(package.manifest.files.count)
            for record in package.manifest.files {
                // A file the source cannot locate is left out: a request for it is answered as for any absent file.
                guard let location = package.location(of: record) else { continue }
                let type = MIMETable.isText(record.mime) ? record.mime + "; charset=utf-8" : record.mime
                files[record.path.value] = File(
                    record: record, location: location, cacheKey: FileKeys.next(),
                    etag: EntityTag.strong(sha256: record.sha256), contentType: type, isHTML: record.mime == "text/html")
            }
            self.files = files
        }
    }

    public init(source: any PackageSource, configuration: EngineConfiguration = EngineConfiguration(), bodyStore: BodyStore = BodyStore()) throws {
        self.configuration = configuration
        self.bodyStore = bodyStore
        self.source = source
        smallFiles = SmallFileCache(maxFileSize: configuration.smallFileCache.maxFileSize, maxBytes: configuration.smallFileCache.totalBytes)
        restorerHeaders = configuration.bodyChannels?.allHeaders ?? []
        restorerParameters = configuration.bodyChannels?.allParameters ?? []
        if case .required(let secret) = configuration.bodyProof {
            let ledger = NonceLedger()
            proofCheck = BodyProofCheck(
                secret: secret, now: { NonceLedger.millisecondsSince1970() }, claimNonce: { ledger.claim($0) })
        } else {
            proofCheck = nil
        }
        let token = source.changeToken()
        let (packages, pin) = try source.pinnedPackages()
        snapshot = Locked(Snapshot(token: token, packages: packages, pin: pin))
    }

    /// The versions served right now.
    public var servedPackages: [ServedPackage] { currentSnapshot().packages }

    /// Identifies the versions being served: it changes whenever they do (an activation in immediate mode, a
    /// ``reload()``). A response to a request that carries none of ``headersThatChangeResponses`` may be
    /// reused, for the same method, host and target, while this is unchanged.
    public var generation: Int { currentSnapshot().generation }

    /// The request headers whose presence or value can change a package response (conditionals, ranges,
    /// CORS, and the body-restoring headers); every other header is ignored by the engine's offline answers.
    public var headersThatChangeResponses: [String] {
        RequestField.allCases.filter(\.changesPackageAnswer).map(\.rawValue) + restorerHeaders
    }

    /// Whether any served package claims `host` (lower-case, no port).
    public func claims(host: String) -> Bool { currentSnapshot().index.claims(host: host) }

    /// Reads the active versions again (immediate mode does this by itself when the source changes).
    public func reload() throws {
        let token = source.changeToken()
        let (packages, pin) = try source.pinnedPackages()
        serve(Snapshot(token: token, packages: packages, pin: pin))
    }

    private func serve(_ next: Snapshot) { snapshot.withLock { $0 = next } }

    private func currentSnapshot() -> Snapshot {
        let current = snapshot.withLock { $0 }
        guard configuration.activation == .immediate else { return current }
        let token = source.changeToken()
        guard token != current.token else { return current }
        // On a request's thread: never wait for the source (another process holding its pin lock). A busy source, or a
        // failed read, keeps serving what was there (better the old version than none) until a later request.
        guard let (packages, pin) = try? source.pinnedPackagesWithoutWaiting() else { return current }
        let next = Snapshot(token: token, packages: packages, pin: pin)
        serve(next)
        return next
    }

    // MARK: Handling a request

    /// What the package alone makes of `request`, under its route's strategy, with no network: its answer, or the
    /// miss a loader would send to the network (``ResourceLoader`` is the whole path). Synchronous: nothing in it
    /// waits (files are read as the body is consumed), so callers on any thread or task call it directly.
    public func handle(_ request: ResourceRequest) -> EngineResult {
        switch route(request) {
        case .answer(let response): return .response(response)
        case .routed(let routed): return PackageOnlyLoad.result(of: routed, engine: self)
        }
    }

    /// Restores the body, routes the request to a package and finds the file that would answer it, in one pass:
    /// everything a strategy needs to decide, before anything is read. A request that cannot be routed (a
    /// malformed URL or body, an unproven body) is answered at once.
    /// The request field a page names its cache policy in (`<policy>[:<seconds>]`, ``RequestCachePolicy``).
    public static let cachePolicyHeader = RequestField.satchelCache.rawValue

    public func route(_ incoming: ResourceRequest) -> EngineRouting {
        // Body restoration comes first, before routing: the restored request is what a miss forwards.
        var request = incoming
        var channel = BodyChannel.none
        if let channels = configuration.bodyChannels, Self.mayCarryRestoredBody(incoming, headers: restorerHeaders, parameters: restorerParameters) {
            do {
                (request, channel) = try BodyRestorer(channels: channels).restore(incoming, takeStoredBody: { bodyStore.take($0) }, proof: proofCheck)
            } catch {
                return .answer(Self.plain(error.status, error.description))
            }
        }
        guard let url = RequestURL(request.url) else {
            return .answer(Self.plain(400, "not an absolute URL: \(request.url)"))
        }
        // The page's cache policy for this request (WebKit passes no fetch `cache:` mode to a scheme handler):
        // taken off the request here, so that no origin ever sees it.
        if let value = request.headers[.satchelCache] {
            request.headers.remove(RequestField.satchelCache.rawValue)
            do { request.cachePolicy = try RequestCachePolicy(parsing: value) } catch {
                return .answer(Self.plain(400, "\(Self.cachePolicyHeader): \(error.reason) (not \(value))"))
            }
        }
        let isCustom = configuration.customSchemes.contains(url.scheme)
        let upstream = isCustom ? configuration.upstreamScheme + request.url.drop { $0 != ":" } : request.url
        let method: RequestMethod = request.method == .get ? .get : RequestMethod(request.method.rawValue.uppercased())
        guard isCustom || url.scheme == "https" || url.scheme == "http" else {
            return .routed(RoutedRequest(request: request, bodyChannel: channel, upstreamURL: request.url, method: method, outside: .scheme))
        }
        let current = currentSnapshot()
        guard let candidates = current.index.candidates(host: url.host) else {
            return .routed(RoutedRequest(request: request, bodyChannel: channel, upstreamURL: upstream, method: method, outside: .noPackage))
        }
        let decoded: String
        do { decoded = try URLPath.decode(url.rawPath) } catch {
            return .answer(Self.plain(400, "bad URL path \(url.rawPath): \(error)"))
        }
        guard let (prefix, package) = candidates.match(path: decoded) else {
            return .routed(RoutedRequest(request: request, bodyChannel: channel, upstreamURL: upstream, method: method, outside: .noPackage))
        }
        let route = package.manifest.route(forPath: decoded)
        guard method.readsRepresentation || method == .options else {
            return .routed(RoutedRequest(
                request: request, bodyChannel: channel, upstreamURL: upstream, method: method, outside: .method, route: route,
                package: package, decodedPath: decoded))
        }
        let path: SafePath?
        do { path = try URLPath.filePath(forDecoded: decoded, under: prefix) } catch {
            return .answer(Self.plain(400, "bad URL path \(url.rawPath): \(error)"))
        }
        var file = path.flatMap { package.files[$0.value] }
        if path == nil { file = package.files[package.manifest.entry.value] }
        if file == nil, package.manifest.spaFallback, let path, !path.fileName.contains("."), !url.rawPath.hasSuffix("/") {
            file = package.files[package.manifest.entry.value]
        }
        return .routed(RoutedRequest(
            request: request, bodyChannel: channel, upstreamURL: upstream, method: method, outside: nil, route: route, package: package,
            decodedPath: decoded, file: file))
    }

    /// The package's answer to a routed request: the file (conditional, range, HEAD) or, for OPTIONS, the allowed
    /// methods and CORS; nil when the package holds nothing for it.
    public func packageAnswer(_ routed: RoutedRequest) -> ResourceResponse? {
        guard let file = routed.file, let package = routed.entry else { return nil }
        if routed.method == .options { return options(routed.request) }
        return respond(to: routed.request, method: routed.method, with: file, package: package)
    }

    /// The package's "not here" (404), for a route that never asks the network.
    public func absentAnswer(_ routed: RoutedRequest) -> ResourceResponse {
        Self.plain(404, "not in package \(routed.package ?? "?"): \(routed.decodedPath)")
    }

    /// The package's offline page with status 503, for a navigation that neither the package nor the network
    /// could answer; nil when the package (`id@version`) has none.
    public func offlinePage(package label: String) -> ResourceResponse? {
        let current = snapshot.withLock { $0 }
        guard let served = current.packages.first(where: { $0.label == label }),
            let page = served.manifest.offlinePage, let record = served.manifest.file(at: page),
            let location = served.location(of: record), let body = Self.body(of: location, size: record.size, range: nil)
        else { return nil }
        return ResourceResponse(
            status: 503,
            headers: ["Content-Type": "text/html; charset=utf-8", "Content-Length": String(record.size), "Cache-Control": "no-store", "X-Satchel-Offline": "1"],
            body: body)
    }

    /// A body read straight from where the bytes are, without the small-file cache: a file region, or for encoded bytes
    /// the decoded range (whole when small, streamed when large). Nil when the file cannot be opened or decoded.
    static func body(of location: FileLocation, size: Int64, range: ClosedRange<Int64>?) -> ResponseBody? {
        let offset = range?.lowerBound ?? 0
        let length = range.map { $0.upperBound - $0.lowerBound + 1 } ?? size
        guard length > 0 else { return .empty }
        switch location {
        case .region(let path, let base):
            return FileRegion(path: path, offset: base + offset, length: length).map { .file($0) }
        case .encoded(let file):
            if size <= Self.decodeWholeBelow {
                guard let bytes = try? file.decodeAll(), Int64(bytes.count) == size else { return nil }
                return .bytes(Array(bytes[Int(offset)..<Int(offset + length)]))
            }
            return .stream(BodyStream(file.decode(range: offset...(offset + length - 1), chunkSize: FileRegion.maxChunk)))
        }
    }

    /// Encoded files up to this size are decoded whole into memory when served outside the small-file cache.
    static let decodeWholeBelow: Int64 = 64 << 10

    /// Whether handling `request` would restore a body (and so consume a stored body): callers with a fast
    /// path must then take the full one.
    public func restoresBody(_ request: ResourceRequest) -> Bool {
        configuration.bodyChannels != nil && Self.mayCarryRestoredBody(request, headers: restorerHeaders, parameters: restorerParameters)
    }

    /// Cheap test for the hot path: only a request with a satchel header or parameter needs the restorer.
    static func mayCarryRestoredBody(_ request: ResourceRequest, headers restorerHeaders: [String], parameters: [String]) -> Bool {
        if Self.query(of: request.url, namesAny: parameters) { return true }
        return request.headers.contains { field in restorerHeaders.contains { HTTPHeaders.equalNames($0, field.name) } }
    }

    /// Whether the URL's query has a parameter named exactly one of `names`: one pass over the bytes, comparing each
    /// parameter's name (the generic substring search of the standard library showed in server profiles, a fifth of
    /// a cache hit's time for a URL with a query).
    static func query(of url: String, namesAny names: [String]) -> Bool {
        var url = url
        return url.withUTF8 { bytes -> Bool in
            guard let question = bytes.firstIndex(of: UInt8(ascii: "?")) else { return false }
            var start = question + 1
            while start < bytes.count {
                var end = start
                while end < bytes.count, bytes[end] != UInt8(ascii: "&"), bytes[end] != UInt8(ascii: "#") { end += 1 }
                var nameEnd = start
                while nameEnd < end, bytes[nameEnd] != UInt8(ascii: "=") { nameEnd += 1 }
                let name = UnsafeBufferPointer(rebasing: bytes[start..<nameEnd])
                for candidate in names where candidate.utf8.count == name.count && candidate.utf8.elementsEqual(name) { return true }
                if end < bytes.count, bytes[end] == UInt8(ascii: "#") { return false }
                start = end + 1
            }
            return false
        }
    }

    /// Builds the response for a file: conditional, range, HEAD.
    private func respond(to request: ResourceRequest, method: RequestMethod, with file: PackageEntry.File, package: PackageEntry) -> ResourceResponse {
        let size = file.record.size
        var headers = HTTPHeaders(capacity: 8)
        headers.add("Content-Type", file.contentType)
        headers.add("ETag", file.etag)
        headers.add("Last-Modified", package.lastModified)
        headers.add("Accept-Ranges", "bytes")
        headers.add("Cache-Control", file.isHTML ? configuration.cacheControl.html : configuration.cacheControl.other)
        addCORS(to: &headers, origin: request.headers[.origin])
        if configuration.diagnosticHeader { headers.add("X-Satchel-Source", "\(package.label) \(file.record.path)") }

        // The build time is a strong validator: a file never changes within a version, and a version's files were
        // fixed before it was built.
        let validators = Validators(etag: file.etag, lastModified: package.manifest.createdAt)
        let answer = RepresentationSelection.select(method: method, headers: request.headers, validators: validators, size: size).answer(size: size)
        answer.addFraming(to: &headers)
        guard answer.sendsBody, method != .head else { return ResourceResponse(status: answer.status, headers: headers) }
        let (status, offset, length) = (answer.status, answer.offset, answer.length)
        if let encoded = file.encoded {
            return respondDecoding(encoded, status: status, headers: headers, file: file, package: package, offset: offset, length: length)
        }
        if let bytes = smallFiles.bytes(for: file.cacheKey, at: file.location, offset: file.offset, size: size) {
            return ResourceResponse(status: status, headers: headers, body: .bytes(length == size ? bytes : Array(bytes[Int(offset)..<Int(offset + length)])))
        }
        guard let region = FileRegion(path: file.location, offset: file.offset + offset, length: length) else {
            return Self.plain(500, "cannot open \(file.record.path) of \(package.label)")
        }
        return ResourceResponse(status: status, headers: headers, body: .file(region))
    }

    /// The body of a file stored encoded (a deflated entry of a bundle served from its archive): small files are
    /// decoded whole and kept in the small-file cache; larger ones are decoded as they are sent, the bytes
    /// before a range's start decoded and dropped (deflate has no random access), memory bounded by one chunk.
    private func respondDecoding(
        _ encoded: any EncodedFile, status: Int, headers: HTTPHeaders, file: PackageEntry.File, package: PackageEntry,
        offset: Int64, length: Int64
    ) -> ResourceResponse {
        let size = file.record.size
        guard length > 0 else { return ResourceResponse(status: status, headers: headers) }
        if size <= Int64(smallFiles.maxFileSize) || size <= Self.decodeWholeBelow {
            let bytes = smallFiles.bytes(for: file.cacheKey, size: size) { () -> [UInt8]? in
                guard let bytes = try? encoded.decodeAll(), Int64(bytes.count) == size else { return nil }
                return bytes
            }
            guard let bytes else { return Self.plain(500, "cannot decode \(file.record.path) of \(package.label)") }
            let whole = offset == 0 && length == size
            return ResourceResponse(status: status, headers: headers, body: .bytes(whole ? bytes : Array(bytes[Int(offset)..<Int(offset + length)])))
        }
        return ResourceResponse(status: status, headers: headers, body: .stream(BodyStream(encoded.decode(range: offset...(offset + length - 1), chunkSize: FileRegion.maxChunk))))
    }

    /// OPTIONS: a CORS preflight when the request is one, else the allowed methods.
    private func options(_ request: ResourceRequest) -> ResourceResponse {
        var headers = HTTPHeaders()
        headers.add("Allow", "GET, HEAD, OPTIONS")
        if let origin = request.headers[.origin], request.headers.contains(.accessControlRequestMethod) {
            addCORS(to: &headers, origin: origin)
            if headers.contains("Access-Control-Allow-Origin") {
                headers.add("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
                if let wanted = request.headers[.accessControlRequestHeaders] {
                    headers.add("Access-Control-Allow-Headers", wanted)
                }
                headers.add("Access-Control-Max-Age", "600")
            }
        }
        headers.add("Content-Length", "0")
        return ResourceResponse(status: 204, headers: headers)
    }

    private func addCORS(to headers: inout HTTPHeaders, origin: String?) {
        switch configuration.cors {
        case .none: return
        case .anyOrigin:
            headers.add("Access-Control-Allow-Origin", "*")
        case .origins(let allowed):
            headers.add("Vary", "Origin")
            if let origin, allowed.contains(origin) { headers.add("Access-Control-Allow-Origin", origin) }
        }
        headers.add("Access-Control-Expose-Headers", "Content-Length, Content-Range, ETag")
    }

    static func plain(_ status: Int, _ message: String) -> ResourceResponse { .error(status, message) }
}

/// Hands out cache keys; a counter behind a lock, used only while an activation is indexed.
enum FileKeys {
    private static let counter = Locked(0)
    static func next() -> Int { counter.withLock { $0 += 1; return $0 } }
}
