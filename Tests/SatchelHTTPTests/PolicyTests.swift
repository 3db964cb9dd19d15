import SatchelCore
@testable import SatchelHTTP
import Testing

@Suite("Hop-by-hop fields (RFC 9110 §7.6.1)")
struct HopByHopTests {
    @Test("listed fields and fields named by Connection go; every other field stays, in order, repeats and case kept")
    func removing() {
        let headers = HTTPHeaders([
            ("Host", "a"), ("connection", "close, X-Private ,\tX-Other"), ("Set-Cookie", "a=1"), ("Keep-Alive", "timeout=5"),
            ("x-private", "secret"), ("Set-Cookie", "b=2"), ("TRANSFER-ENCODING", "chunked"), ("X-Other", "o"), ("Accept", "*/*"),
            ("Upgrade", "h2c"), ("TE", "trailers"), ("Proxy-Authorization", "Basic x"), ("Content-Length", "3"),
            // The rest of the list, and fields as long as listed ones, which stay.
            ("Referer", "r"), ("trailer", "X"), ("Proxy-Connection", "keep-alive"), ("Content-Language", "en"),
            ("Proxy-Authenticate", "Basic"), ("If-Modified-Since", "x"), ("DNT", "1"),
            // A second Connection field, with empty members (RFC 9110 §5.6.1 allows them) and a trailing comma.
            ("Connection", ",, keep-alive ,\t, X-Third,"), ("x-third", "3"),
            // `close` is an option like any other: a field named Close goes too (why the name is reserved).
            ("Close", "x"),
        ])
        let kept = HopByHop.removing(from: headers, also: ["Content-Length"])
        #expect(kept.map(\.name) == ["Host", "Set-Cookie", "Set-Cookie", "Accept", "Referer", "Content-Language", "If-Modified-Since", "DNT"])
        #expect(kept.values("Set-Cookie") == ["a=1", "b=2"])
        for name in HopByHop.fields { #expect(HopByHop.isHopByHop(name.uppercased()) && HopByHop.isHopByHop(name.lowercased()), "\(name)") }
    }
}

@Suite("Network policy")
struct NetworkPolicyTests {

    @Test("an upstream override replaces scheme and authority only: path, query and their encoding stay as written")
    func overrideKeepsTarget() throws {
        let policy = NetworkPolicy(
            allowedHosts: [try HostPattern("m.shop.example"), try HostPattern("*.cdn.example")],
            upstreamOverrides: ["m.shop.example": "http://127.0.0.1:8123/", "img.cdn.example": "https://staging.example:8443"])
        func target(_ url: String) throws -> String { try policy.upstreamRequestWithoutCookies(for: ResourceRequest(url: url), upstreamURL: url).url }
        #expect(try target("https://m.shop.example/a/%2e%2e/b?q=%20x&r=é") == "http://127.0.0.1:8123/a/%2e%2e/b?q=%20x&r=é")
        #expect(try target("https://m.shop.example:444?only=query") == "http://127.0.0.1:8123?only=query")
        #expect(try target("https://user:pw@m.shop.example") == "http://127.0.0.1:8123")
        #expect(try target("https://M.Shop.Example/x") == "http://127.0.0.1:8123/x")
        #expect(try target("https://img.cdn.example/p.png") == "https://staging.example:8443/p.png")
        #expect(try target("https://other.cdn.example/p.png") == "https://other.cdn.example/p.png", "no override: the URL as it is")
        #expect(throws: FetchError.self) { try target("https://evil.example/") }
    }
}
