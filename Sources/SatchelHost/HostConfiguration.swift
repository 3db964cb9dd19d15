import SatchelCore
import SatchelEngine

/// What a host is, as far as request policy goes: the one value each host hands the ``RequestLayer`` (satchel serve
/// builds it from its options, the WebKit adapters from theirs). Every difference between hosts that changes what a
/// page receives is a field here, so a rule is never decided by which host runs it.
public struct HostConfiguration: Sendable {
    /// How the hook reaches the app's documents.
    public enum HookDelivery: Sendable, Equatable {
        /// No hook: every request that may carry a body is refused by the engine (it cannot be restored).
        case none
        /// The web view installs it at document start (both WebKit adapters, ``PageSetup``), with this configuration
        /// (nil fields filled in from the engine: its proof secret, the cookie endpoint, the bridge handler).
        case userScript(HookScript.Configuration)
        /// Written inline into each HTML document a package serves (its pages, its offline page), for clients that
        /// install nothing themselves (a browser in front of satchel serve). Its origins are the hosts the installed
        /// packages claim (under http, https and every custom scheme) and `extraHosts`.
        case inlineInPages(extraHosts: [HostPattern])
    }

    public var hook: HookDelivery
    /// Where `Set-Cookie` goes and what answers the hook's `document.cookie` requests on the custom schemes: the
    /// app's jar (WebKit ignores a scheme handler's `Set-Cookie`, so it is taken out and stored before the page sees
    /// the response). nil: the client keeps its own cookies and `Set-Cookie` passes through (a browser).
    public var cookies: AppCookieJar?
    /// A network redirect of a navigation becomes a page that replaces the location (``NavigationRedirect``):
    /// WebKit follows no redirect a scheme handler answers. False: redirects pass as they are (HTTP clients follow).
    public var redirectsAsPages: Bool
    /// The hook's body store over HTTP (`POST /_satchel/body/<id>`, proven like a restored body): for clients whose
    /// hook cannot reach a script message handler (satchel serve). WebKit hosts take bodies through the handler.
    public var bodyStoreEndpoint: Bool
    /// Request bodies dropped before the engine sees them, as WebKit drops them (`satchel serve
    /// --emulate-body-loss`): how the hook is tested outside WebKit.
    public var dropsRequestBodies: Bool

    public init(
        hook: HookDelivery, cookies: AppCookieJar? = nil, redirectsAsPages: Bool = false, bodyStoreEndpoint: Bool = false,
        dropsRequestBodies: Bool = false
    ) {
        self.hook = hook
        self.cookies = cookies
        self.redirectsAsPages = redirectsAsPages
        self.bodyStoreEndpoint = bodyStoreEndpoint
        self.dropsRequestBodies = dropsRequestBodies
    }

    /// A WebKit adapter's (WebKitGTK, Apple): the hook as a user script, the app's cookie jar, redirects as pages.
    public static func webKit(hook: HookScript.Configuration?, cookies: AppCookieJar?) -> HostConfiguration {
        HostConfiguration(hook: hook.map { .userScript($0) } ?? .none, cookies: cookies, redirectsAsPages: true)
    }

    /// satchel serve's: the browser keeps its cookies and follows redirects; the hook, when injected, goes inline into
    /// package pages and stores large bodies over HTTP.
    public static func server(injectHook: Bool, upstreams: [HostPattern], emulateBodyLoss: Bool) -> HostConfiguration {
        HostConfiguration(
            hook: injectHook ? .inlineInPages(extraHosts: upstreams) : .none, bodyStoreEndpoint: true, dropsRequestBodies: emulateBodyLoss)
    }
}
