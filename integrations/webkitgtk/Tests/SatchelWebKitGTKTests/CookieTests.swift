@testable import SatchelWebKitGTK
import Testing

@Suite("Set-Cookie values folded by an HTTP client are split back into cookies")
struct CookieUnfoldingTests {
    @Test("a comma starts a cookie only before name=, never inside an Expires date", arguments: [
        ("a=1; Path=/", ["a=1; Path=/"]),
        ("a=1; Path=/, b=2; Max-Age=3600", ["a=1; Path=/", "b=2; Max-Age=3600"]),
        ("id=x; Expires=Wed, 21 Oct 2015 07:28:00 GMT; Path=/, theme=dark", ["id=x; Expires=Wed, 21 Oct 2015 07:28:00 GMT; Path=/", "theme=dark"]),
        ("v=a,b", ["v=a,b"]),
    ])
    func unfold(value: String, cookies: [String]) {
        #expect(WebKitCookieJar.unfolded(value) == cookies)
    }
}
