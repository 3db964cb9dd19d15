import Foundation
import SourceChecks
import Testing

// Every test works on copies in memory: a fixture below, or the repository's stand-in and table read and planted here.

private let table = """
    {"headers": {"WKWebView.h": "c1", "WKURLSchemeTask.h": "c2", "WKNavigationDelegate.h": "c3", "WKNavigation.h": "c4", "WKWebViewConfiguration.h": "c5"},
    "symbols": [
      {"kind": "class", "container": null, "swift": "WKWebView", "mainActor": true, "optional": false, "header": "WKWebView.h", "commit": "c1", "availability": {"macos": "10.10", "ios": "8.0"}},
      {"kind": "property", "container": "WKWebView", "swift": "url", "mainActor": "inherits", "optional": false, "returns": {"type": "NSURL", "nullable": true}, "settable": false, "header": "WKWebView.h", "commit": "c1", "availability": {"macos": "10.10", "ios": "8.0"}},
      {"kind": "property", "container": "WKWebView", "swift": "customUserAgent", "mainActor": "inherits", "optional": false, "returns": {"type": "NSString", "nullable": true}, "settable": true, "header": "WKWebView.h", "commit": "c1", "availability": {"macos": "10.10", "ios": "8.0"}},
      {"kind": "classMethod", "container": "WKWebView", "swift": "handlesURLScheme(_:)", "mainActor": "inherits", "optional": false, "header": "WKWebView.h", "commit": "c1", "availability": {"macos": "10.13", "ios": "11.0"}},
      {"kind": "method", "container": "WKWebView", "swift": "evaluateJavaScript(_:in:in:completionHandler:) [refined]", "mainActor": "inherits", "optional": false, "header": "WKWebView.h", "commit": "c1", "availability": {"macos": "11.0", "ios": "14.0"}},
      {"kind": "protocol", "container": null, "swift": "WKURLSchemeTask", "mainActor": false, "optional": false, "header": "WKURLSchemeTask.h", "commit": "c2", "availability": {"macos": "10.13", "ios": "11.0"}},
      {"kind": "method", "container": "WKURLSchemeTask", "swift": "didFinish()", "mainActor": false, "optional": false, "header": "WKURLSchemeTask.h", "commit": "c2", "availability": {"macos": "10.13", "ios": "11.0"}},
      {"kind": "method", "container": "WKURLSchemeTask", "swift": "didReceive(_:) [Data]", "mainActor": false, "optional": false, "header": "WKURLSchemeTask.h", "commit": "c2", "availability": {"macos": "10.13", "ios": "11.0"}, "uncertain": "the importer's name"},
      {"kind": "protocol", "container": null, "swift": "WKNavigationDelegate", "mainActor": true, "optional": false, "header": "WKNavigationDelegate.h", "commit": "c3", "availability": null},
      {"kind": "method", "container": "WKNavigationDelegate", "swift": "webView(_:didFinish:)", "mainActor": "inherits", "optional": true, "header": "WKNavigationDelegate.h", "commit": "c3"},
      {"kind": "class", "container": null, "swift": "WKNavigation", "mainActor": false, "optional": false, "header": "WKNavigation.h", "commit": "c4", "availability": {"macos": "10.10", "ios": "8.0"}, "uncertain": "only an old version readable"},
      {"kind": "class", "container": null, "swift": "WKWebViewConfiguration", "mainActor": true, "optional": false, "header": "WKWebViewConfiguration.h", "commit": "c5", "availability": {"macos": "10.10", "ios": "8.0"}},
      {"kind": "property", "container": "WKWebViewConfiguration", "swift": "processPool", "mainActor": "inherits", "optional": false, "returns": {"nullable": false}, "settable": true, "header": "WKWebViewConfiguration.h", "commit": "c5", "availability": {"macos": "10.10", "ios": "8.0"}, "deprecated": {"macos": "12.0", "ios": "15.0", "message": "No effect."}},
      {"kind": "class", "container": null, "swift": "UIView", "mainActor": true, "optional": false, "header": null, "unverified": "UIKit has no open headers"},
      {"kind": "property", "container": "UIView", "swift": "window", "mainActor": "inherits", "optional": false, "returns": {"nullable": true}, "settable": false, "header": null, "unverified": "UIKit has no open headers"}
    ],
    "overrides": [
      {"container": null, "swift": "WKNavigation", "skip": ["mainActor"], "why": "the stand-in's @MainActor is the stricter assumption"},
      {"container": "WKURLSchemeTask", "swift": "didReceive(_:) [Data]", "skip": [], "why": "Apple's documentation names it so"}
    ],
    "standInOverlays": [{"container": "WKWebView", "swift": "callAsyncJavaScript(_:)", "why": "the async form is the importer's"}],
    "unverifiedStandIns": [{"framework": "UIKit", "path": "UIKit", "why": "no open headers"}]}
    """

private let agreeing = """
    @MainActor
    @available(macOS 10.10, iOS 8.0, *)
    open class WKWebView: NSObject {
        open var url: URL? { nil }
        open var customUserAgent: String?
        @available(macOS 10.13, iOS 11.0, *)
        open class func handlesURLScheme(_ urlScheme: String) -> Bool { false }
        @available(macOS 11.0, iOS 14.0, *)
        open func evaluateJavaScript(_ script: String, in frame: Int?, in world: Int, completionHandler: (() -> Void)?) {}
        open func callAsyncJavaScript(_ body: String) async throws -> Any? { nil }
        private let plumbing = 0
    }
    @available(macOS 10.13, iOS 11.0, *)
    public protocol WKURLSchemeTask: NSObjectProtocol {
        func didFinish()
        func didReceive(_ data: Data)
    }
    @MainActor
    public protocol WKNavigationDelegate: NSObjectProtocol {
        func webView(_ webView: WKWebView, didFinish navigation: WKNavigation!)
    }
    extension WKNavigationDelegate {
        public func webView(_ webView: WKWebView, didFinish navigation: WKNavigation!) {}
    }
    @MainActor
    @available(macOS 10.10, iOS 8.0, *)
    open class WKNavigation: NSObject {}
    @MainActor
    @available(macOS 10.10, iOS 8.0, *)
    open class WKWebViewConfiguration: NSObject {
        @available(macOS, introduced: 10.10, deprecated: 12.0, message: "No effect.")
        @available(iOS, introduced: 8.0, deprecated: 15.0, message: "No effect.")
        open var processPool: Int = 0
    }
    """

private let agreeingUIKit = """
    @MainActor
    open class UIView: NSObject {
        open var window: AnyObject? { nil }
    }
    """

private func check(_ standIn: String, uiKit: String = agreeingUIKit, table tableText: String = table) throws -> StandInCheck.Report {
    let parsed = try StandInCheck.table(from: Data(tableText.utf8))
    let files = [SourceFile(path: "WebKit.swift", source: standIn), SourceFile(path: "UIKit.swift", source: uiKit)]
    return StandInCheck.compare(StandInCheck.declarations(in: files), table: parsed)
}

@Suite("The WebKit stand-in against the facts read from WebKit's headers")
struct StandInCheckTests {
    @Test("a stand-in that agrees passes: an uncertain fact with an override, overlays and private plumbing are not held against it, and documentation facts are reported as unverified")
    func agrees() throws {
        let report = try check(agreeing)
        #expect(report.mismatches.isEmpty, "\(report.mismatches)")
        #expect(report.checked == 13)
        #expect(report.overridden == 2)
        #expect(report.unverified == [
            "UIKit.swift:1: unverified: UIView (UIKit has no open headers)",
            "UIKit.swift:3: unverified: UIView.window (UIKit has no open headers)",
        ])
    }

    @Test("each kind of disagreement is named, with its file and line", arguments: [
        // Main-actor isolation, of a type and of a member.
        ("@available(macOS 10.13, iOS 11.0, *)\npublic protocol WKURLSchemeTask", "@MainActor\n@available(macOS 10.13, iOS 11.0, *)\npublic protocol WKURLSchemeTask", "WebKit.swift:13: WKURLSchemeTask is @MainActor in the stand-in"),
        ("@MainActor\n@available(macOS 10.10, iOS 8.0, *)\nopen class WKWebView", "@available(macOS 10.10, iOS 8.0, *)\nopen class WKWebView", "WebKit.swift:1: WKWebView is not @MainActor in the stand-in"),
        ("    func didFinish()\n", "    @MainActor func didFinish()\n", "WKURLSchemeTask.didFinish() is @MainActor in the stand-in"),
        // Settability: a readonly property declared settable, and a settable one declared read-only three ways.
        ("open var url: URL? { nil }", "open var url: URL?", "WebKit.swift:4: WKWebView.url is settable in the stand-in; the header declares it `readonly`"),
        ("open var customUserAgent: String?", "open var customUserAgent: String? { nil }", "WKWebView.customUserAgent is read-only in the stand-in"),
        ("open var customUserAgent: String?", "public let customUserAgent: String? = nil", "WKWebView.customUserAgent is read-only in the stand-in"),
        ("open var customUserAgent: String?", "open private(set) var customUserAgent: String?", "WKWebView.customUserAgent is read-only in the stand-in"),
        // Deprecation, with its versions.
        ("    @available(macOS, introduced: 10.10, deprecated: 12.0, message: \"No effect.\")\n    @available(iOS, introduced: 8.0, deprecated: 15.0, message: \"No effect.\")\n", "",
         "WKWebViewConfiguration.processPool is not deprecated in the stand-in; the header deprecates it in macOS 12.0, iOS 15.0"),
        ("deprecated: 15.0", "deprecated: 14.0", "WKWebViewConfiguration.processPool is deprecated in iOS 14.0 in the stand-in, 15.0 in the header"),
        ("    @available(macOS, introduced: 10.10, deprecated: 12.0, message: \"No effect.\")\n    @available(iOS, introduced: 8.0, deprecated: 15.0, message: \"No effect.\")\n",
         "    @available(*, deprecated, message: \"No effect.\")\n", "WKWebViewConfiguration.processPool is deprecated without a version in the stand-in"),
        ("    open var url: URL? { nil }", "    @available(*, deprecated)\n    open var url: URL? { nil }", "WKWebView.url is deprecated in the stand-in; the header does not deprecate it"),
        // Availability: missing (a member takes its type's), another version, and one the header does not state.
        ("    @available(macOS 10.13, iOS 11.0, *)\n    open class func", "    open class func",
         "WKWebView.handlesURLScheme(_:) is available from macOS 10.10, iOS 8.0 in the stand-in (its own `@available` or its type's); the header says macOS 10.13, iOS 11.0"),
        ("@available(macOS 10.13, iOS 11.0, *)\npublic protocol", "@available(macOS 10.13, iOS 12.0, *)\npublic protocol", "WKURLSchemeTask is available from macOS 10.13, iOS 12.0 in the stand-in"),
        ("@MainActor\npublic protocol WKNavigationDelegate", "@MainActor\n@available(macOS 10.10, iOS 8.0, *)\npublic protocol WKNavigationDelegate",
         "WKNavigationDelegate is available from macOS 10.10, iOS 8.0 in the stand-in (its own `@available` or its type's); the header states none"),
        ("@MainActor\n@available(macOS 10.10, iOS 8.0, *)\nopen class WKNavigation:", "@MainActor\nopen class WKNavigation:", "WKNavigation states no availability in the stand-in"),
        // The comparisons the check made before: class members, optionality, @optional requirements, unlisted declarations, type kinds.
        ("open var url: URL? { nil }", "open var url: URL { URL(string: \"x\")! }", "WKWebView.url is not optional in the stand-in"),
        ("open class func handlesURLScheme", "open func handlesURLScheme", "WKWebView.handlesURLScheme(_:) is an instance member"),
        ("extension WKNavigationDelegate {\n    public func webView(_ webView: WKWebView, didFinish navigation: WKNavigation!) {}\n}", "", "is @optional in the header; the stand-in gives it none"),
        ("    func didFinish()\n", "    func didFinish()\n    func didFailWithError(_ error: any Error)\n", "WKURLSchemeTask.didFailWithError(_:), which webkit-facts.json does not list"),
        ("@MainActor\n@available(macOS 10.10, iOS 8.0, *)\nopen class WKWebView: NSObject {", "@MainActor\n@available(macOS 10.10, iOS 8.0, *)\npublic struct WKWebView {", "WKWebView is a struct in the stand-in; the header declares a class"),
        // An override skips only the comparisons it names: the uncertain didReceive(_:) is still held to the rest.
        ("    func didReceive(_ data: Data)", "    @MainActor func didReceive(_ data: Data)", "WKURLSchemeTask.didReceive(_:) is @MainActor in the stand-in"),
    ])
    func mismatches(_ case: (original: String, planted: String, expected: String)) throws {
        let planted = agreeing.replacingOccurrences(of: `case`.original, with: `case`.planted)
        #expect(planted != agreeing, "the plant must change the source")
        let report = try check(planted)
        #expect(report.mismatches.contains { $0.contains(`case`.expected) && $0.hasPrefix("WebKit.swift:") }, "\(report.mismatches)")
    }

    @Test("a stand-in of a framework with no open headers is still compared with its documentation facts")
    func unverifiedStandInDisagrees() throws {
        let report = try check(agreeing, uiKit: agreeingUIKit.replacingOccurrences(of: "open var window: AnyObject? { nil }", with: "open var window: AnyObject?"))
        #expect(report.mismatches == ["UIKit.swift:3: UIView.window is settable in the stand-in; the header declares it `readonly` (`{ get }`)"])
    }

    @Test("the table is held to itself: each problem is named at its line in the table", arguments: [
        // An uncertain fact fails unless an override says why.
        (#"{"container": null, "swift": "WKNavigation", "skip": ["mainActor"], "why": "the stand-in's @MainActor is the stricter assumption"},"#, "",
         #""swift": "WKNavigation","#, "WKNavigation is uncertain (only an old version readable) and no override says why the stand-in may rely on it"),
        (#""why": "the stand-in's @MainActor is the stricter assumption""#, #""why": " ""#, #""swift": "WKNavigation", "skip""#, "the override of WKNavigation gives no reason"),
        (#""why": "Apple's documentation names it so"}"#, #""why": "Apple's documentation names it so"}, {"container": "WKURLSchemeTask", "swift": "didFinish()", "why": "no reason"}"#,
         #""swift": "didFinish()", "why""#, "the override of WKURLSchemeTask.didFinish() accepts a fact that is not uncertain"),
        (#""swift": "UIView", "mainActor": true, "optional": false, "header": null, "unverified": "UIKit has no open headers"}"#, #""swift": "UIView", "mainActor": true, "optional": false, "header": null}"#,
         #""swift": "UIView","#, "UIView has no header behind it and is not marked unverified"),
        (#""WKWebView.h": "c1""#, #""WKWebView.h": "c9""#, #""swift": "WKWebView","#, "WKWebView was read at c1; `headers` says WKWebView.h was read at c9"),
    ])
    func tableProblems(_ case: (original: String, planted: String, lineOf: String, expected: String)) throws {
        let planted = table.replacingOccurrences(of: `case`.original, with: `case`.planted)
        #expect(planted != table, "the plant must change the table")
        let line = try #require(planted.range(of: `case`.lineOf)).lowerBound
        let expectedLine = planted[..<line].filter { $0 == "\n" }.count + 1
        let report = try check(agreeing, table: planted)
        #expect(report.mismatches.contains { $0.hasPrefix("webkit-facts.json:\(expectedLine): \(`case`.expected)") }, "\(report.mismatches)")
    }

    @Test("without its override, the uncertain fact is compared in full: the stand-in's @MainActor then disagrees with it")
    func overrideSkipsWhatItNames() throws {
        let planted = table.replacingOccurrences(of: #""skip": ["mainActor"], "#, with: "")
        let report = try check(agreeing, table: planted)
        #expect(report.mismatches.contains { $0.hasPrefix("WebKit.swift:25: WKNavigation is @MainActor in the stand-in") }, "\(report.mismatches)")
    }

    @Test("a table that is not one is an error, not a pass")
    func malformed() {
        #expect(throws: StandInCheckError.self) { try StandInCheck.table(from: Data("[]".utf8)) }
        #expect(throws: StandInCheckError.self) { try StandInCheck.table(from: Data(#"{"symbols": [{"kind": "class"}]}"#.utf8)) }
        #expect(throws: StandInCheckError.self) { try StandInCheck.table(from: Data(#"{"symbols": [{"kind": "class", "swift": "A", "availability": {"ios": "soon"}}]}"#.utf8)) }
        #expect(throws: StandInCheckError.self) {
            try StandInCheck.table(from: Data(#"{"symbols": [], "overrides": [{"swift": "A", "skip": ["everything"], "why": "x"}]}"#.utf8))
        }
    }
}

/// The repository's stand-ins and table: they agree, and a planted mismatch of each kind in a copy fails.
@Suite("The repository's WebKit stand-in against webkit-facts.json")
struct RepositoryStandInTests {
    private let typecheck = repositoryRoot.appendingPathComponent("integrations/apple-typecheck")

    private func report(webKit transform: (String) -> String = { $0 }, table transformTable: (String) -> String = { $0 }) throws -> StandInCheck.Report {
        let tableText = try String(contentsOf: typecheck.appendingPathComponent("webkit-facts.json"), encoding: .utf8)
        let table = try StandInCheck.table(from: Data(transformTable(tableText).utf8))
        var files = [SourceFile(path: "WebKit.swift", source: transform(try String(contentsOf: typecheck.appendingPathComponent("Sources/WebKit/WebKit.swift"), encoding: .utf8)))]
        for standIn in table.unverifiedStandIns {
            files += try SourceFile.load(under: [typecheck.appendingPathComponent(standIn.path).path])
        }
        return StandInCheck.compare(StandInCheck.declarations(in: files), table: table)
    }

    @Test("the stand-in agrees with the facts, and UIKit's declarations are reported as unverified")
    func agrees() throws {
        let report = try report()
        #expect(report.mismatches.isEmpty, "\(report.mismatches)")
        #expect(report.unverified.contains { $0.contains("unverified: UIView.window") })
    }

    @Test("the facts issue 48 names, each planted back in a copy of the stand-in, fail it", arguments: [
        ("open var configuration: WKWebViewConfiguration { WKWebViewConfiguration() }", "open var configuration = WKWebViewConfiguration()", "WKWebView.configuration is settable in the stand-in"),
        ("@MainActor\npublic protocol WKUIDelegate", "public protocol WKUIDelegate", "WKUIDelegate is not @MainActor in the stand-in"),
        ("    @available(iOS, introduced: 8.0, deprecated: 15.0", "    @available(iOS, introduced: 8.0, deprecated: 16.0", "WKWebViewConfiguration.processPool is deprecated in iOS 16.0 in the stand-in, 15.0 in the header"),
        ("public protocol WKURLSchemeTask: NSObjectProtocol {", "@MainActor\npublic protocol WKURLSchemeTask: NSObjectProtocol {", "WKURLSchemeTask is @MainActor in the stand-in"),
        ("    @available(macOS 10.13, iOS 11.0, *)\n    open class func handlesURLScheme", "    open class func handlesURLScheme", "WKWebView.handlesURLScheme(_:) is available from macOS 10.10, iOS 8.0 in the stand-in"),
    ])
    func plantedMismatches(_ case: (original: String, planted: String, expected: String)) throws {
        var changed = false
        let report = try report(webKit: { source in
            let planted = source.replacingOccurrences(of: `case`.original, with: `case`.planted)
            changed = planted != source
            return planted
        })
        #expect(changed, "the plant must change the stand-in")
        #expect(report.mismatches.contains { $0.contains(`case`.expected) }, "\(report.mismatches)")
    }

    @Test("an uncertain fact whose override is taken out of the table fails it")
    func uncertainWithoutOverride() throws {
        let report = try report(table: { text in
            guard var root = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                  let overrides = root["overrides"] as? [[String: Any]] else { return text }
            root["overrides"] = overrides.filter { $0["swift"] as? String != "WKUserScript" }
            #expect((root["overrides"] as? [Any])?.count == overrides.count - 1, "the table must have had an override for WKUserScript")
            return (try? JSONSerialization.data(withJSONObject: root)).map { String(decoding: $0, as: UTF8.self) } ?? text
        })
        #expect(report.mismatches.contains { $0.contains("WKUserScript is uncertain") && $0.contains("no override says why") }, "\(report.mismatches)")
    }
}
