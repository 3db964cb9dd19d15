import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import SatchelCore
import SatchelHTTP

/// The network fallback on SwiftNIO: a ``NetworkFetcher`` with its own small HTTP/1.1 client, the default for
/// `satchel serve`, `satchel update` and on Linux (`URLSessionFetcher` stays for apps on Apple platforms).
///
/// - Header fields pass as sent, both ways: order kept, repeated fields (two `Set-Cookie`) as separate lines,
///   `Content-Length` passed on when the upstream sent one; only hop-by-hop fields are removed (``HopByHop``).
///   Nothing is added but `Host` (the upstream's authority) and the length of the restored body.
/// - Backpressure end to end: the upstream socket is read only as fast as the consumer takes the body
///   (``UpstreamBodyState``), so a slow client costs one socket read of memory, not the whole response.
/// - Timeouts: connect, the response head (``FetchTimeouts/responseHead``, a route's `timeoutMs`), and idle
///   between body parts while the consumer waits; never a total that cuts a live body.
/// - Connections are kept per event loop and origin (``UpstreamConnectionPool``) and reused; an idempotent
///   request whose reused connection the origin had just closed is sent again on a new one.
/// - Redirects are returned, never followed; bodies are passed on as received (no decompression); https with
///   the system's trust roots (and any given), SNI and hostname verification.
///
/// Why not AsyncHTTPClient, which it replaced: a miss cost ~100 µs of CPU through it, a third of nginx's
/// proxying rate, in per-request state machines, promises and pool bookkeeping built for far more than a
/// proxy's fallback needs (HTTP/2, redirects, retries with backoff, request streaming). This client does one
/// thing on the caller's event loop; see docs/decisions/0012-niofetcher-replaces-asynchttpclient.md.
///
/// Share the server's event loops: a fetch made inside ``withPreferredEventLoop(_:_:)`` runs on that loop, so
/// the upstream connection lives on the same thread as the client's and the server can move the body's
/// buffers (``UpstreamExchange/nextPart()``) without copying them or hopping threads.
public final class NIOFetcher: NetworkFetcher {
    private let group: any EventLoopGroup
    let pools: LoopPools

    @TaskLocal static var preferredEventLoop: (any EventLoop)?

    /// - Parameters:
    ///   - eventLoopGroup: the loops to run on (the server passes its own).
    ///   - connectTimeout: for every connection opened (TCP; the TLS handshake counts toward the head timeout).
    ///   - idleConnectionTimeout: how long an unused connection is kept open.
    ///   - maxIdleConnectionsPerHost: idle connections kept per origin and event loop.
    ///   - additionalTrustRoots: PEM files of certificate authorities to trust besides the system's (a staging
    ///     origin with its own CA).
    /// - Throws: ``FetchError/connectionFailed(_:)`` when a trust-root file cannot be loaded.
    public convenience init(
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, connectTimeout: Duration = .seconds(10),
        idleConnectionTimeout: Duration = .seconds(60), maxIdleConnectionsPerHost: Int = 256, additionalTrustRoots: [String]
    ) throws(FetchError) {
        try self.init(
            eventLoopGroup: eventLoopGroup, connectTimeout: connectTimeout, idleConnectionTimeout: idleConnectionTimeout,
            maxIdleConnectionsPerHost: maxIdleConnectionsPerHost, additionalTrustRoots: additionalTrustRoots, makeResolver: nil)
    }

    /// The same, resolving names with `makeResolver` (tests: a name whose first address refuses).
    init(
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, connectTimeout: Duration = .seconds(10),
        idleConnectionTimeout: Duration = .seconds(60), maxIdleConnectionsPerHost: Int = 256, additionalTrustRoots: [String],
        makeResolver: (@Sendable (any EventLoop) -> any Resolver & Sendable)?
    ) throws(FetchError) {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["http/1.1"]
        tls.additionalTrustRoots = additionalTrustRoots.map { .file($0) }
        let context: Result<NIOSSLContext, UpstreamTLSUnavailable>
        do {
            context = .success(try NIOSSLContext(configuration: tls))
        } catch {
            guard additionalTrustRoots.isEmpty else {
                throw .connectionFailed("cannot load the trust roots \(additionalTrustRoots.joined(separator: ", ")): \(error)")
            }
            context = .failure(UpstreamTLSUnavailable(reason: "\(error)"))
        }
        let settings = UpstreamConnectionPool.Settings(
            connectTimeout: TimeAmount(connectTimeout), idleTimeout: TimeAmount(idleConnectionTimeout),
            maxIdlePerOrigin: max(0, maxIdleConnectionsPerHost), tls: context, makeResolver: makeResolver)
        group = eventLoopGroup
        pools = LoopPools(group: eventLoopGroup, settings: settings)
    }

    /// The same with the system's trust roots only (it cannot fail: https requests report a TLS problem).
    public convenience init(
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, connectTimeout: Duration = .seconds(10),
        idleConnectionTimeout: Duration = .seconds(60), maxIdleConnectionsPerHost: Int = 256
    ) {
        // Cannot throw: only a trust-root file that fails to load throws, and none is given.
        try! self.init(
            eventLoopGroup: eventLoopGroup, connectTimeout: connectTimeout, idleConnectionTimeout: idleConnectionTimeout,
            maxIdleConnectionsPerHost: maxIdleConnectionsPerHost, additionalTrustRoots: [])
    }

    /// Closes every idle upstream connection; connections in use close when their exchange ends. Call when
    /// nothing fetches any more.
    public func shutdown() async throws {
        for pool in pools.all {
            try await pool.eventLoop.submit { pool.shutdown() }.get()
        }
    }

    /// Runs `body` so that fetches made in it run on `eventLoop`.
    public static func withPreferredEventLoop<T>(_ eventLoop: any EventLoop, _ body: () async throws -> T) async rethrows -> T {
        try await $preferredEventLoop.withValue(eventLoop, operation: body)
    }

    /// ``NetworkFetcher``'s fetch. On an executor of this fetcher's own kind, an event loop (``EventLoopExecutor``),
    /// called on that loop: the exchange runs there and `completion` is called there with no task, thread hop or
    /// future in between (a miss is a proxy's hot path); the upstream connection then lives on the client's thread,
    /// so the server can move the body's buffers without copying them. Any other executor: the exchange runs on the
    /// preferred loop (``withPreferredEventLoop(_:_:)``) or the group's next, and `completion` is handed to
    /// `executor` from there.
    @discardableResult
    public func fetch(
        _ request: ResourceRequest, timeouts: FetchTimeouts, on executor: any AnswerExecutor,
        completion: @escaping @Sendable (Result<ResourceResponse, any Error>) -> Void
    ) -> (any FetchHandle)? {
        let prepared: UpstreamRequest
        do { prepared = try UpstreamRequest(request, allocator: ByteBufferAllocator()) } catch {
            executor.execute { completion(.failure(error)) }
            return nil
        }
        if let loop = (executor as? EventLoopExecutor)?.eventLoop, loop.inEventLoop {
            let exchange = UpstreamExchange(eventLoop: loop, request: prepared, pool: pools.pool(for: loop), timeouts: timeouts, onResponse: completion)
            exchange.start()
            return exchange
        }
        let loop = Self.preferredEventLoop ?? group.next()
        let exchange = UpstreamExchange(eventLoop: loop, request: prepared, pool: pools.pool(for: loop), timeouts: timeouts) { result in
            executor.execute { completion(result) }
        }
        loop.execute { exchange.start() }
        return exchange
    }

    /// Idle connections kept on `eventLoop` (for tests and the status of a running server).
    public func idleConnections(on eventLoop: any EventLoop) -> EventLoopFuture<Int> {
        let pool = pools.pool(for: eventLoop)
        return eventLoop.submit { pool.idleCount }
    }
}

/// An event loop as an ``AnswerExecutor``: a caller on the loop (the server) hands it to the loader and the fetcher,
/// and ``NIOFetcher`` then runs its exchange on that very loop. Make one per loop and keep it.
public final class EventLoopExecutor: AnswerExecutor {
    public let eventLoop: any EventLoop

    public init(_ eventLoop: any EventLoop) { self.eventLoop = eventLoop }

    public func execute(_ work: @escaping @Sendable () -> Void) {
        eventLoop.execute(work)
    }
}

/// One pool per event loop, found without a lock for the group's own loops (the server's); a loop from
/// elsewhere gets its pool made on first use, under a lock.
final class LoopPools: Sendable {
    private let known: [ObjectIdentifier: UpstreamConnectionPool]
    private let others: Locked<[ObjectIdentifier: UpstreamConnectionPool]>
    private let settings: UpstreamConnectionPool.Settings

    init(group: any EventLoopGroup, settings: UpstreamConnectionPool.Settings) {
        var known: [ObjectIdentifier: UpstreamConnectionPool] = [:]
        for loop in group.makeIterator() {
            known[ObjectIdentifier(loop)] = UpstreamConnectionPool(eventLoop: loop, settings: settings)
        }
        self.known = known
        others = Locked([:])
        self.settings = settings
    }

    func pool(for loop: any EventLoop) -> UpstreamConnectionPool {
        if let pool = known[ObjectIdentifier(loop)] { return pool }
        let settings = settings
        return others.withLock { others in
            if let pool = others[ObjectIdentifier(loop)] { return pool }
            let pool = UpstreamConnectionPool(eventLoop: loop, settings: settings)
            others[ObjectIdentifier(loop)] = pool
            return pool
        }
    }

    var all: [UpstreamConnectionPool] { Array(known.values) + others.withLock { Array($0.values) } }
}
