import Foundation
import SourceChecks
import Testing

private let table = """
    {"symbols": [
      {"kind": "class", "container": null, "swift": "WKWebView", "mainActor": true, "optional": false},
      {"kind": "property", "container": "WKWebView", "swift": "url", "mainActor": "inherits", "optional": false, "returns": {"type": "NSURL", "nullable": true}},
      {"kind": "classMethod", "container": "WKWebView", "swift": "handlesURLScheme(_:)", "mainActor": "inherits", "optional": false},
      {"kind": "protocol", "container": null, "swift": "WKURLSchemeTask", "mainActor": false, "optional": false},
      {"kind": "method", "container": "WKURLSchemeTask", "swift": "didFinish()", "mainActor": false, "optional": false},
      {"kind": "protocol", "container": null, "swift": "WKNavigationDelegate", "mainActor": true, "optional": false},
      {"kind": "method", "container": "WKNavigationDelegate", "swift": "webView(_:didFinish:)", "mainActor": "inherits", "optional": true},
      {"kind": "class", "container": null, "swift": "WKNavigation", "mainActor": false, "optional": false, "uncertain": "no annotation seen"},
      {"kind": "method", "container": "WKWebView", "swift": "evaluateJavaScript(_:in:in:completionHandler:) [refined]", "mainActor": "inherits", "optional": false}
    ],
    "standInOverlays": [{"container": "WKWebView", "swift": "callAsyncJavaScript(_:)", "why": "the async form is the importer's"}]}
    """

private let agreeing = """
    @MainActor
    open class WKWebView: NSObject {
        open var url: URL? { nil }
        open class func handlesURLScheme(_ urlScheme: String) -> Bool { false }
        open func evaluateJavaScript(_ script: String, in frame: Int?, in world: Int, completionHandler: (() -> Void)?) {}
        open func callAsyncJavaScript(_ body: String) async throws -> Any? { nil }
    }
    public protocol WKURLSchemeTask: NSObjectProtocol {
        func didFinish()
    }
    @MainActor
    public protocol WKNavigationDelegate: NSObjectProtocol {
        func webView(_ webView: WKWebView, didFinish navigation: WKNavigation!)
    }
    extension WKNavigationDelegate {
        public func webView(_ webView: WKWebView, didFinish navigation: WKNavigation!) {}
    }
    @MainActor
    open class WKNavigation: NSObject {}
    open class UIView: NSObject { open var window: AnyObject? }
    """

private func check(_ standIn: String) throws -> StandInCheck.Report {
    let (facts, overlays) = try StandInCheck.facts(from: Data(table.utf8))
    return StandInCheck.compare(StandInCheck.declarations(in: [SourceFile(path: "WebKit.swift", source: standIn)]), facts: facts, overlays: overlays)
}

@Suite("The WebKit stand-in against the facts read from WebKit's headers")
struct StandInCheckTests {
    @Test("a stand-in that agrees passes (uncertain facts, overlays and types outside the table are not held against it)")
    func agrees() throws {
        let report = try check(agreeing)
        #expect(report.mismatches.isEmpty, "\(report.mismatches)")
        #expect(report.checked == 9)
    }

    @Test("each kind of disagreement is named, with its line", arguments: [
        ("public protocol WKURLSchemeTask", "@MainActor public protocol WKURLSchemeTask", "WKURLSchemeTask is @MainActor in the stand-in"),
        ("@MainActor\nopen class WKWebView", "open class WKWebView", "WKWebView is not @MainActor in the stand-in"),
        ("open var url: URL? { nil }", "open var url: URL { URL(string: \"x\")! }", "WKWebView.url is not optional in the stand-in"),
        ("open class func handlesURLScheme", "open func handlesURLScheme", "WKWebView.handlesURLScheme(_:) is an instance member"),
        ("extension WKNavigationDelegate {\n    public func webView(_ webView: WKWebView, didFinish navigation: WKNavigation!) {}\n}", "", "is @optional in the header; the stand-in gives it none"),
        ("    func didFinish()\n}", "    func didFinish()\n    func didReceive(_ data: Data)\n}", "WKURLSchemeTask.didReceive(_:), which webkit-facts.json does not list"),
        ("    func didFinish()\n}", "    @MainActor func didFinish()\n}", "WKURLSchemeTask.didFinish() is @MainActor in the stand-in"),
        ("@MainActor\nopen class WKWebView: NSObject {", "@MainActor\npublic struct WKWebView {", "WKWebView is a struct in the stand-in; the header declares a class"),
    ])
    func mismatches(_ case: (original: String, planted: String, expected: String)) throws {
        let planted = agreeing.replacingOccurrences(of: `case`.original, with: `case`.planted)
        #expect(planted != agreeing, "the plant must change the source")
        let report = try check(planted)
        #expect(report.mismatches.contains { $0.contains(`case`.expected) && $0.hasPrefix("WebKit.swift:") }, "\(report.mismatches)")
    }

    @Test("a table that is not one is an error, not a pass")
    func malformed() {
        #expect(throws: StandInCheckError.self) { try StandInCheck.facts(from: Data("[]".utf8)) }
        #expect(throws: StandInCheckError.self) { try StandInCheck.facts(from: Data(#"{"symbols": [{"kind": "class"}]}"#.utf8)) }
    }
}
