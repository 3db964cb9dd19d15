// A stand-in for Apple's WebKit framework, for type-checking Satchel's Apple adapter on Linux: only the declarations
// the adapter uses, with the signatures and actor isolation of Apple's documentation (iOS 17 / macOS 14 SDKs, where
// WebKit's classes and protocols are `@MainActor`). Nothing here runs; every body is a placeholder. Objective-C
// `optional` protocol requirements are modelled as requirements with default implementations.
//
// Foundation on Linux lacks a few Apple-only parts the adapter touches (HTTPCookie's SameSite policy); they are
// declared at the end, as Apple documents them.

@_exported import Foundation
@_exported import FoundationNetworking
@_exported import UIKit

// MARK: Web views

@MainActor
open class WKWebView: UIView {
    public init(frame: CGRect, configuration: WKWebViewConfiguration) {
        self.configuration = configuration
    }

    open var configuration: WKWebViewConfiguration
    /// WKWebView.h: `+ (BOOL)handlesURLScheme:(NSString *)urlScheme` (macOS 10.13, iOS 11.0).
    open class func handlesURLScheme(_ urlScheme: String) -> Bool { false }
    open weak var navigationDelegate: (any WKNavigationDelegate)?
    open weak var uiDelegate: (any WKUIDelegate)?
    open var url: URL? { nil }
    open var estimatedProgress: Double { 0 }
    open var canGoBack: Bool { false }
    open var backForwardList: WKBackForwardList { WKBackForwardList() }

    @discardableResult
    open func goBack() -> WKNavigation? { nil }

    open func takeSnapshot(with snapshotConfiguration: WKSnapshotConfiguration?, completionHandler: @escaping @MainActor @Sendable (UIImage?, (any Error)?) -> Void) {}

    @discardableResult
    open func load(_ request: URLRequest) -> WKNavigation? { nil }

    @discardableResult
    open func loadHTMLString(_ string: String, baseURL: URL?) -> WKNavigation? { nil }

    open func stopLoading() {}

    open func evaluateJavaScript(_ javaScriptString: String, completionHandler: (@MainActor @Sendable (Any?, (any Error)?) -> Void)? = nil) {}

    open func callAsyncJavaScript(_ functionBody: String, arguments: [String: Any] = [:], in frame: WKFrameInfo? = nil, contentWorld: WKContentWorld) async throws -> Any? {
        nil
    }
}

public struct WKAudiovisualMediaTypes: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let audio = WKAudiovisualMediaTypes(rawValue: 1 << 0)
    public static let video = WKAudiovisualMediaTypes(rawValue: 1 << 1)
    public static let all = WKAudiovisualMediaTypes(rawValue: .max)
}

@MainActor
open class WKSnapshotConfiguration: NSObject {}

@MainActor
open class WKBackForwardList: NSObject {
    open var backList: [WKBackForwardListItem] { [] }
}

@MainActor
open class WKBackForwardListItem: NSObject {}

@MainActor
open class WKWebViewConfiguration: NSObject {
    override public init() {}
    open var processPool = WKProcessPool()
    open var websiteDataStore = WKWebsiteDataStore.default()
    open var userContentController = WKUserContentController()
    open var applicationNameForUserAgent: String?
    open var mediaTypesRequiringUserActionForPlayback: WKAudiovisualMediaTypes = .all
    open var allowsInlineMediaPlayback: Bool = false
    open func setURLSchemeHandler(_ urlSchemeHandler: (any WKURLSchemeHandler)?, forURLScheme urlScheme: String) {}
}

@MainActor
open class WKProcessPool: NSObject {
    override public init() {}
}

@MainActor
open class WKNavigation: NSObject {}

@MainActor
open class WKFrameInfo: NSObject {
    open var isMainFrame: Bool { true }
    open var securityOrigin: WKSecurityOrigin { WKSecurityOrigin() }
}

@MainActor
open class WKSecurityOrigin: NSObject {
    open var `protocol`: String { "" }
    open var host: String { "" }
    open var port: Int { 0 }
}

public enum WKNavigationResponsePolicy: Int, Sendable {
    case cancel
    case allow
    case download
}

@MainActor
open class WKNavigationResponse: NSObject {
    open var isForMainFrame: Bool { true }
    open var response: URLResponse { URLResponse(url: URL(fileURLWithPath: "/"), mimeType: nil, expectedContentLength: 0, textEncodingName: nil) }
}

@MainActor
public protocol WKNavigationDelegate: NSObjectProtocol {
    func webView(_ webView: WKWebView, didStartProvisionalNavigation navigation: WKNavigation!)
    func webView(_ webView: WKWebView, didCommit navigation: WKNavigation!)
    func webView(_ webView: WKWebView, didFinish navigation: WKNavigation!)
    func webViewWebContentProcessDidTerminate(_ webView: WKWebView)
    func webView(
        _ webView: WKWebView, decidePolicyFor navigationResponse: WKNavigationResponse,
        decisionHandler: @escaping @MainActor @Sendable (WKNavigationResponsePolicy) -> Void)
}

extension WKNavigationDelegate {
    public func webView(_ webView: WKWebView, didStartProvisionalNavigation navigation: WKNavigation!) {}
    public func webView(_ webView: WKWebView, didCommit navigation: WKNavigation!) {}
    public func webView(_ webView: WKWebView, didFinish navigation: WKNavigation!) {}
    public func webViewWebContentProcessDidTerminate(_ webView: WKWebView) {}
    public func webView(
        _ webView: WKWebView, decidePolicyFor navigationResponse: WKNavigationResponse,
        decisionHandler: @escaping @MainActor @Sendable (WKNavigationResponsePolicy) -> Void
    ) { decisionHandler(.allow) }
}

@MainActor
public protocol WKUIDelegate: NSObjectProtocol {
    func webView(
        _ webView: WKWebView, runJavaScriptAlertPanelWithMessage message: String, initiatedByFrame frame: WKFrameInfo,
        completionHandler: @escaping @MainActor @Sendable () -> Void)
    func webView(
        _ webView: WKWebView, runJavaScriptConfirmPanelWithMessage message: String, initiatedByFrame frame: WKFrameInfo,
        completionHandler: @escaping @MainActor @Sendable (Bool) -> Void)
    func webView(
        _ webView: WKWebView, runJavaScriptTextInputPanelWithPrompt prompt: String, defaultText: String?, initiatedByFrame frame: WKFrameInfo,
        completionHandler: @escaping @MainActor @Sendable (String?) -> Void)
}

extension WKUIDelegate {
    public func webView(
        _ webView: WKWebView, runJavaScriptAlertPanelWithMessage message: String, initiatedByFrame frame: WKFrameInfo,
        completionHandler: @escaping @MainActor @Sendable () -> Void
    ) {}
    public func webView(
        _ webView: WKWebView, runJavaScriptConfirmPanelWithMessage message: String, initiatedByFrame frame: WKFrameInfo,
        completionHandler: @escaping @MainActor @Sendable (Bool) -> Void
    ) {}
    public func webView(
        _ webView: WKWebView, runJavaScriptTextInputPanelWithPrompt prompt: String, defaultText: String?, initiatedByFrame frame: WKFrameInfo,
        completionHandler: @escaping @MainActor @Sendable (String?) -> Void
    ) {}
}

// MARK: Custom schemes

@MainActor
public protocol WKURLSchemeHandler: NSObjectProtocol {
    func webView(_ webView: WKWebView, start urlSchemeTask: any WKURLSchemeTask)
    func webView(_ webView: WKWebView, stop urlSchemeTask: any WKURLSchemeTask)
}

// Not main-actor: WKURLSchemeTask.h carries no WK_SWIFT_UI_ACTOR (webkit-facts.json).
public protocol WKURLSchemeTask: NSObjectProtocol {
    var request: URLRequest { get }
    func didReceive(_ response: URLResponse)
    func didReceive(_ data: Data)
    func didFinish()
    func didFailWithError(_ error: any Error)
}

// MARK: Scripts and messages

@MainActor
open class WKUserContentController: NSObject {
    override public init() {}
    open func addUserScript(_ userScript: WKUserScript) {}
    open func addScriptMessageHandler(_ scriptMessageHandlerWithReply: any WKScriptMessageHandlerWithReply, contentWorld world: WKContentWorld, name: String) {}
    open func add(_ scriptMessageHandler: any WKScriptMessageHandler, contentWorld world: WKContentWorld, name: String) {}
}

public enum WKUserScriptInjectionTime: Int, Sendable {
    case atDocumentStart
    case atDocumentEnd
}

@MainActor
open class WKUserScript: NSObject {
    public init(source: String, injectionTime: WKUserScriptInjectionTime, forMainFrameOnly: Bool) {}
}

@MainActor
open class WKContentWorld: NSObject {
    open class var page: WKContentWorld { WKContentWorld() }
    open class var defaultClient: WKContentWorld { WKContentWorld() }
}

@MainActor
open class WKScriptMessage: NSObject {
    open var body: Any { 0 }
    open var name: String { "" }
    open var frameInfo: WKFrameInfo { WKFrameInfo() }
    open weak var webView: WKWebView? { nil }
}

@MainActor
public protocol WKScriptMessageHandler: NSObjectProtocol {
    func userContentController(_ userContentController: WKUserContentController, didReceive message: WKScriptMessage)
}

@MainActor
public protocol WKScriptMessageHandlerWithReply: NSObjectProtocol {
    func userContentController(
        _ userContentController: WKUserContentController, didReceive message: WKScriptMessage,
        replyHandler: @escaping @MainActor @Sendable (Any?, String?) -> Void)
}

// MARK: Website data and cookies

@MainActor
open class WKWebsiteDataStore: NSObject {
    open class func `default`() -> WKWebsiteDataStore { WKWebsiteDataStore() }
    open class func nonPersistent() -> WKWebsiteDataStore { WKWebsiteDataStore() }
    open var httpCookieStore: WKHTTPCookieStore { WKHTTPCookieStore() }
}

@MainActor
open class WKHTTPCookieStore: NSObject {
    open func getAllCookies(_ completionHandler: @escaping @MainActor @Sendable ([HTTPCookie]) -> Void) {}
    open func setCookie(_ cookie: HTTPCookie, completionHandler: (@MainActor @Sendable () -> Void)? = nil) {}
    open func delete(_ cookie: HTTPCookie, completionHandler: (@MainActor @Sendable () -> Void)? = nil) {}
}

// MARK: Foundation's Apple-only parts

public struct HTTPCookieStringPolicy: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let sameSiteLax = HTTPCookieStringPolicy(rawValue: "lax")
    public static let sameSiteStrict = HTTPCookieStringPolicy(rawValue: "strict")
}

extension HTTPCookiePropertyKey {
    public static let sameSitePolicy = HTTPCookiePropertyKey("SameSite")
}

extension HTTPCookie {
    public var sameSitePolicy: HTTPCookieStringPolicy? { nil }
}
