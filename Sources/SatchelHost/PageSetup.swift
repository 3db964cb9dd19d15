import SatchelCore
import SatchelEngine

/// What every WebKit adapter installs in each web view for the app's pages, decided once for both (Apple's
/// `SatchelWebViews`, WebKitGTK's `SatchelWebContext`) so they cannot drift: the hook (request bodies, `document.cookie`
/// on the custom schemes, the `window.satchel` bridge) completed with this launch's proof secret, the names of its two
/// script message handlers, and the documents it goes into.
public struct PageSetup: Sendable, Equatable {
    /// The hook's configuration with every default filled in.
    public let hook: HookScript.Configuration
    /// The hook's source, rendered once.
    public let script: String

    /// The bridge's script message handler when the configuration names none.
    public static let defaultBridgeHandler = "satchelBridge"

    /// - Parameter hook: the app's hook configuration (its origins, channels, handler names); nil: no hook, and the
    ///   engine refuses every request that may carry a body.
    public init?(hook: HookScript.Configuration?, engine: ResourceEngine) {
        guard var hook else { return nil }
        // Proofs with the secret the engine checks; document.cookie through the engine's endpoint; the bridge.
        if hook.proofSecret == nil { hook.proofSecret = engine.bodyProofSecret }
        if hook.cookieEndpoint == nil { hook.cookieEndpoint = PageCookies.path }
        if hook.bridgeHandler == nil { hook.bridgeHandler = Self.defaultBridgeHandler }
        // The page's health signals for the judge of a trial; inert in a view whose adapter registers no handler.
        if hook.trialHandler == nil { hook.trialHandler = Self.defaultTrialHandler }
        self.hook = hook
        script = HookScript.render(hook)
    }

    /// The trial signals' script message handler when the configuration names none.
    public static let defaultTrialHandler = "satchelTrial"

    /// The trial signals' script message handler (``TrialJudge``).
    public var trialHandlerName: String { hook.trialHandler ?? Self.defaultTrialHandler }

    /// The body store's script message handler (`HookScript.Configuration.messageHandler`).
    public var bodyHandlerName: String { hook.messageHandler }
    /// The bridge's script message handler.
    public var bridgeHandlerName: String { hook.bridgeHandler ?? Self.defaultBridgeHandler }
    /// The app's origins: the hook runs, and native code calls into a page, only there.
    public var origins: [String] { hook.origins }
    /// Whether a frame of `origin` is one of the app's: the only frames whose script messages the handlers take. WebKit
    /// registers a message handler for every frame of a page, a foreign one inside it (an ad, a payment form)
    /// included; the Apple adapter reads the sending frame's origin from the message and asks this.
    public func admits(_ origin: FrameOrigin) -> Bool {
        hook.origins.contains { $0.lowercased() == origin.serialized }
    }

    /// WebKit's URL patterns for the documents of the app's origins (where a platform can limit a user script to
    /// them); the hook also stays inert on any other origin by itself.
    public var allowList: [String] { hook.origins.map { $0 + "/*" } }
}

/// A frame's security origin as WebKit reports it (`WKSecurityOrigin`: protocol, host, port, the port 0 when it is
/// the scheme's default).
public struct FrameOrigin: Sendable, Equatable, CustomStringConvertible {
    public var scheme: String
    public var host: String
    public var port: Int

    public init(scheme: String, host: String, port: Int) {
        self.scheme = scheme
        self.host = host
        self.port = port
    }

    /// `scheme://host[:port]`, lower-cased, the port left out when it is 0 or the scheme's default (RFC 6454's
    /// serialization, as the hook's origins are written).
    public var serialized: String {
        let scheme = scheme.lowercased()
        let defaultPort = scheme == "https" ? 443 : scheme == "http" ? 80 : 0
        return "\(scheme)://\(host.lowercased())" + (port == 0 || port == defaultPort ? "" : ":\(port)")
    }

    public var description: String { serialized }
}
