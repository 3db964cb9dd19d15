import Testing
@testable import SatchelCore

@Suite("Range requests: expected values from RFC 9110 §14")
struct RangeRequestTests {
    @Test("ranges resolve against a 10,000-byte representation as RFC 9110 §14.1.2's examples say", arguments: [
        ("bytes=0-499", [0...499]),
        ("bytes=500-999", [500...999]),
        ("bytes=-500", [9500...9999]),
        ("bytes=9500-", [9500...9999]),
        ("bytes=0-0,-1", [0...0, 9999...9999]),
        ("bytes= 0-499", [0...499]),
        ("bytes=0-499, 500-999", [0...499, 500...999]),
        ("bytes=0-", [0...9999]),
        ("bytes=9999-", [9999...9999]),
        ("bytes=0-99999", [0...9999]),
        ("bytes=-99999", [0...9999]),
        ("BYTES=1-2", [1...2]),
        ("bytes=0-1,,", [0...1]),
    ] as [(String, [ClosedRange<Int64>])])
    func rfcExamples(_ header: String, _ expected: [ClosedRange<Int64>]) throws {
        let request = try #require(RangeRequest.parse(header))
        #expect(request.resolve(against: 10_000) == expected)
    }

    @Test("where Workbox's arithmetic is wrong, RFC 9110's holds (256-byte body)")
    func workboxCases() throws {
        #expect(try #require(RangeRequest.parse("bytes=300-")).resolve(against: 256).isEmpty)  // 416, not 206 300-255
        #expect(try #require(RangeRequest.parse("bytes=0-300")).resolve(against: 256) == [0...255])  // clamped, not 416
        #expect(try #require(RangeRequest.parse("bytes=-300")).resolve(against: 256) == [0...255])  // whole body, not 416
    }

    @Test("unsatisfiable ranges resolve to nothing (416)", arguments: ["bytes=10000-", "bytes=10000-20000", "bytes=-0", "bytes=20000-,30000-"])
    func unsatisfiable(_ header: String) throws {
        #expect(try #require(RangeRequest.parse(header)).resolve(against: 10_000).isEmpty)
    }

    @Test("nothing is satisfiable in an empty representation")
    func empty() throws {
        #expect(try #require(RangeRequest.parse("bytes=0-")).resolve(against: 0).isEmpty)
        #expect(try #require(RangeRequest.parse("bytes=-5")).resolve(against: 0).isEmpty)
    }

    @Test("invalid syntax is ignored (nil), so the whole body is sent", arguments: [
        "bytes=5-1", "items=0-1", "bytes=", "bytes=a-b", "bytes=--1", "bytes=1", "0-1", "bytes=-", "bytes=1-2-3",
        "bytes=0x1-2", "bytes=-1-2", "bytes=99999999999999999999-",
    ])
    func invalid(_ header: String) {
        #expect(RangeRequest.parse(header) == nil)
    }
}

@Suite("Entity tags and conditions")
struct EntityTagTests {
    let etag = EntityTag.strong(sha256: "abc")

    @Test("If-None-Match uses the weak comparison and accepts lists and *")
    func ifNoneMatch() {
        #expect(etag == "\"abc\"")
        #expect(EntityTag.noneMatchHits("\"abc\"", etag: etag))
        #expect(EntityTag.noneMatchHits("W/\"abc\"", etag: etag))
        #expect(EntityTag.noneMatchHits("\"x\", \"abc\"", etag: etag))
        #expect(EntityTag.noneMatchHits("*", etag: etag))
        #expect(EntityTag.noneMatchHits("\"a,b\", \"abc\"", etag: etag))
        #expect(!EntityTag.noneMatchHits("\"abcd\"", etag: etag))
        #expect(!EntityTag.noneMatchHits("abc", etag: etag))
    }

    @Test("If-Range needs a strong match; weak tags and dates never match")
    func ifRange() {
        #expect(EntityTag.ifRangeAllowsRange("\"abc\"", etag: etag))
        #expect(!EntityTag.ifRangeAllowsRange("W/\"abc\"", etag: etag))
        #expect(!EntityTag.ifRangeAllowsRange("\"other\"", etag: etag))
        #expect(!EntityTag.ifRangeAllowsRange("Wed, 21 Oct 2015 07:28:00 GMT", etag: etag))
    }
}

@Suite("URLs and URL paths")
struct URLPathTests {
    @Test("absolute URLs split into scheme, host, port, raw path and query", arguments: [
        ("satchel://m.shop.com/app/index.html?x=1#top", "satchel", "m.shop.com", nil, "/app/index.html", "x=1"),
        ("HTTPS://M.Shop.COM:8443/A%20B", "https", "m.shop.com", 8443, "/A%20B", nil),
        ("http://user:pw@host.example/x", "http", "host.example", nil, "/x", nil),
        ("https://host.example", "https", "host.example", nil, "/", nil),
        ("https://host.example?q", "https", "host.example", nil, "/", "q"),
        ("https://host.example#frag", "https", "host.example", nil, "/", nil),
        ("http://[::1]:8080/a", "http", "[::1]", 8080, "/a", nil),
    ] as [(String, String, String, Int?, String, String?)])
    func parse(_ text: String, _ scheme: String, _ host: String, _ port: Int?, _ path: String, _ query: String?) throws {
        let url = try #require(RequestURL(text))
        #expect(url.scheme == scheme)
        #expect(url.host == host)
        #expect(url.port == port)
        #expect(url.rawPath == path)
        #expect(url.query == query)
    }

    @Test("relative or malformed URLs are refused", arguments: ["/index.html", "index.html", "https:/x", "://x", "https://", "https://h:99999/", "ht tp://x/"])
    func refuse(_ text: String) {
        #expect(RequestURL(text) == nil)
    }

    /// Raw path -> the package path it names under prefix "/", or nil when it must be refused.
    static let variants: [(String, String?)] = [
        ("/index.html", "index.html"),
        ("/a%20b.html", "a b.html"),
        ("/caf%C3%A9.html", "café.html"),
        ("/cafe%CC%81.html", "café.html"),  // NFD in the URL, NFC in the package
        ("/dir/", "dir/index.html"),
        ("/dir/sub/", "dir/sub/index.html"),
        ("/%E5%90%8D%E5%89%8D.html", "名前.html"),
        ("/a+b.html", "a+b.html"),
        ("/100%25.html", "100%.html"),
        ("/%41.html", "A.html"),
        ("/.well-known/x.json", ".well-known/x.json"),
        ("/a..b", "a..b"),
        ("/..", nil),
        ("/../etc/passwd", nil),
        ("/a/../../etc/passwd", nil),
        ("/a/..", nil),
        ("/./index.html", nil),
        ("/a/./b", nil),
        ("/%2e%2e/etc/passwd", nil),
        ("/%2E%2E/etc/passwd", nil),
        ("/.%2e/x", nil),
        ("/%2e./x", nil),
        ("/a/%2e%2e/%2e%2e/x", nil),
        ("/%2e", nil),
        ("/a/%2e/b", nil),
        ("/..%2fetc%2fpasswd", nil),
        ("/%2fetc/passwd", nil),
        ("/a%2Fb", nil),
        ("/a%2fb", nil),
        ("/..%5c..%5cwindows", nil),
        ("/a%5Cb", nil),
        ("/a\\b", nil),
        ("/..\\..\\x", nil),
        ("/a%00.html", nil),
        ("/a%00", nil),
        ("/%00", nil),
        ("/%c0%ae%c0%ae/x", nil),  // overlong "."
        ("/%c0%af", nil),  // overlong "/"
        ("/%e0%80%ae/x", nil),  // 3-byte overlong "."
        ("/%ff", nil),
        ("/%c3", nil),  // truncated UTF-8
        ("/%", nil),
        ("/%4", nil),
        ("/%zz", nil),
        ("/%%32%65", nil),
        ("/%252e%252e/x", "%2e%2e/x"),  // decoded once only: a literal file name, no traversal
        ("//etc/passwd", nil),
        ("/a//b", nil),
        ("/a/b//", nil),
        ("/%0a.html", nil),
        ("/%09x", nil),
        ("/%7F", nil),
        ("/" + String(repeating: "a", count: 256), nil),
        ("/%2e%2e%2f%2e%2e%2fetc", nil),
        ("/....//", nil),
        ("/.../x", ".../x"),
        ("/a/.../b", "a/.../b"),
    ]

    @Test("traversal and encoding variants map to a safe package path or are refused", arguments: variants)
    func variant(_ raw: String, _ expected: String?) {
        let result = try? URLPath.filePath(forDecoded: URLPath.decode(raw), under: "/")
        #expect(result?.value == expected, "\(raw)")
        if expected == nil { #expect(result == nil, "\(raw) must be refused") }
    }

    @Test("the prefix is stripped, and the prefix alone names the entry")
    func prefixes() throws {
        #expect(try URLPath.filePath(forDecoded: "/app/index.html", under: "/app/")?.value == "index.html")
        #expect(try URLPath.filePath(forDecoded: "/app/", under: "/app/") == nil)
        #expect(try URLPath.filePath(forDecoded: "/app", under: "/app/") == nil)
        #expect(throws: URLPath.Refusal.self) { try URLPath.filePath(forDecoded: "/other/x", under: "/app/") }
    }
}

@Suite("Scope index and routes")
struct ScopeIndexTests {
    func scope(_ hosts: [String], _ prefix: String) throws -> Scope {
        try Scope(hosts: hosts.map { try HostPattern($0) }, pathPrefix: PathPrefix(prefix))
    }

    @Test("the longest prefix wins, across packages, and exact hosts come with wildcards")
    func longestPrefix() throws {
        let index = ScopeIndex([
            (scope: try scope(["m.shop.com"], "/"), value: "root"),
            (scope: try scope(["m.shop.com"], "/app/"), value: "app"),
            (scope: try scope(["m.shop.com"], "/app/admin/"), value: "admin"),
            (scope: try scope(["*.shop.com"], "/cdn/"), value: "cdn"),
        ])
        #expect(index.match(host: "m.shop.com", path: "/x.html")?.value == "root")
        #expect(index.match(host: "m.shop.com", path: "/app/x.html")?.value == "app")
        #expect(index.match(host: "m.shop.com", path: "/app")?.value == "app")
        #expect(index.match(host: "m.shop.com", path: "/app/admin/x")?.value == "admin")
        #expect(index.match(host: "m.shop.com", path: "/app/administrator")?.value == "app")
        #expect(index.match(host: "m.shop.com", path: "/cdn/a.js")?.value == "cdn")
        #expect(index.match(host: "img.shop.com", path: "/cdn/a.js")?.value == "cdn")
        #expect(index.match(host: "img.shop.com", path: "/x") == nil)
        #expect(index.match(host: "a.b.shop.com", path: "/cdn/a.js") == nil)
        #expect(index.match(host: "shop.com", path: "/") == nil)
        #expect(!index.claims(host: "other.com"))
    }

    @Test("routes match at segment boundaries, longest first")
    func routes() throws {
        let manifest = try Manifest(
            id: PackageID("a"), version: SemanticVersion("1.0.0"), createdAt: Timestamp(secondsSinceEpoch: 0),
            scope: scope(["a.example"], "/"),
            routes: [Route(prefix: "/api", strategy: .networkFirst), Route(prefix: "/api/static/", strategy: .offlineOnly)],
            files: [FileRecord(path: SafePath(validating: "index.html"), size: 0, sha256: String(repeating: "0", count: 64), mime: "text/html")])
        #expect(manifest.route(forPath: "/api")?.strategy == .networkFirst)
        #expect(manifest.route(forPath: "/api/x")?.strategy == .networkFirst)
        #expect(manifest.route(forPath: "/api/static/a.png")?.strategy == .offlineOnly)
        #expect(manifest.route(forPath: "/apix") == nil)
        #expect(manifest.route(forPath: "/index.html") == nil)
    }
}

@Suite("HTTP headers")
struct HTTPHeadersTests {
    @Test("lookup is case-insensitive and keeps order")
    func headers() {
        var headers: HTTPHeaders = ["Content-Type": "text/html"]
        headers.add("Set-Cookie", "a=1")
        headers.add("set-cookie", "b=2")
        #expect(headers["content-type"] == "text/html")
        #expect(headers.values("SET-COOKIE") == ["a=1", "b=2"])
        headers.set("Set-Cookie", "c=3")
        #expect(headers.values("set-cookie") == ["c=3"])
        headers.remove("CONTENT-TYPE")
        #expect(headers["Content-Type"] == nil)
        #expect(HTTPHeaders.equalNames("ETag", "etag"))
        #expect(!HTTPHeaders.equalNames("ETag", "etags"))
    }
}

@Suite("Choosing what to send: conditions before ranges")
struct RepresentationSelectionTests {
    let etag = "\"abc\""

    @Test("If-None-Match wins over Range; If-Range gates Range; HEAD ignores Range; several ranges send everything")
    func selection() {
        func select(_ headers: HTTPHeaders, method: String = "GET") -> RepresentationSelection {
            RepresentationSelection.select(method: method, headers: headers, etag: etag, size: 100)
        }
        #expect(select(["If-None-Match": etag, "Range": "bytes=0-9"]) == .notModified)
        #expect(select(["Range": "bytes=0-9"]) == .partial(0...9))
        #expect(select(["Range": "bytes=0-9", "If-Range": etag]) == .partial(0...9))
        #expect(select(["Range": "bytes=0-9", "If-Range": "\"old\""]) == .full)
        #expect(select(["Range": "bytes=0-9"], method: "HEAD") == .full)
        #expect(select(["Range": "bytes=100-"]) == .unsatisfiable)
        #expect(select(["Range": "bytes=0-1,5-6"]) == .full)
        #expect(select(["Range": "pages=1"]) == .full)
        #expect(select([:]) == .full)
    }
}

@Suite("What a selection means on the wire")
struct RepresentationAnswerTests {
    @Test("status, framing and body bytes of each selection for a 100-byte representation", arguments: [
        (RepresentationSelection.notModified, 304, 0, 0, nil, false, [String]()),
        (.unsatisfiable, 416, 0, 0, "bytes */100", false, ["Content-Range: bytes */100", "Content-Length: 0"]),
        (.partial(10...19), 206, 10, 10, "bytes 10-19/100", true, ["Content-Range: bytes 10-19/100", "Content-Length: 10"]),
        (.full, 200, 0, 100, nil, true, ["Content-Length: 100"]),
    ])
    func answers(selection: RepresentationSelection, status: Int, offset: Int64, length: Int64, range: String?, body: Bool, framing: [String]) {
        let answer = selection.answer(size: 100)
        #expect(answer == RepresentationAnswer(status: status, offset: offset, length: length, contentRange: range, sendsBody: body))
        var headers = HTTPHeaders()
        answer.addFraming(to: &headers)
        #expect(headers.map { "\($0.name): \($0.value)" } == framing)
    }
}
