@testable import SatchelCore
import Testing

@Suite("What logs may show of a request-target")
struct LogRedactionTests {
    static let cases: [(String, String)] = [
        ("/login?POST_DATA=user%3Dalice%26password%3Dhunter2", "/login?POST_DATA=[redacted]"),
        ("/a?x=1&SATCHEL_BODY_ID=b-42&y=2", "/a?x=1&SATCHEL_BODY_ID=[redacted]&y=2"),
        ("/cb?code=abc&state=s1", "/cb?code=[redacted]&state=s1"),
        ("/p?Password=hunter2&user=alice", "/p?Password=[redacted]&user=alice"),
        ("/p?pass%77ord=x", "/p?pass%77ord=[redacted]"),
        ("/p?access_token=t&api_key=k&sessionid=s", "/p?access_token=[redacted]&api_key=[redacted]&sessionid=[redacted]"),
        ("/p?q=shoes&page=2", "/p?q=shoes&page=2"),
        ("/p?flag&token=", "/p?flag&token="),
        ("/plain/path", "/plain/path"),
        ("http://user:secret@m.shop.example/x?token=1", "http://[redacted]@m.shop.example/x?token=[redacted]"),
        ("http://m.shop.example/x?a=1#frag", "http://m.shop.example/x?a=1#frag"),
    ]

    @Test("secret values go, names and everything else stay", arguments: cases)
    func redaction(_ input: String, _ expected: String) {
        #expect(LogRedaction.redacting(input, secretParameters: ["POST_DATA", "SATCHEL_BODY_ID"]) == expected)
    }
}
