import NIOCore
import SatchelCore
import SatchelEngine

/// How `satchel serve` runs: where it listens, what it may reach, and its limits.
public struct ServerConfiguration: Sendable {
    public var bindHost: String
    /// 0 picks a free port.
    public var port: Int
    /// The host assumed for origin-mode requests whose Host header names no package (e.g. `localhost:8080`).
    public var defaultHost: String?
    /// Hosts the network fallback and CONNECT may reach.
    public var allowedUpstreams: [HostPattern]
    /// Host -> origin overrides (`m.shop.com=http://127.0.0.1:9000`), for tests and staging.
    public var upstreamOverrides: [String: String]
    /// Ports a CONNECT tunnel may reach on an allowed host (HTTPS only, unless told otherwise).
    public var connectPorts: Set<Int> = [443]
    /// Add the body hook to served HTML.
    public var injectHook: Bool
    /// Drop every body that reaches the engine, as WebKit does, so a desktop browser exercises restoration.
    public var emulateBodyLoss: Bool
    /// A folder of bundles and catalog files served as static files (for the updater).
    public var publishFolder: String?
    /// With `publishFolder`: where device reports are appended (`POST /_satchel/reports`, and the report headers of
    /// catalog requests).
    public var reports: ReportLog?
    public var limits: Limits
    public var threads: Int
    /// Log every request through swift-log (`satchel.access`).
    public var accessLog: Bool

    public struct Limits: Sendable {
        /// Request line plus headers; above it, 431.
        public var maxHeaderBytes: Int
        /// Request body; above it, 413.
        public var maxBodyBytes: Int
        /// A connection with no request in progress is closed after this long.
        public var idleTimeout: Duration
        /// A request (head and body) must arrive within this long, against slow clients; else 408.
        public var readTimeout: Duration
        /// Connections beyond this are refused (closed at once).
        public var maxConnections: Int
        /// How long shutdown waits for responses in flight before closing their connections.
        public var shutdownGrace: Duration = .seconds(30)

        public init(maxHeaderBytes: Int = 64 << 10, maxBodyBytes: Int = 64 << 20, idleTimeout: Duration = .seconds(60), readTimeout: Duration = .seconds(30), maxConnections: Int = 1024) {
            self.maxHeaderBytes = maxHeaderBytes
            self.maxBodyBytes = maxBodyBytes
            self.idleTimeout = idleTimeout
            self.readTimeout = readTimeout
            self.maxConnections = maxConnections
        }
    }

    public init(
        bindHost: String = "127.0.0.1", port: Int = 8080, defaultHost: String? = nil, allowedUpstreams: [HostPattern] = [],
        upstreamOverrides: [String: String] = [:], injectHook: Bool = false, emulateBodyLoss: Bool = false,
        publishFolder: String? = nil, limits: Limits = Limits(), threads: Int = System.coreCount, accessLog: Bool = true
    ) {
        self.bindHost = bindHost
        self.port = port
        self.defaultHost = defaultHost
        self.allowedUpstreams = allowedUpstreams
        self.upstreamOverrides = upstreamOverrides
        self.injectHook = injectHook
        self.emulateBodyLoss = emulateBodyLoss
        self.publishFolder = publishFolder
        self.limits = limits
        self.threads = threads
        self.accessLog = accessLog
    }
}
