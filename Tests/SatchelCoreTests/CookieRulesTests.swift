import SatchelCore
import Testing

@Suite("Cookies: RFC 6265bis parsing, storage rules and retrieval")
struct CookieRulesTests {
    let now: Double = 1_800_000_000
    let page = CookieURL("satchel://m.shop.com/cart/view")!

    func set(_ text: String, at url: CookieURL? = nil, source: CookieRules.Source = .http, context: CookieRules.SiteContext = .sameSite, existing: [Cookie] = []) -> Result<Cookie, CookieRejection> {
        CookieRules.cookie(from: text, at: url ?? page, source: source, context: context, existing: existing, now: now)
    }

    func stored(_ text: String, at url: CookieURL? = nil, source: CookieRules.Source = .http) throws -> Cookie {
        try set(text, at: url, source: source).get()
    }

    @Test("a custom-scheme page counts as https; http does not")
    func secureSchemes() {
        #expect(CookieURL("satchel://m.shop.com/")?.secure == true)
        #expect(CookieURL("https://m.shop.com/")?.secure == true)
        #expect(CookieURL("http://m.shop.com/")?.secure == false)
        #expect(CookieURL("app://m.shop.com/", customSchemes: ["app"])?.secure == true)
        #expect(CookieURL("M.Shop.COM") == nil)
    }

    @Test("a plain cookie: host-only, the request's directory as path, a session cookie")
    func plain() throws {
        let cookie = try stored(" sid = abc 123 ")
        #expect(cookie.name == "sid" && cookie.value == "abc 123")
        #expect(cookie.domain == "m.shop.com" && cookie.hostOnly && cookie.path == "/cart" && cookie.expires == nil)
        #expect(cookie.sameSite == .unspecified && !cookie.secure && !cookie.httpOnly && cookie.created == now)
        #expect(try stored("novalue").name == "" && (try stored("novalue").value == "novalue"))
    }

    @Test("the default path is the request's directory", arguments: [
        ("", "/"), ("/", "/"), ("/a", "/"), ("/a/", "/a"), ("/a/b", "/a"), ("/a/b/c", "/a/b"), ("x/y", "/"),
    ])
    func defaultPath(path: String, expected: String) {
        #expect(CookieRules.defaultPath(path) == expected)
    }

    @Test("Domain: a parent domain widens the cookie; a foreign one, a public suffix or a sibling are refused")
    func domains() throws {
        let wide = try stored("a=1; Domain=.Shop.com; Path=/")
        #expect(wide.domain == "shop.com" && !wide.hostOnly)
        #expect(CookieRules.applies(wide, to: CookieURL("https://shop.com/")!, source: .http, now: now))
        #expect(CookieRules.applies(wide, to: CookieURL("https://x.m.shop.com/")!, source: .http, now: now))
        #expect(!CookieRules.applies(wide, to: CookieURL("https://evilshop.com/")!, source: .http, now: now))
        #expect(set("a=1; Domain=other.com") == .failure(.domainMismatch(domain: "other.com", host: "m.shop.com")))
        #expect(set("a=1; Domain=x.m.shop.com") == .failure(.domainMismatch(domain: "x.m.shop.com", host: "m.shop.com")))
        #expect(set("a=1; Domain=com") == .failure(.publicSuffix("com")))
        // A host that is itself one label may name itself: the cookie stays host-only.
        let local = try stored("a=1; Domain=localhost", at: CookieURL("http://localhost/")!)
        #expect(local.hostOnly && local.domain == "localhost")
        // The last Domain counts; an empty one is ignored.
        #expect(try stored("a=1; Domain=other.com; Domain=shop.com").domain == "shop.com")
        #expect(try stored("a=1; Domain=").hostOnly)
        let host = try stored("a=1")
        #expect(!CookieRules.applies(host, to: CookieURL("https://x.m.shop.com/")!, source: .http, now: now), "host-only: not to subdomains")
    }

    @Test("an IP address never domain-matches a parent")
    func ipAddresses() {
        #expect(!CookieRules.domainMatches("10.0.0.1", "0.0.1"))
        #expect(CookieRules.domainMatches("10.0.0.1", "10.0.0.1"))
        #expect(CookieRules.domainMatches("a.b.c", "b.c") && !CookieRules.domainMatches("ab.c", "b.c"))
    }

    @Test("Path: an explicit path, or the default when it does not start with /; path-match needs a boundary")
    func paths() throws {
        #expect(try stored("a=1; Path=/").path == "/")
        #expect(try stored("a=1; Path=docs").path == "/cart")
        let cart = try stored("a=1; Path=/cart")
        for (path, sent) in [("/cart", true), ("/cart/", true), ("/cart/x", true), ("/cartography", false), ("/", false)] {
            #expect(CookieRules.applies(cart, to: CookieURL(host: "m.shop.com", path: path, secure: true), source: .http, now: now) == sent, "\(path)")
        }
        #expect(CookieRules.pathMatches("/a/b", "/a/"))
    }

    @Test("expiry: Max-Age wins over Expires, zero or less expires at once, both are capped at 400 days")
    func expiry() throws {
        #expect(try stored("a=1; Expires=Wed, 21 Oct 2099 07:28:00 GMT; Max-Age=60").expires == now + 60)
        #expect(try stored("a=1; Max-Age=60; Expires=Wed, 21 Oct 2015 07:28:00 GMT").expires == now + 60, "Max-Age wins whatever the order")
        #expect(try stored("a=1; Max-Age=0").expires == 0)
        #expect(try stored("a=1; Max-Age=-5").expires == 0)
        #expect(try stored("a=1; Max-Age=99999999999").expires == now + CookieRules.maxLifetime)
        #expect(try stored("a=1; Expires=Fri, 31 Dec 9999 23:59:59 GMT").expires == now + CookieRules.maxLifetime)
        #expect(try stored("a=1; Max-Age=1e3").expires == nil, "not delta-seconds: ignored")
        #expect(try stored("a=1; Expires=yesterday").expires == nil, "not a date: ignored")
        let gone = try stored("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT")
        #expect(CookieRules.isExpired(gone, now: now) && !CookieRules.applies(gone, to: page, source: .http, now: now))
    }

    @Test("cookie dates in the forms servers send", arguments: [
        ("Wed, 21 Oct 2015 07:28:00 GMT", Int64(1_445_412_480)),
        ("Sunday, 06-Nov-94 08:49:37 GMT", Int64(784_111_777)),
        ("Sun Nov  6 08:49:37 1994", Int64(784_111_777)),
        ("6 Nov 2069 8:49:37", Int64(3_150_953_377)),
        ("Thu, 01-Jan-1970 00:00:01 GMT", Int64(1)),
    ])
    func dates(text: String, seconds: Int64) {
        #expect(CookieRules.cookieDate(text) == seconds)
    }

    @Test("invalid cookie dates", arguments: ["Mon, 30 Feb 2026 10:00:00 GMT", "Wed, 21 Oct 1600 07:28:00 GMT", "21 Oct 2015", "Wed, 21 Oct 2015 24:00:00", ""])
    func invalidDates(text: String) {
        #expect(CookieRules.cookieDate(text) == nil)
    }

    @Test("whole cookies refused: control characters, nothing at all, more than 4096 bytes")
    func refused() throws {
        #expect(set("a=b\u{1}c") == .failure(.controlCharacter))
        #expect(set("a=b\u{7F}") == .failure(.controlCharacter))
        #expect(set("=") == .failure(.emptyNameAndValue))
        #expect(set("; Path=/") == .failure(.emptyNameAndValue))
        #expect(set("a=" + String(repeating: "x", count: 4096)) == .failure(.tooLong(4097)))
        #expect((try? set("a=" + String(repeating: "x", count: 4095)).get()) != nil)
        // An attribute value over 1024 bytes is ignored, not the cookie.
        #expect(try stored("a=1; Path=/" + String(repeating: "p", count: 1024)).path == "/cart")
        #expect(set("a=b\tc").map(\.value) == .success("b\tc"), "a tab is allowed")
    }

    @Test("Secure: only from a secure origin; an insecure origin cannot shadow a Secure cookie")
    func secure() throws {
        let plain = CookieURL("http://m.shop.com/")!
        #expect(set("a=1; Secure", at: plain) == .failure(.secureFromInsecureOrigin))
        let secure = try stored("a=1; Secure; Path=/")
        #expect(secure.secure)
        #expect(set("a=2", at: plain, existing: [secure]) == .failure(.replacesSecure))
        #expect((try? set("b=2", at: plain, existing: [secure]).get()) != nil)
        #expect(!CookieRules.applies(secure, to: plain, source: .http, now: now), "never sent over http")
    }

    @Test("prefixes: __Secure- needs Secure; __Host- needs Secure, no Domain, Path=/")
    func prefixes() {
        #expect(set("__Secure-a=1") == .failure(.securePrefixWithoutSecure))
        #expect((try? set("__Secure-a=1; Secure").get()) != nil)
        #expect(set("__Host-a=1; Secure") == .failure(.hostPrefixRules), "the default path is /cart")
        #expect(set("__Host-a=1; Secure; Path=/; Domain=shop.com") == .failure(.hostPrefixRules))
        #expect((try? set("__HOST-a=1; Secure; Path=/").get()) != nil)
        #expect(set("=__Host-a") == .failure(.hostPrefixRules), "a nameless cookie cannot pose as a prefixed one")
    }

    @Test("SameSite: parsed case-insensitively, None needs Secure, a cross-site response cannot set a SameSite cookie")
    func sameSite() throws {
        #expect(try stored("a=1; SameSite=strict").sameSite == .strict)
        #expect(try stored("a=1; SameSite=LAX").sameSite == .lax)
        #expect(try stored("a=1; SameSite=bogus").sameSite == .unspecified)
        #expect(set("a=1; SameSite=None") == .failure(.sameSiteNoneWithoutSecure))
        #expect(try stored("a=1; SameSite=None; Secure").sameSite == .none)
        let cross = CookieRules.SiteContext.crossSite(topLevelSafeNavigation: false)
        #expect(set("a=1; SameSite=Lax", context: cross) == .failure(.sameSiteFromCrossSite))
        #expect((try? set("a=1; SameSite=None; Secure", context: cross).get()) != nil)
    }

    @Test("a page's script: no HttpOnly cookie set, none replaced, none shown")
    func script() throws {
        #expect(set("a=1; HttpOnly", source: .script) == .failure(.httpOnlyFromScript))
        let session = try stored("sid=s; HttpOnly; Path=/")
        #expect(set("sid=forged; Path=/", source: .script, existing: [session]) == .failure(.replacesHttpOnly))
        let theme = try stored("theme=dark; Path=/", source: .script)
        #expect(CookieRules.header([session, theme], for: page, source: .script, now: now) == "theme=dark")
        #expect(CookieRules.header([session, theme], for: page, source: .http, now: now) == "sid=s; theme=dark")
    }

    @Test("a replacement keeps the old cookie's creation time")
    func replacement() throws {
        var old = try stored("a=1; Path=/")
        old.created = now - 100
        let new = try set("a=2; Path=/", existing: [old]).get()
        #expect(new.created == now - 100 && new.value == "2")
    }

    @Test("the Cookie header: longer paths first, then older first; expired, Secure-over-http and cross-site SameSite cookies left out")
    func header() {
        let cookies = [
            Cookie(name: "root", value: "1", domain: "m.shop.com", path: "/", created: 1),
            Cookie(name: "cart", value: "2", domain: "m.shop.com", path: "/cart", created: 5),
            Cookie(name: "older", value: "3", domain: "m.shop.com", path: "/", created: 0),
            Cookie(name: "gone", value: "4", domain: "m.shop.com", path: "/", expires: now - 1),
            Cookie(name: "strict", value: "5", domain: "m.shop.com", path: "/", sameSite: .strict, created: 2),
            Cookie(name: "lax", value: "6", domain: "m.shop.com", path: "/", sameSite: .lax, created: 3),
            Cookie(name: "none", value: "7", domain: "m.shop.com", path: "/", secure: true, sameSite: .none, created: 4),
        ]
        #expect(CookieRules.header(cookies, for: page, source: .http, now: now) == "cart=2; older=3; root=1; strict=5; lax=6; none=7")
        let crossFetch = CookieRules.header(cookies, for: page, source: .http, context: .crossSite(topLevelSafeNavigation: false), now: now)
        #expect(crossFetch?.contains("strict=5") == false && crossFetch?.contains("lax=6") == false && crossFetch?.contains("none=7") == true)
        let crossNavigation = CookieRules.header(cookies, for: page, source: .http, context: .crossSite(topLevelSafeNavigation: true), now: now)
        #expect(crossNavigation?.contains("lax=6") == true && crossNavigation?.contains("strict=5") == false)
        #expect(CookieRules.header(cookies, for: CookieURL("http://m.shop.com/")!, source: .http, now: now)?.contains("none=7") == false)
        #expect(CookieRules.header([], for: page, source: .http, now: now) == nil)
    }

    @Test("Set-Cookie folded by an HTTP client is split back: a comma starts a cookie only before name=, never inside an Expires date", arguments: [
        ("a=1; Path=/", ["a=1; Path=/"]),
        ("a=1; Path=/, b=2; Max-Age=3600", ["a=1; Path=/", "b=2; Max-Age=3600"]),
        ("id=x; Expires=Wed, 21 Oct 2015 07:28:00 GMT; Path=/, theme=dark", ["id=x; Expires=Wed, 21 Oct 2015 07:28:00 GMT; Path=/", "theme=dark"]),
        ("v=a,b", ["v=a,b"]),
        ("", []),
    ])
    func splitFolded(value: String, cookies: [String]) {
        #expect(CookieRules.splitFolded(value) == cookies)
    }
}
