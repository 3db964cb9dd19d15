import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// The upstream connections of one event loop: idle ones kept per origin, new ones opened on this loop. A
/// request made on a loop is carried by a connection of that loop, so the exchange, its connection and the
/// server connection that forwards the body share one thread and never lock or hop.
///
/// There is no cap on connections in use: each carries one exchange, and exchanges are bounded by the clients
/// that cause them (one at a time per client connection). What is capped is how many idle ones are kept.
///
/// Every method runs on ``eventLoop`` (hence `@unchecked Sendable`: a fetch made off the loop hands the pool to
/// the loop, and touches it only there).
final class UpstreamConnectionPool: @unchecked Sendable {
    let eventLoop: any EventLoop
    private let settings: Settings
    /// Idle connections per origin, the most recently used last (it is the one taken: the likeliest to be alive).
    private var idle: [UpstreamOrigin: IdleList] = [:]

    /// One origin's idle connections, by reference: taking and parking change the list where it is, with a plain
    /// dictionary lookup (changing a value inside the dictionary in place costs a coroutine frame's allocation).
    private final class IdleList {
        var connections: [UpstreamConnection] = []
    }
    private var sweep: RepeatedTask?
    private var shutDown = false
    /// The response-head timeouts of this loop's exchanges, on one timer.
    let headDeadlines: HeadDeadlines

    struct Settings: Sendable {
        var connectTimeout: TimeAmount
        var idleTimeout: TimeAmount
        var maxIdlePerOrigin: Int
        /// The context for https, or why there is none (the system's trust roots could not be loaded).
        var tls: Result<NIOSSLContext, UpstreamTLSUnavailable>
        /// Resolves names for a connection (tests: a name whose first address refuses); nil for NIO's getaddrinfo.
        var makeResolver: (@Sendable (any EventLoop) -> any Resolver & Sendable)?
    }

    init(eventLoop: any EventLoop, settings: Settings) {
        self.eventLoop = eventLoop
        self.settings = settings
        headDeadlines = HeadDeadlines(eventLoop: eventLoop)
    }

    /// An idle connection to `origin`, or nil when there is none.
    func takeIdle(_ origin: UpstreamOrigin) -> UpstreamConnection? {
        // An origin's list stays when it empties (the next park fills it again); the sweep drops empty ones.
        idle[origin]?.connections.popLast()
    }

    /// Opens a new connection to `origin` on this loop. Each channel the bootstrap tries (happy eyeballs tries
    /// the addresses of a name in turn, in parallel after 250 ms) gets its own handler; the winner's is returned.
    func connect(_ origin: UpstreamOrigin) -> EventLoopFuture<any Channel> {
        var tls: NIOSSLContext?
        if origin.tls {
            switch settings.tls {
            case .success(let context): tls = context
            case .failure(let unavailable): return eventLoop.makeFailedFuture(unavailable)
            }
        }
        let serverName = origin.hostIsAddress ? nil : origin.host
        return ClientBootstrap(group: eventLoop)
            .connectTimeout(settings.connectTimeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelOption(.autoRead, value: false)
            .resolver(settings.makeResolver?(eventLoop))
            .channelInitializer { [tls, self] channel in
                do {
                    let sync = channel.pipeline.syncOperations
                    if let tls { try sync.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverName)) }
                    // Every field was checked when the request was prepared (``RequestSyntax``).
                    try sync.addHTTPClientHandlers(enableOutboundHeaderValidation: false)
                    try sync.addHandler(UpstreamConnection(origin: origin, pool: self))
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
            .connect(host: origin.host, port: origin.port)
    }

    /// A connection that finished an exchange and may carry another.
    func park(_ connection: UpstreamConnection) {
        guard !shutDown, settings.maxIdlePerOrigin > 0 else { return connection.close() }
        let list = idleList(connection.origin)
        list.connections.append(connection)
        if list.connections.count > settings.maxIdlePerOrigin { list.connections.removeFirst().close() }
        if sweep == nil {
            // One timer per loop, not one per parked connection: parking happens once per request.
            let every = min(settings.idleTimeout, .seconds(5))
            sweep = eventLoop.scheduleRepeatedTask(initialDelay: every, delay: every) { [weak self] _ in self?.closeExpired() }
        }
    }

    /// A parked connection closed (the origin closed it, or sent something unasked).
    func remove(_ connection: UpstreamConnection) {
        guard let list = idle[connection.origin], let index = list.connections.firstIndex(where: { $0 === connection }) else { return }
        list.connections.remove(at: index)
    }

    private func idleList(_ origin: UpstreamOrigin) -> IdleList {
        if let list = idle[origin] { return list }
        let list = IdleList()
        idle[origin] = list
        return list
    }

    /// Closes every idle connection; connections in use close when their exchange ends.
    func shutdown() {
        shutDown = true
        sweep?.cancel()
        sweep = nil
        let all = idle.values.flatMap(\.connections)
        idle = [:]
        for connection in all { connection.close() }
    }

    var idleCount: Int { idle.values.reduce(0) { $0 + $1.connections.count } }

    private func closeExpired() {
        let now = NIODeadline.now()
        for (origin, list) in idle {
            let (expired, kept) = list.connections.reduce(into: ([UpstreamConnection](), [UpstreamConnection]())) { split, connection in
                if case .idle(let since) = connection.state, now - since >= settings.idleTimeout { split.0.append(connection) } else { split.1.append(connection) }
            }
            guard !expired.isEmpty || list.connections.isEmpty else { continue }
            list.connections = kept
            if kept.isEmpty { idle[origin] = nil }
            for connection in expired { connection.close() }
        }
        if idle.isEmpty {
            sweep?.cancel()
            sweep = nil
        }
    }
}

/// An https request when TLS could not be set up (its trust roots could not be loaded).
struct UpstreamTLSUnavailable: Error, CustomStringConvertible {
    let reason: String
    var description: String { "TLS is not available: \(reason)" }
}
