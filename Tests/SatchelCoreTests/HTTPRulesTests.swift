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

    @Test("If-Range needs a strong match; weak tags and dates that are not Last-Modified never match")
    func ifRange() {
        let validators = Validators(etag: etag)
        #expect(Preconditions.ifRangeHolds("\"abc\"", validators: validators))
        #expect(!Preconditions.ifRangeHolds("W/\"abc\"", validators: validators))
        #expect(!Preconditions.ifRangeHolds("\"other\"", validators: validators))
        #expect(!Preconditions.ifRangeHolds("Wed, 21 Oct 2015 07:28:00 GMT", validators: validators))
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
        func select(_ headers: HTTPHeaders, method: RequestMethod = .get) -> RepresentationSelection {
            RepresentationSelection.select(method: method, headers: headers, validators: Validators(etag: etag), size: 100)
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

@Suite("Preconditions: RFC 9110 §13.1, in §13.2.2's order")
struct PreconditionTests {
    static let etag = "\"v2\""
    static let modified = Timestamp(httpDate: "Wed, 21 Oct 2015 07:28:00 GMT")!
    static let earlier = "Tue, 20 Oct 2015 07:28:00 GMT"
    static let same = "Wed, 21 Oct 2015 07:28:00 GMT"
    static let later = "Thu, 22 Oct 2015 07:28:00 GMT"

    @Test("each precondition alone and in combination, expected outcomes read from the RFC", arguments: [
        // If-Match (§13.1.1): strong comparison; `*` when a representation exists.
        ("GET", ["If-Match": "\"other\""], Preconditions.Outcome.preconditionFailed),
        ("GET", ["If-Match": "\"other\", \"v2\""], .proceed),
        ("GET", ["If-Match": "W/\"v2\""], .preconditionFailed),
        ("GET", ["If-Match": "*"], .proceed),
        ("PUT", ["If-Match": "\"other\""], .preconditionFailed),
        // If-Unmodified-Since (§13.1.4): ignored when If-Match is present, or when the date is not one HTTP date.
        ("GET", ["If-Unmodified-Since": earlier], .preconditionFailed),
        ("GET", ["If-Unmodified-Since": same], .proceed),
        ("GET", ["If-Unmodified-Since": later], .proceed),
        ("GET", ["If-Match": "\"v2\"", "If-Unmodified-Since": earlier], .proceed),
        ("GET", ["If-Unmodified-Since": "yesterday"], .proceed),
        ("DELETE", ["If-Unmodified-Since": earlier], .preconditionFailed),
        // If-None-Match (§13.1.2): weak comparison; 304 for GET and HEAD, 412 for other methods.
        ("GET", ["If-None-Match": "\"v2\""], .notModified),
        ("HEAD", ["If-None-Match": "W/\"v2\""], .notModified),
        ("GET", ["If-None-Match": "\"v1\", \"v2\""], .notModified),
        ("GET", ["If-None-Match": "*"], .notModified),
        ("GET", ["If-None-Match": "\"v1\""], .proceed),
        ("POST", ["If-None-Match": "\"v2\""], .preconditionFailed),
        // If-Modified-Since (§13.1.3): GET and HEAD only, ignored when If-None-Match is present.
        ("GET", ["If-Modified-Since": same], .notModified),
        ("GET", ["If-Modified-Since": later], .notModified),
        ("GET", ["If-Modified-Since": earlier], .proceed),
        ("GET", ["If-None-Match": "\"v1\"", "If-Modified-Since": later], .proceed),
        ("POST", ["If-Modified-Since": later], .proceed),
        ("GET", ["If-Modified-Since": "\(same), \(same)"], .proceed),
        // Order (§13.2.2): a failed If-Match is a 412 before If-None-Match could give a 304.
        ("GET", ["If-Match": "\"other\"", "If-None-Match": "\"v2\""], .preconditionFailed),
        ("GET", ["If-Unmodified-Since": earlier, "If-None-Match": "\"v2\""], .preconditionFailed),
    ])
    func outcomes(method: String, fields: [String: String], expected: Preconditions.Outcome) {
        let headers = HTTPHeaders(fields.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        let validators = Validators(etag: Self.etag, lastModified: Self.modified)
        #expect(Preconditions.evaluate(method: RequestMethod(method), headers: headers, validators: validators) == expected, "\(method) \(fields)")
    }

    @Test("a representation that does not exist: If-Match * fails, If-None-Match * holds")
    func absentRepresentation() {
        #expect(Preconditions.evaluate(method: "PUT", headers: ["If-Match": "*"], validators: Validators(), exists: false) == .preconditionFailed)
        #expect(Preconditions.evaluate(method: "PUT", headers: ["If-None-Match": "*"], validators: Validators(), exists: false) == .proceed)
    }

    @Test("If-Range (§13.1.5): a strong tag, or a strong date exactly equal to Last-Modified, lets the range through")
    func ifRange() {
        let strong = Validators(etag: Self.etag, lastModified: Self.modified)
        let weakDate = Validators(etag: "W/\"v2\"", lastModified: Self.modified, lastModifiedIsStrong: false)
        func select(_ ifRange: String, _ validators: Validators) -> RepresentationSelection {
            RepresentationSelection.select(method: "GET", headers: ["Range": "bytes=0-9", "If-Range": ifRange], validators: validators, size: 100)
        }
        #expect(select(Self.etag, strong) == .partial(0...9))
        #expect(select("\"v1\"", strong) == .full)
        #expect(select("W/\"v2\"", weakDate) == .full)
        #expect(select(Self.same, strong) == .partial(0...9))
        #expect(select(Self.later, strong) == .full)
        #expect(select(Self.same, weakDate) == .full)
        #expect(RepresentationSelection.select(method: "GET", headers: ["If-Match": "\"x\"", "Range": "bytes=0-9"], validators: strong, size: 100) == .preconditionFailed)
    }
}

@Suite("HTTP dates: the three forms a recipient must accept (RFC 9110 §5.6.7)")
struct HTTPDateTests {
    @Test("IMF-fixdate, RFC 850 and asctime name the same instant; other text is not a date", arguments: [
        ("Sun, 06 Nov 1994 08:49:37 GMT", Int64?(784_111_777)),
        ("Sunday, 06-Nov-94 08:49:37 GMT", 784_111_777),
        ("Sun Nov  6 08:49:37 1994", 784_111_777),
        ("sun, 06 nov 1994 08:49:37 gmt", 784_111_777),
        ("Sun, 06 Nov 1994 08:49:37 UTC", nil),
        ("Sun, 06 Nov 1994 8:49:37 GMT", nil),
        ("Sun, 31 Feb 1994 08:49:37 GMT", nil),
        ("1994-11-06T08:49:37Z", nil),
        ("", nil),
    ])
    func parses(text: String, expected: Int64?) {
        #expect(Timestamp(httpDate: text)?.secondsSinceEpoch == expected, "\(text)")
    }

    @Test("dates are written as IMF-fixdate and read back")
    func roundTrip() {
        #expect(Timestamp(secondsSinceEpoch: 784_111_777).httpDate == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(Timestamp(secondsSinceEpoch: 0).httpDate == "Thu, 01 Jan 1970 00:00:00 GMT")
        for seconds in stride(from: Int64(0), to: 4_000_000_000, by: 86_399 * 37) {
            #expect(Timestamp(httpDate: Timestamp(secondsSinceEpoch: seconds).httpDate)?.secondsSinceEpoch == seconds)
        }
    }
}

@Suite("What a selection means on the wire")
struct RepresentationAnswerTests {
    @Test("status, framing and body bytes of each selection for a 100-byte representation", arguments: [
        (RepresentationSelection.notModified, 304, 0, 0, nil, false, [String]()),
        (.unsatisfiable, 416, 0, 0, "bytes */100", false, ["Content-Range: bytes */100", "Content-Length: 0"]),
        (.preconditionFailed, 412, 0, 0, nil, false, ["Content-Length: 0"]),
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
