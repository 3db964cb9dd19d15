import SatchelCore
import Testing

/// One classification of a request, read by every rule that asks "is this a navigation?"; each rule's own table.
@Suite("What a request says about itself (RequestKind), per rule that reads it")
struct RequestKindTests {
    struct Row: CustomTestStringConvertible, Sendable {
        let label: String
        let headers: [(String, String)]
        let expected: Bool
        var testDescription: String { label }
    }

    static func kind(_ row: Row) -> RequestKind {
        var headers = HTTPHeaders()
        for (name, value) in row.headers { headers.add(name, value) }
        return RequestKind(headers)
    }

    @Test("cookies (RFC 6265bis): a top-level navigation is mode navigate and destination document", arguments: [
        Row(label: "a link followed in the page", headers: [("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Dest", "document")], expected: true),
        Row(label: "upper-case values", headers: [("Sec-Fetch-Mode", "NAVIGATE"), ("Sec-Fetch-Dest", "Document")], expected: true),
        Row(label: "a frame's navigation is not top-level", headers: [("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Dest", "iframe")], expected: false),
        Row(label: "fetch() of a document", headers: [("Sec-Fetch-Mode", "cors"), ("Sec-Fetch-Dest", "document")], expected: false),
        Row(label: "Accept text/html alone says nothing of the context", headers: [("Accept", "text/html")], expected: false),
        Row(label: "nothing sent", headers: [], expected: false),
    ])
    func topLevelNavigation(_ row: Row) {
        #expect(Self.kind(row).isTopLevelNavigation == row.expected)
    }

    @Test("the offline page and the redirect page: a navigation, or a request that accepts HTML", arguments: [
        Row(label: "navigation", headers: [("Sec-Fetch-Mode", "navigate")], expected: true),
        Row(label: "WebKit's scheme handler: no Sec-Fetch, Accept with HTML", headers: [("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")], expected: true),
        Row(label: "fetch() of JSON", headers: [("Sec-Fetch-Mode", "cors"), ("Accept", "application/json")], expected: false),
        Row(label: "an image", headers: [("Accept", "image/avif,image/webp,*/*")], expected: false),
        Row(label: "nothing sent", headers: [], expected: false),
    ])
    func wantsPage(_ row: Row) {
        #expect(Self.kind(row).wantsPage == row.expected)
    }

    @Test("the hook: documents and frames, or a request that did not say; never HTML fetched as data", arguments: [
        Row(label: "document", headers: [("Sec-Fetch-Dest", "document")], expected: true),
        Row(label: "iframe", headers: [("Sec-Fetch-Dest", "iframe")], expected: true),
        Row(label: "frame", headers: [("Sec-Fetch-Dest", "FRAME")], expected: true),
        Row(label: "no Sec-Fetch-Dest (older engines, WebKit's scheme handlers)", headers: [], expected: true),
        Row(label: "fetch() of an HTML fragment", headers: [("Sec-Fetch-Dest", "empty"), ("Accept", "text/html")], expected: false),
        Row(label: "a script", headers: [("Sec-Fetch-Dest", "script")], expected: false),
    ])
    func loadsDocument(_ row: Row) {
        #expect(Self.kind(row).loadsDocument == row.expected)
    }

    @Test("every field a rule reads is a RequestField; the ones that can change a package answer key the server's reuse")
    func fields() {
        let changing = Set(RequestField.allCases.filter(\.changesPackageAnswer).map(\.rawValue))
        #expect(changing.isSuperset(of: ["Range", "If-Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since", "Origin", "X-Satchel-Cache"]))
        #expect(changing.isDisjoint(with: ["Accept", "Sec-Fetch-Mode", "Sec-Fetch-Dest", "Sec-Fetch-Site"]))
    }
}
