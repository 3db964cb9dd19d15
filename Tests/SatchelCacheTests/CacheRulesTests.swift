import SatchelCore
import Testing

/// The rules of RFC 9111, pure, each table's expected values read from the RFC (and RFC 5861, 9211, 9213).
@Suite("Cache rules: storing (RFC 9111 §3)")
struct StoringTests {
    static let get = ResourceRequest(url: "https://api.example/x")

    @Test("what a cache may store, and the reason it gives when it may not", arguments: [
        (200, ["Cache-Control": "max-age=60"], CacheMode.shared, true),
        (200, ["Cache-Control": "no-store, max-age=60"], .shared, false),
        (200, ["Cache-Control": "private, max-age=60"], .shared, false),
        (200, ["Cache-Control": "private, max-age=60"], .private, true),
        (200, ["Cache-Control": "max-age=60", "Expires": "0"], .shared, true),
        (200, ["ETag": "\"a\""], .shared, true),  // heuristically cacheable status with a validator: stored, revalidated
        (200, [:], .shared, false),  // no freshness, no validator: nothing could ever reuse it
        (201, ["Last-Modified": "Tue, 20 Oct 2015 07:28:00 GMT"], .shared, false),  // not heuristically cacheable
        (500, ["Cache-Control": "max-age=60"], .shared, true),  // any final status with explicit freshness
        (206, ["Cache-Control": "max-age=60"], .shared, false),  // partials: not understood, so not stored
        (304, ["Cache-Control": "max-age=60"], .shared, false),
        (200, ["Cache-Control": "no-store, must-understand, max-age=60"], .shared, true),  // understood status
        (599, ["Cache-Control": "no-store, must-understand, max-age=60"], .shared, false),
        (404, ["Last-Modified": "Tue, 20 Oct 2015 07:28:00 GMT"], .shared, true),
        (200, ["Cache-Control": "max-age=60", "Set-Cookie": "session=1"], .shared, false),  // one user's cookie, to no one else
        (200, ["Cache-Control": "max-age=60, public", "Set-Cookie": "theme=dark"], .shared, true),
        (200, ["Cache-Control": "max-age=60", "Set-Cookie": "session=1"], .private, true),
    ])
    func storability(status: Int, fields: [String: String], mode: CacheMode, stored: Bool) {
        let headers = HTTPHeaders(fields.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        let decision = CacheRules.storability(request: Self.get, status: status, headers: headers, mode: mode)
        #expect((decision == .store) == stored, "\(status) \(fields) \(mode.shared ? "shared" : "private"): \(decision)")
    }

    @Test("a request with Authorization: a shared cache stores the answer only when public, must-revalidate or s-maxage say so (§3.5)")
    func authorization() {
        let request = ResourceRequest(url: "https://api.example/me", headers: ["Authorization": "Bearer t"])
        func decision(_ cc: String, _ mode: CacheMode) -> Bool {
            CacheRules.storability(request: request, status: 200, headers: ["Cache-Control": cc], mode: mode) == .store
        }
        #expect(!decision("max-age=60", .shared))
        #expect(decision("max-age=60, public", .shared))
        #expect(decision("max-age=60, must-revalidate", .shared))
        #expect(decision("s-maxage=60", .shared))
        #expect(decision("max-age=60", .private))
    }

    @Test("the request's no-store, and methods other than GET, store nothing")
    func requestSide() {
        let noStore = ResourceRequest(url: "https://api.example/x", headers: ["Cache-Control": "no-store"])
        #expect(CacheRules.storability(request: noStore, status: 200, headers: ["Cache-Control": "max-age=60"], mode: .shared) != .store)
        let post = ResourceRequest(method: "POST", url: "https://api.example/x")
        #expect(CacheRules.storability(request: post, status: 200, headers: ["Cache-Control": "max-age=60"], mode: .shared) != .store)
    }

    @Test("stored fields leave out hop-by-hop ones, those Connection names, and in a shared cache those private= names")
    func storedFields() {
        let headers: HTTPHeaders = [
            "Connection": "X-Hop", "X-Hop": "1", "Keep-Alive": "5", "Cache-Control": "max-age=9, private=\"X-Secret\"", "X-Secret": "s",
            "X-Kept": "k",
        ]
        #expect(CacheRules.storedHeaders(headers, mode: .shared).map(\.name) == ["Cache-Control", "X-Kept"])
        #expect(CacheRules.storedHeaders(headers, mode: .private).map(\.name) == ["Cache-Control", "X-Secret", "X-Kept"])
    }
}

@Suite("Cache rules: freshness and age (RFC 9111 §4.2)")
struct FreshnessTests {
    static let date = "Wed, 21 Oct 2015 07:28:00 GMT"
    static let dateSeconds = Double(Timestamp(httpDate: date)!.secondsSinceEpoch)

    @Test("the lifetime: s-maxage (shared only), then max-age, then Expires minus Date, then 10 % of the time since Last-Modified", arguments: [
        (["Cache-Control": "max-age=60, s-maxage=10"], CacheMode.shared, 10.0, false),
        (["Cache-Control": "max-age=60, s-maxage=10"], .private, 60.0, false),
        (["Cache-Control": "max-age=60", "Expires": "Wed, 21 Oct 2015 08:28:00 GMT", "Date": date], .shared, 60.0, false),
        (["Expires": "Wed, 21 Oct 2015 08:28:00 GMT", "Date": date], .shared, 3600.0, false),
        (["Expires": "0", "Date": date], .shared, 0.0, false),
        (["Expires": "Wed, 21 Oct 2015 08:28:00 GMT", "Date": date, "Last-Modified": "Tue, 20 Oct 2015 07:28:00 GMT"], .shared, 3600.0, false),
        (["Date": date, "Last-Modified": "Tue, 20 Oct 2015 07:28:00 GMT"], .shared, 8640.0, true),
        (["Cache-Control": "max-age=abc"], .shared, 0.0, false),
        (["Cache-Control": "max-age=99999999999999"], .shared, 2_147_483_648.0, false),
    ])
    func lifetime(fields: [String: String], mode: CacheMode, seconds: Double, heuristic: Bool) {
        let headers = HTTPHeaders(fields.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        let result = CacheRules.freshnessLifetime(status: 200, headers: headers, responseTime: Self.dateSeconds, mode: mode)
        #expect(result.seconds == seconds && result.heuristic == heuristic, "\(fields)")
    }

    @Test("the current age (§4.2.3): the larger of the apparent age and Age plus the response delay, plus time resident")
    func age() {
        // Sent at Date, received 10 s later after a request that took 4 s, carrying Age: 30; now 100 s after receipt.
        let stored = StoredResponse(
            status: 200, headers: ["Date": Self.date, "Age": "30"], varying: [], requestTime: Self.dateSeconds + 6,
            responseTime: Self.dateSeconds + 10)
        #expect(CacheRules.currentAge(stored, now: Self.dateSeconds + 110) == 34 + 100)
        // A Date in the future (clock skew) makes no negative age; a bad Age is ignored; of a list the first counts.
        let skewed = StoredResponse(status: 200, headers: ["Date": "Wed, 21 Oct 2015 09:28:00 GMT", "Age": "x"], varying: [], requestTime: Self.dateSeconds, responseTime: Self.dateSeconds)
        #expect(CacheRules.currentAge(skewed, now: Self.dateSeconds + 5) == 5)
        #expect(CacheRules.ageValue(["Age": "7200, 0"]) == 7200)
        #expect(CacheRules.ageValue(["Age": "-5"]) == 0)
    }
}

@Suite("Cache rules: reuse and request directives (RFC 9111 §4, §5.2.1; RFC 5861)")
struct ReuseTests {
    static let now = 1_000_000.0

    static func stored(_ cc: String, age: Double = 0, extra: [(String, String)] = []) -> StoredResponse {
        let date = Timestamp(secondsSinceEpoch: Int64(now - age)).httpDate
        return StoredResponse(
            status: 200, headers: HTTPHeaders([("Date", date), ("Cache-Control", cc), ("ETag", "\"v1\"")] + extra), varying: [],
            requestTime: now - age, responseTime: now - age)
    }

    static func request(_ fields: [(String, String)] = []) -> ResourceRequest {
        ResourceRequest(url: "https://api.example/x", headers: HTTPHeaders(fields))
    }

    @Test("fresh, stale, and what a request may accept")
    func decisions() {
        func reuse(_ stored: StoredResponse, _ fields: [(String, String)] = [], mode: CacheMode = .shared) -> CacheRules.Reuse {
            CacheRules.reuse(stored, request: Self.request(fields), now: Self.now, mode: mode)
        }
        #expect(reuse(Self.stored("max-age=60", age: 10)) == .fresh(ttl: 50))
        #expect(reuse(Self.stored("max-age=60", age: 70)) == .validate(reason: .stale))
        #expect(reuse(Self.stored("max-age=60", age: 10), [("Cache-Control", "no-cache")]) == .validate(reason: .requestNoCache))
        #expect(reuse(Self.stored("max-age=60", age: 10), [("Pragma", "no-cache")]) == .validate(reason: .requestNoCache))
        #expect(reuse(Self.stored("max-age=60", age: 10), [("Cache-Control", "max-age=5")]) == .validate(reason: .stale))
        #expect(reuse(Self.stored("max-age=60", age: 10), [("Cache-Control", "min-fresh=55")]) == .validate(reason: .stale))
        #expect(reuse(Self.stored("max-age=60", age: 70), [("Cache-Control", "max-stale=20")]) == .staleAccepted(ttl: -10))
        #expect(reuse(Self.stored("max-age=60", age: 90), [("Cache-Control", "max-stale=20")]) == .validate(reason: .stale))
        #expect(reuse(Self.stored("max-age=60", age: 900), [("Cache-Control", "max-stale")]) == .staleAccepted(ttl: -840))
        #expect(reuse(Self.stored("max-age=60, no-cache", age: 10)) == .validate(reason: .noCache))
        #expect(reuse(Self.stored("max-age=60, must-revalidate", age: 70), [("Cache-Control", "max-stale")]) == .validate(reason: .staleMustRevalidate))
        #expect(reuse(Self.stored("s-maxage=60", age: 70), [("Cache-Control", "max-stale")]) == .validate(reason: .staleMustRevalidate))
        #expect(reuse(Self.stored("max-age=60, stale-while-revalidate=30", age: 80)) == .staleWhileRevalidate(ttl: -20))
        #expect(reuse(Self.stored("max-age=60, stale-while-revalidate=30", age: 100)) == .validate(reason: .stale))
    }

    @Test("stale answers when the origin fails: stale-if-error within its window, any stale answer when disconnected, never against must-revalidate")
    func onError() {
        #expect(CacheRules.staleOnError(Self.stored("max-age=60, stale-if-error=30", age: 80), now: Self.now, mode: .shared, failure: 503))
        #expect(!CacheRules.staleOnError(Self.stored("max-age=60, stale-if-error=30", age: 100), now: Self.now, mode: .shared, failure: 503))
        #expect(!CacheRules.staleOnError(Self.stored("max-age=60", age: 80), now: Self.now, mode: .shared, failure: 503))
        #expect(CacheRules.staleOnError(Self.stored("max-age=60", age: 80), now: Self.now, mode: .shared, failure: nil))
        #expect(!CacheRules.staleOnError(Self.stored("max-age=60, must-revalidate", age: 80), now: Self.now, mode: .shared, failure: nil))
        #expect(!CacheRules.staleOnError(Self.stored("max-age=60, proxy-revalidate", age: 80), now: Self.now, mode: .shared, failure: nil))
        #expect(CacheRules.staleOnError(Self.stored("max-age=60, proxy-revalidate", age: 80), now: Self.now, mode: .private, failure: nil))
    }

    @Test("Vary selects by the request fields it names, repeated lines combined; Vary: * selects nothing")
    func vary() throws {
        let first = Self.request([("Accept-Language", "en"), ("Accept-Encoding", "gzip")])
        let varying = try #require(CacheRules.varyingFields(of: ["Vary": "Accept-Language, accept-encoding"], request: first))
        let stored = StoredResponse(status: 200, headers: [:], varying: varying, requestTime: 0, responseTime: 0)
        #expect(CacheRules.varyMatches(stored, request: first))
        #expect(!CacheRules.varyMatches(stored, request: Self.request([("Accept-Language", "fr"), ("Accept-Encoding", "gzip")])))
        #expect(!CacheRules.varyMatches(stored, request: Self.request([("Accept-Language", "en")])))
        #expect(CacheRules.varyingFields(of: ["Vary": "Accept-Language, *"], request: first) == nil)
    }

    @Test("a 304 freshens the stored fields but never the framing of the stored body (§3.2)")
    func freshening() {
        let stored = Self.stored("max-age=60", age: 100, extra: [("Content-Length", "5"), ("X-Version", "1")])
        let freshened = CacheRules.freshened(
            stored, with: ["Cache-Control": "max-age=120", "X-Version": "2", "Content-Length": "0"], requestTime: Self.now, responseTime: Self.now,
            mode: .shared)
        #expect(freshened.headers["Cache-Control"] == "max-age=120")
        #expect(freshened.headers["X-Version"] == "2")
        #expect(freshened.headers["Content-Length"] == "5")
        #expect(CacheRules.conditionalFields(for: stored).map(\.0) == ["If-None-Match"])
    }

    @Test("an unsafe method's success invalidates the target, Location and Content-Location on its host only (§4.4)")
    func invalidation() {
        let urls = CacheRules.invalidatedURLs(
            method: "POST", url: "https://api.example/cart/items", status: 201,
            headers: ["Location": "/cart/items/7", "Content-Location": "https://other.example/x"])
        #expect(urls == ["https://api.example/cart/items", "https://api.example/cart/items/7"])
        #expect(CacheRules.invalidatedURLs(method: "POST", url: "https://api.example/x", status: 500, headers: [:]).isEmpty)
        #expect(CacheRules.invalidatedURLs(method: "GET", url: "https://api.example/x", status: 200, headers: [:]).isEmpty)
    }
}

@Suite("Cache-Control, CDN-Cache-Control and Cache-Status fields")
struct CacheFieldTests {
    @Test("Cache-Control: names case-insensitive, quoted arguments, the first of a repeated directive, lists across lines")
    func parsing() {
        let cc = CacheControl(values: ["Max-Age=\"60\", no-cache=\"Set-Cookie, X-A\"", "max-age=5, public"])
        #expect(cc.seconds("max-age") == .value(60))
        #expect(cc.fieldNames("no-cache") == ["set-cookie", "x-a"])
        #expect(cc.has("public"))
        #expect(CacheControl(values: ["max-age=1.5"]).seconds("max-age") == .invalid)
        #expect(CacheControl(values: ["max-age"]).seconds("max-age") == .invalid)
        #expect(CacheControl(values: ["max-age=0000000000000099"]).seconds("max-age") == .value(99))
    }

    @Test("CDN-Cache-Control (RFC 9213): a valid dictionary replaces Cache-Control and Expires in a shared cache; an invalid one is ignored")
    func targeted() {
        let valid: HTTPHeaders = ["Cache-Control": "no-store", "CDN-Cache-Control": "max-age=600", "Expires": "0"]
        #expect(CacheControl.ofResponse(valid, mode: .shared).targeted)
        #expect(CacheRules.freshnessLifetime(status: 200, headers: valid, responseTime: 0, mode: .shared).seconds == 600)
        #expect(!CacheControl.ofResponse(valid, mode: .private).targeted)
        for invalid in ["max-age =100", "max-age=100, &&&", "MaX-aGe=100", "max-age=100,"] {
            #expect(!CacheControl.ofResponse(["CDN-Cache-Control": invalid], mode: .shared).targeted, "\(invalid)")
        }
        let string = CacheControl.ofResponse(["CDN-Cache-Control": "max-age=\"100\""], mode: .shared)
        #expect(string.targeted && string.control.seconds("max-age") == .invalid)
    }

    @Test("Cache-Status members (RFC 9211)")
    func cacheStatus() {
        #expect(CacheStatus(hit: true, ttl: 42).member(cache: "satchel") == "satchel; hit; ttl=42")
        #expect(CacheStatus(forward: .stale, forwardStatus: 304, ttl: 60).member(cache: "satchel") == "satchel; fwd=stale; fwd-status=304; ttl=60")
        #expect(CacheStatus(forward: .uriMiss, stored: true, collapsed: true).member(cache: "satchel") == "satchel; fwd=uri-miss; stored; collapsed")
        #expect(CacheStatus(forward: .uriMiss, detail: "no-store").member(cache: "satchel") == "satchel; fwd=uri-miss; detail=no-store")
        #expect(CacheStatus(forward: .stale, detail: "origin unreachable; stale").member(cache: "satchel") == "satchel; fwd=stale; detail=\"origin unreachable; stale\"")
        // Not a token: a quoted string, its quotes and backslashes escaped (RFC 9651 §3.3.3); a token starts with a letter.
        #expect(CacheStatus(detail: #"say "hi" \ bye"#).member(cache: "satchel") == #"satchel; detail="say \"hi\" \\ bye""#)
        #expect(CacheStatus(detail: "1a").member(cache: "satchel") == #"satchel; detail="1a""#)
    }
}
