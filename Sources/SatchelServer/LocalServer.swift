import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import SatchelCache
import SatchelCore
import SatchelEngine
import SatchelHTTP
import SatchelNetwork
import SatchelStore

/// `satchel serve`: the engine over HTTP/1.1 on SwiftNIO, in origin mode (`GET /app/x` with a Host header)
/// and forward-proxy mode (`GET http://host/app/x`, and CONNECT to allow-listed hosts), with keep-alive,
/// pipelining, backpressure, sendfile for package files, limits (431, 413, 408, idle timeout, a connection
/// cap) and graceful shutdown that lets in-flight responses finish.
public final class LocalServer: Sendable {
    public let responder: ServerResponder
    public let configuration: ServerConfiguration
    private let group: any EventLoopGroup
    /// Whether this server made its event loops (and so stops them on shutdown).
    private let ownsGroup: Bool
    /// The network fallback this server made on its loops (and so shuts down).
    private let ownedFetcher: NIOFetcher?
    private let serverChannel = Locked<(any Channel)?>(nil)
    /// Open connections, so that shutdown can ask each to quiesce.
    private let children = Locked([ObjectIdentifier: any Channel]())

    /// - Parameter eventLoopGroup: the loops to serve on; share them with the loader's `NIOFetcher` so
    ///   that upstream connections live on the same threads as the clients'. Nil makes (and owns) new ones.
    public init(responder: ServerResponder, eventLoopGroup: (any EventLoopGroup)? = nil) {
        self.responder = responder
        configuration = responder.configuration
        ownsGroup = eventLoopGroup == nil
        group = eventLoopGroup ?? MultiThreadedEventLoopGroup(numberOfThreads: max(1, configuration.threads))
        ownedFetcher = nil
    }

    /// `satchel serve` as a library: its own event loops, an ``NIOFetcher`` on them for the network
    /// fallback (so a miss's body moves from upstream to client on one thread), and the responder. Shutdown
    /// stops all three.
    /// - Parameters:
    ///   - additionalTrustRoots: PEM files of certificate authorities the fetcher trusts besides the system's (an
    ///     https upstream with its own CA).
    ///   - cache: an HTTP cache in front of the network (shared mode for a server): misses are answered from it,
    ///     and stored in it, by RFC 9111's rules.
    /// - Throws: ``FetchError/connectionFailed(_:)`` when a trust-root file cannot be loaded.
    public init(
        store: PackageStore, engine: ResourceEngine, policy: NetworkPolicy, configuration: ServerConfiguration, log: RequestLog = RequestLog(),
        logger: Logger = Logger(label: "satchel.access"), additionalTrustRoots: [String] = [], cache: HTTPCache? = nil
    ) throws(FetchError) {
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: max(1, configuration.threads))
        let fetcher: NIOFetcher
        do { fetcher = try NIOFetcher(eventLoopGroup: loops, additionalTrustRoots: additionalTrustRoots) } catch {
            try? loops.syncShutdownGracefully()
            throw error
        }
        let loader = ResourceLoader(engine: engine, fetcher: cache.map { CachingFetcher(cache: $0, upstream: fetcher) } ?? fetcher, policy: policy)
        responder = ServerResponder(store: store, loader: loader, configuration: configuration, log: log, logger: logger, cache: cache)
        self.configuration = configuration
        group = loops
        ownsGroup = true
        ownedFetcher = fetcher
    }

    /// Binds and starts accepting; returns the bound port.
    public func start() async throws -> Int {
        let responder = self.responder
        let limits = configuration.limits
        let connect = ConnectTunnel(allowed: configuration.allowedUpstreams, overrides: configuration.upstreamOverrides, ports: configuration.connectPorts)
        let children = self.children
        // The request layer names the request fields its answers depend on.
        let cache = EncodedResponseCache(varying: responder.layer.fieldsThatChangeAnswers)
        Self.instantiateHandlerTypes()
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 512)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { channel in
                let key = ObjectIdentifier(channel)
                let count = children.withLock { $0[key] = channel; return $0.count }
                channel.closeFuture.whenComplete { _ in _ = children.withLock { $0.removeValue(forKey: key) } }
                guard count <= limits.maxConnections else {
                    // Over the cap: refuse at once rather than let the connection wait.
                    return channel.close()
                }
                return channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    var decoderLimits = NIOHTTPDecoderLimitConfiguration()
                    decoderLimits.maxHeaderListSize = limits.maxHeaderBytes
                    decoderLimits.maxHeaderFieldSize = limits.maxHeaderBytes
                    let observer = RequestBytesObserver()
                    let handler = HTTPConnectionHandler(responder: responder, limits: limits, connect: connect, cache: cache)
                    observer.connection = handler
                    try sync.addHandler(observer, name: ConnectTunnel.observerName)
                    try sync.addHandler(
                        ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes, informationalResponseStrategy: .drop, limitConfiguration: decoderLimits)),
                        name: ConnectTunnel.decoderName)
                    try sync.addHandler(handler, name: ConnectTunnel.handlerName)
                }
            }
        let channel = try await bootstrap.bind(host: configuration.bindHost, port: configuration.port).get()
        serverChannel.withLock { $0 = channel }
        let port = channel.localAddress?.port ?? configuration.port
        responder.bound(to: port)
        return port
    }

    /// Builds the generic handler and message types once, on this thread, before any connection is accepted.
    /// A browser opens several connections at once, so the first ones are set up on both event loops at the
    /// same moment; in one CI run the Swift runtime crashed (a null metadata pointer while instantiating
    /// `ByteToMessageHandler<HTTPRequestDecoder>` from its mangled name in the channel initializer), the
    /// signature of a race on first-time generic metadata instantiation. Instantiated here, later lookups
    /// only read the runtime's cache.
    static func instantiateHandlerTypes() {
        _ = ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes, informationalResponseStrategy: .drop))
        _ = [HTTPServerRequestPart]()
        _ = NIOAny(HTTPServerRequestPart.end(nil))
    }

    /// Stops accepting, lets in-flight responses finish, closes idle connections, then stops the threads.
    /// Each connection closes at once when idle, or once the last byte of its response in flight has been
    /// handed to the socket (NIO's own quiescing closes as soon as the response's end is *queued*, which would
    /// cut a sendfile short).
    public func shutdown() async throws {
        guard let channel = serverChannel.withLock({ $0 }) else { return }
        try? await channel.close()
        let open = children.withLock { Array($0.values) }
        for child in open { child.pipeline.fireUserInboundEventTriggered(ServerShutdownEvent()) }
        // Give responses in flight the grace period, then close whatever is left.
        let deadline = ContinuousClock.now + configuration.limits.shutdownGrace
        for child in open {
            while child.isActive, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
            if child.isActive { try? await child.close() }
        }
        try await ownedFetcher?.shutdown()
        if ownsGroup { try await group.shutdownGracefully() }
    }

    /// Open connections right now.
    public var connectionCount: Int { children.withLock { $0.count } }
}
