// A stand-in for Apple's WebKit framework, for type-checking Satchel's Apple adapter on Linux: only the declarations
// the adapter uses, with the signatures, actor isolation, settability, availability and deprecations of WebKit's
// headers (webkit-facts.json, checked by `source-check standin`). Nothing here runs; every body is a placeholder.
// Objective-C `optional` protocol requirements are modelled as requirements with default implementations. A member
// states `@available` only where it differs from its type's; on Linux these attributes change nothing, the check
// compares them.
//
// Foundation on Linux lacks a few Apple-only parts the adapter touches (HTTPCookie's SameSite policy); they are
// declared at the end, as Apple documents them.

@_exported import Foundation
@_exported import FoundationNetworking
@_exported import UIKit

// MARK: Web views

@MainActor
@available(macOS 10.10, iOS 8.0, *)
open class WKWebView: UIView {
    public init(frame: CGRect, configuration: WKWebViewConfiguration) {}

    /// `readonly, copy`: a copy of the configuration the view was made with; changing it changes nothing.
    open var configuration: WKWebViewConfiguration { WKWebViewConfiguration() }
    /// WKWebView.h: `+ (BOOL)handlesURLScheme:(NSString *)urlScheme` (macOS 10.13, iOS 11.0).
    @available(macOS 10.13, iOS 11.0, *)
    open class func handlesURLScheme(_ urlScheme: String) -> Bool { false }
    open weak var navigationDelegate: (any WKNavigationDelegate)?
    open weak var uiDelegate: (any WKUIDelegate)?
    open var url: URL? { nil }
    open var estimatedProgress: Double { 0 }
    open var canGoBack: Bool { false }
    open var backForwardList: WKBackForwardList { WKBackForwardList() }

    @discardableResult
    open func goBack() -> WKNavigation? { nil }

    @available(macOS 10.13, iOS 11.0, *)
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

@available(macOS 10.12, iOS 10.0, *)
public struct WKAudiovisualMediaTypes: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let audio = WKAudiovisualMediaTypes(rawValue: 1 << 0)
    public static let video = WKAudiovisualMediaTypes(rawValue: 1 << 1)
    public static let all = WKAudiovisualMediaTypes(rawValue: .max)
}

@MainActor
@available(macOS 10.13, iOS 11.0, *)
open class WKSnapshotConfiguration: NSObject {}

@MainActor
@available(macOS 10.10, iOS 8.0, *)
open class WKBackForwardList: NSObject {
    open var backList: [WKBackForwardListItem] { [] }
}

@MainActor
@available(macOS 10.10, iOS 8.0, *)
open class WKBackForwardListItem: NSObject {}

@MainActor
@available(macOS 10.10, iOS 8.0, *)
open class WKWebViewConfiguration: NSObject {
    override public init() {}
    @available(macOS, introduced: 10.10, deprecated: 12.0, message: "Creating and using multiple instances of WKProcessPool no longer has any effect.")
    @available(iOS, introduced: 8.0, deprecated: 15.0, message: "Creating and using multiple instances of WKProcessPool no longer has any effect.")
    open var processPool = WKProcessPool()
    @available(macOS 10.11, iOS 9.0, *)
    open var websiteDataStore = WKWebsiteDataStore.default()
    open var userContentController = WKUserContentController()
    @available(macOS 10.11, iOS 9.0, *)
    open var applicationNameForUserAgent: String?
    @available(macOS 10.12, iOS 10.0, *)
    open var mediaTypesRequiringUserActionForPlayback: WKAudiovisualMediaTypes = .all
    /// iOS only (`#if TARGET_OS_IPHONE` in the header).
    @available(macOS, unavailable)
    open var allowsInlineMediaPlayback: Bool = false
    @available(macOS 10.13, iOS 11.0, *)
    open func setURLSchemeHandler(_ urlSchemeHandler: (any WKURLSchemeHandler)?, forURLScheme urlScheme: String) {}
}

@MainActor
@available(macOS 10.10, iOS 8.0, *)
open class WKProcessPool: NSObject {
    override public init() {}
}

@MainActor
@available(macOS 10.10, iOS 8.0, *)
open class WKNavigation: NSObject {}

@MainActor
@available(macOS 10.10, iOS 8.0, *)
open class WKFrameInfo: NSObject {
    open var isMainFrame: Bool { true }
    @available(macOS 10.11, iOS 9.0, *)
    open var securityOrigin: WKSecurityOrigin { WKSecurityOrigin() }
}

@MainActor
@available(macOS 10.11, iOS 9.0, *)
open class WKSecurityOrigin: NSObject {
    open var `protocol`: String { "" }
    open var host: String { "" }
    open var port: Int { 0 }
}

@available(macOS 10.10, iOS 8.0, *)
public enum WKNavigationResponsePolicy: Int, Sendable {
    case cancel
    case allow
    case download
}

@MainActor
@available(macOS 10.10, iOS 8.0, *)
open class WKNavigationResponse: NSObject {
    open var isForMainFrame: Bool { true }
    open var response: URLResponse { URLResponse(url: URL(fileURLWithPath: "/"), mimeType: nil, expectedContentLength: 0, textEncodingName: nil) }
}

@MainActor
public protocol WKNavigationDelegate: NSObjectProtocol {
    func webView(_ webView: WKWebView, didStartProvisionalNavigation navigation: WKNavigation!)
    func webView(_ webView: WKWebView, didFailProvisionalNavigation navigation: WKNavigation!, withError error: any Error)
    func webView(_ webView: WKWebView, didCommit navigation: WKNavigation!)
    func webView(_ webView: WKWebView, didFinish navigation: WKNavigation!)
    func webView(_ webView: WKWebView, didFail navigation: WKNavigation!, withError error: any Error)
    @available(macOS 10.11, iOS 9.0, *)
    func webViewWebContentProcessDidTerminate(_ webView: WKWebView)
    func webView(
        _ webView: WKWebView, decidePolicyFor navigationResponse: WKNavigationResponse,
        decisionHandler: @escaping @MainActor @Sendable (WKNavigationResponsePolicy) -> Void)
}

extension WKNavigationDelegate {
    public func webView(_ webView: WKWebView, didStartProvisionalNavigation navigation: WKNavigation!) {}
    public func webView(_ webView: WKWebView, didFailProvisionalNavigation navigation: WKNavigation!, withError error: any Error) {}
    public func webView(_ webView: WKWebView, didCommit navigation: WKNavigation!) {}
    public func webView(_ webView: WKWebView, didFinish navigation: WKNavigation!) {}
    public func webView(_ webView: WKWebView, didFail navigation: WKNavigation!, withError error: any Error) {}
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
@available(macOS 10.13, iOS 11.0, *)
public protocol WKURLSchemeHandler: NSObjectProtocol {
    func webView(_ webView: WKWebView, start urlSchemeTask: any WKURLSchemeTask)
    func webView(_ webView: WKWebView, stop urlSchemeTask: any WKURLSchemeTask)
}

// Not main-actor: WKURLSchemeTask.h carries no WK_SWIFT_UI_ACTOR (webkit-facts.json).
@available(macOS 10.13, iOS 11.0, *)
public protocol WKURLSchemeTask: NSObjectProtocol {
    var request: URLRequest { get }
    func didReceive(_ response: URLResponse)
    func didReceive(_ data: Data)
    func didFinish()
    func didFailWithError(_ error: any Error)
}

// MARK: Scripts and messages

@MainActor
@available(macOS 10.10, iOS 8.0, *)
open class WKUserContentController: NSObject {
    override public init() {}
    open func addUserScript(_ userScript: WKUserScript) {}
    @available(macOS 11.0, iOS 14.0, *)
    open func addScriptMessageHandler(_ scriptMessageHandlerWithReply: any WKScriptMessageHandlerWithReply, contentWorld world: WKContentWorld, name: String) {}
    @available(macOS 11.0, iOS 14.0, *)
    open func add(_ scriptMessageHandler: any WKScriptMessageHandler, contentWorld world: WKContentWorld, name: String) {}
}

@available(macOS 10.10, iOS 8.0, *)
public enum WKUserScriptInjectionTime: Int, Sendable {
    case atDocumentStart
    case atDocumentEnd
}

@MainActor
@available(macOS 10.10, iOS 8.0, *)
open class WKUserScript: NSObject {
    public init(source: String, injectionTime: WKUserScriptInjectionTime, forMainFrameOnly: Bool) {}
}

@MainActor
@available(macOS 11.0, iOS 14.0, *)
open class WKContentWorld: NSObject {
    open class var page: WKContentWorld { WKContentWorld() }
    open class var defaultClient: WKContentWorld { WKContentWorld() }
}

@MainActor
@available(macOS 10.10, iOS 8.0, *)
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
    @available(macOS 11.0, iOS 14.0, *)
    func userContentController(
        _ userContentController: WKUserContentController, didReceive message: WKScriptMessage,
        replyHandler: @escaping @MainActor @Sendable (Any?, String?) -> Void)
}

// MARK: Website data and cookies

@MainActor
@available(macOS 10.11, iOS 9.0, *)
open class WKWebsiteDataStore: NSObject {
    open class func `default`() -> WKWebsiteDataStore { WKWebsiteDataStore() }
    open class func nonPersistent() -> WKWebsiteDataStore { WKWebsiteDataStore() }
    @available(macOS 10.13, iOS 11.0, *)
    open var httpCookieStore: WKHTTPCookieStore { WKHTTPCookieStore() }
}

@MainActor
@available(macOS 10.13, iOS 11.0, *)
public protocol WKHTTPCookieStoreObserver: NSObjectProtocol {
    func cookiesDidChange(in cookieStore: WKHTTPCookieStore)
}

// @optional in the header: a default implementation stands for it.
extension WKHTTPCookieStoreObserver {
    public func cookiesDidChange(in cookieStore: WKHTTPCookieStore) {}
}

@MainActor
@available(macOS 10.13, iOS 11.0, *)
open class WKHTTPCookieStore: NSObject {
    open func getAllCookies(_ completionHandler: @escaping @MainActor @Sendable ([HTTPCookie]) -> Void) {}
    open func setCookie(_ cookie: HTTPCookie, completionHandler: (@MainActor @Sendable () -> Void)? = nil) {}
    open func delete(_ cookie: HTTPCookie, completionHandler: (@MainActor @Sendable () -> Void)? = nil) {}
    /// The store does not retain `observer` (WKHTTPCookieStore.h): its caller keeps it, and removes it.
    open func add(_ observer: any WKHTTPCookieStoreObserver) {}
    open func remove(_ observer: any WKHTTPCookieStoreObserver) {}
}

// MARK: Foundation's Apple-only parts

@available(macOS 10.0, iOS 2.0, *)
public struct HTTPCookieStringPolicy: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    @available(macOS 10.15, iOS 13.0, *)
    public static let sameSiteLax = HTTPCookieStringPolicy(rawValue: "lax")
    @available(macOS 10.15, iOS 13.0, *)
    public static let sameSiteStrict = HTTPCookieStringPolicy(rawValue: "strict")
}

extension HTTPCookiePropertyKey {
    @available(macOS 10.15, iOS 13.0, *)
    public static let sameSitePolicy = HTTPCookiePropertyKey("SameSite")
}

extension HTTPCookie {
    @available(macOS 10.15, iOS 13.0, *)
    public var sameSitePolicy: HTTPCookieStringPolicy? { nil }
}
