import Foundation
import Testing
@testable import SatchelCore

/// JavaScript's encodeURIComponent: everything but A-Z a-z 0-9 - _ . ! ~ * ' ( ) is percent-encoded as UTF-8.
func encodeURIComponent(_ text: String) -> String {
    let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.!~*'()".utf8)
    return text.utf8.map { unreserved.contains($0) ? String(UnicodeScalar($0)) : String(format: "%%%02X", $0) }.joined()
}

/// The browser's application/x-www-form-urlencoded serializer (URLSearchParams.toString()).
func formURLEncode(_ pairs: [(String, String)]) -> String {
    let safe = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789*-._".utf8)
    func encode(_ text: String) -> String {
        text.utf8.map { $0 == 0x20 ? "+" : safe.contains($0) ? String(UnicodeScalar($0)) : String(format: "%%%02X", $0) }.joined()
    }
    return pairs.map { encode($0.0) + "=" + encode($0.1) }.joined(separator: "&")
}

@Suite("Restoring lost POST bodies")
struct BodyRestorerTests {
    let restorer = BodyRestorer()
    let none: (String) -> StoredBody? = { _ in nil }

    @Test("header channel: encodeURIComponent text restores byte for byte", arguments: [
        "", "hello", "{\"name\":\"Café ☕\",\"qty\":2}", "a+b=c&d=e%20f", "名前 😀 \u{0} tab\t newline\n", String(repeating: "x", count: 4000),
    ])
    func headerChannel(_ body: String) throws {
        let request = ResourceRequest(method: "POST", url: "satchel://m.shop.com/api/cart", headers: ["X-Satchel-Body": encodeURIComponent(body), "X-Satchel-Content-Type": "application/json", "Accept": "*/*"])
        let (restored, channel) = try restorer.restore(request, takeStoredBody: none, proof: nil)
        #expect(channel == .header)
        #expect(restored.body == Array(body.utf8))
        #expect(restored.method == "POST")
        #expect(restored.headers["Content-Type"] == "application/json")
        #expect(restored.headers["Content-Length"] == String(body.utf8.count))
        #expect(restored.headers["Accept"] == "*/*")
        #expect(restored.headers["X-Satchel-Body"] == nil)
        #expect(restored.headers["X-Satchel-Content-Type"] == nil)
    }

    @Test("a body WebKit delivered and the hook carried too is one body: kept when equal, refused (400) when they differ; a delivered body alone passes")
    func deliveredAndCarried() throws {
        let json = #"{"qty":2}"#
        var both = ResourceRequest(method: "POST", url: "satchel://m.shop.com/api/cart", headers: ["X-Satchel-Body": encodeURIComponent(json)])
        both.body = Array(json.utf8)
        let (restored, channel) = try restorer.restore(both, takeStoredBody: none, proof: nil)
        #expect(channel == .header && restored.body == Array(json.utf8) && restored.headers["Content-Length"] == String(json.utf8.count))

        var differ = both
        differ.body = Array(#"{"qty":3}"#.utf8)
        #expect(throws: BodyRestorationError.deliveredBodyDiffers(channel: .header, delivered: 9, carried: 9)) {
            try restorer.restore(differ, takeStoredBody: none, proof: nil)
        }
        #expect(BodyRestorationError.deliveredBodyDiffers(channel: .header, delivered: 9, carried: 9).status == 400)

        let delivered = ResourceRequest(method: "POST", url: "satchel://m.shop.com/api/cart", body: Array(json.utf8))
        let (alone, aloneChannel) = try restorer.restore(delivered, takeStoredBody: none, proof: nil)
        #expect(aloneChannel == .none && alone.body == Array(json.utf8))
    }

    @Test("the keepalive marker never reaches the network, with a body channel or without one")
    func keepaliveMarker() throws {
        let beacon = ResourceRequest(method: "POST", url: "satchel://h.example/log", headers: ["X-Satchel-Body": "hi", "X-Satchel-Keepalive": "1"])
        let (restored, channel) = try restorer.restore(beacon, takeStoredBody: none, proof: nil)
        #expect(channel == .header)
        #expect(restored.body == Array("hi".utf8))
        #expect(restored.headers["X-Satchel-Keepalive"] == nil)
        let alone = ResourceRequest(method: "GET", url: "satchel://h.example/x", headers: ["X-Satchel-Keepalive": "1", "Accept": "*/*"])
        let (untouched, none) = try restorer.restore(alone, takeStoredBody: none, proof: nil)
        #expect(none == .none)
        #expect(untouched.headers["X-Satchel-Keepalive"] == nil)
        #expect(untouched.headers["Accept"] == "*/*")
    }

    @Test("Satchel's fields never reach the network, even without a body claim: proof, method, type, encoding, marker, token parameter")
    func markersWithoutClaim() throws {
        let request = ResourceRequest(
            method: "POST", url: "satchel://h.example/x?a=1&SATCHEL_TOKEN=1.2.3&b=%20",
            headers: [
                "X-Satchel-Token": "1.2.3", "X-Satchel-Method": "PUT", "X-Satchel-Content-Type": "text/plain",
                "X-Satchel-Body-Encoding": "base64", "X-Satchel-Keepalive": "1", "Accept": "*/*",
            ])
        let (restored, channel) = try restorer.restore(request, takeStoredBody: none, proof: nil)
        #expect(channel == .none)
        #expect(restored.headers.map(\.name) == ["Accept"])
        #expect(restored.url == "satchel://h.example/x?a=1&b=%20")
        #expect(restored.method == "POST")
        #expect(restored.body == nil)
        // A request without any of them is left exactly as it was.
        let plain = ResourceRequest(method: "GET", url: "satchel://h.example/x?a=1#f", headers: ["Accept": "*/*"])
        #expect(try restorer.restore(plain, takeStoredBody: none, proof: nil).request == plain)
    }

    @Test("a header-channel body's token parameter is removed from the URL too")
    func headerChannelTokenParameter() throws {
        let request = ResourceRequest(method: "POST", url: "satchel://h.example/api?SATCHEL_TOKEN=1.2.3&q=x", headers: ["X-Satchel-Body": "hi"])
        let (restored, channel) = try restorer.restore(request, takeStoredBody: none, proof: nil)
        #expect(channel == .header)
        #expect(restored.url == "satchel://h.example/api?q=x")
    }

    @Test("the legacy XHR hook, exactly: header BODY, encodeURIComponent, method kept as POST")
    func seedHeader() throws {
        let body = "user=张三&note=a b"
        let request = ResourceRequest(method: "POST", url: "https://m.shop.com/login", headers: ["BODY": encodeURIComponent(body)])
        let (restored, channel) = try restorer.restore(request, takeStoredBody: none, proof: nil)
        #expect(channel == .header)
        #expect(restored.body == Array(body.utf8))
        #expect(restored.method == "POST")
        #expect(restored.headers["BODY"] == nil)
    }

    @Test("header channel: base64 for binary, original method, and the limits")
    func headerBinary() throws {
        let binary: [UInt8] = (0..<256).map { UInt8($0) }
        let request = ResourceRequest(method: "POST", url: "satchel://h.example/up", headers: [
            "X-Satchel-Body": Data(binary).base64EncodedString(), "X-Satchel-Body-Encoding": "base64", "X-Satchel-Method": "PUT",
        ])
        let (restored, _) = try restorer.restore(request, takeStoredBody: none, proof: nil)
        #expect(restored.body == binary)
        #expect(restored.method == "PUT")
        let big = String(repeating: "a", count: 16 << 10 + 1)
        #expect(throws: BodyRestorationError.tooLarge(channel: .header, bytes: big.utf8.count, limit: 16 << 10)) {
            try restorer.restore(ResourceRequest(method: "POST", url: "satchel://h.example/x", headers: ["X-Satchel-Body": big]), takeStoredBody: none, proof: nil)
        }
        #expect(throws: BodyRestorationError.self) {
            try restorer.restore(ResourceRequest(method: "POST", url: "satchel://h.example/x", headers: ["X-Satchel-Body": "%E0%A4"]), takeStoredBody: none, proof: nil)
        }
        #expect(throws: BodyRestorationError.self) {
            try restorer.restore(ResourceRequest(method: "POST", url: "satchel://h.example/x", headers: ["X-Satchel-Body": "100%"]), takeStoredBody: none, proof: nil)
        }
        #expect(throws: BodyRestorationError.self) {
            try restorer.restore(ResourceRequest(method: "POST", url: "satchel://h.example/x", headers: ["X-Satchel-Body": "!!", "X-Satchel-Body-Encoding": "base64"]), takeStoredBody: none, proof: nil)
        }
        #expect(BodyRestorationError.tooLarge(channel: .header, bytes: 1, limit: 0).status == 413)
        #expect(BodyRestorationError.bodyLost(channel: .bodyStore, id: "x").status == 400)
    }

    @Test("form-to-query: our hook's value restores the browser's own urlencoded bytes; other parameters keep order and bytes")
    func formChannel() throws {
        let form = formURLEncode([("name", "Zoë Müller"), ("note", "1+1=2 & more"), ("tags", "a"), ("tags", "b")])
        let url = "https://m.shop.com/checkout?step=2&x=%41&POST_DATA=\(encodeURIComponent(form))&x=dup&empty="
        let (restored, channel) = try restorer.restore(ResourceRequest(method: "GET", url: url), takeStoredBody: none, proof: nil)
        #expect(channel == .formQuery)
        #expect(restored.body == Array(form.utf8))
        #expect(restored.method == "POST")
        #expect(restored.headers["Content-Type"] == "application/x-www-form-urlencoded")
        #expect(restored.url == "https://m.shop.com/checkout?step=2&x=%41&x=dup&empty=")
        let alone = try restorer.restore(ResourceRequest(url: "https://m.shop.com/f?POST_DATA=a%3D1#frag"), takeStoredBody: none, proof: nil)
        #expect(alone.request.url == "https://m.shop.com/f")
        #expect(alone.request.body == Array("a=1".utf8))
    }

    @Test("form-to-query: the legacy hook (encodeURIComponent pairs) restores to an equivalent valid body")
    func seedForm() throws {
        // The legacy hook joins encodeURIComponent(name)=encodeURIComponent(value) and encodes the result once more.
        let pairs = [("user", "张三"), ("note", "a b+c")]
        let seedBody = pairs.map { encodeURIComponent($0.0) + "=" + encodeURIComponent($0.1) }.joined(separator: "&")
        let (restored, _) = try restorer.restore(ResourceRequest(url: "https://m.shop.com/f?POST_DATA=" + encodeURIComponent(seedBody)), takeStoredBody: none, proof: nil)
        #expect(restored.body == Array(seedBody.utf8))
        // Equivalent: a form parser reads the same pairs as from the browser's own encoding.
        var components = URLComponents()
        components.percentEncodedQuery = String(decoding: restored.body!, as: UTF8.self)
        #expect(components.queryItems?.map { [$0.name, $0.value ?? ""] } == pairs.map { [$0.0, $0.1] })
    }

    @Test("body-store channel: by header or by parameter, one-shot; a missing body is 'body lost'")
    func bodyStore() throws {
        var stored: [String: StoredBody] = ["abc": StoredBody(bytes: [0, 1, 2, 255], contentType: "multipart/form-data; boundary=----x", method: "POST")]
        let take: (String) -> StoredBody? = { stored.removeValue(forKey: $0) }
        let (restored, channel) = try restorer.restore(ResourceRequest(method: "POST", url: "satchel://h.example/upload", headers: ["X-Satchel-Body-Id": "abc"]), takeStoredBody: take, proof: nil)
        #expect(channel == .bodyStore)
        #expect(restored.body == [0, 1, 2, 255])
        #expect(restored.headers["Content-Type"] == "multipart/form-data; boundary=----x")
        #expect(throws: BodyRestorationError.bodyLost(channel: .bodyStore, id: "abc")) {
            try restorer.restore(ResourceRequest(method: "POST", url: "satchel://h.example/upload", headers: ["X-Satchel-Body-Id": "abc"]), takeStoredBody: take, proof: nil)
        }
        stored["form1"] = StoredBody(bytes: Array("a=1".utf8), contentType: "application/x-www-form-urlencoded")
        let form = try restorer.restore(ResourceRequest(url: "https://h.example/submit?keep=1&SATCHEL_BODY_ID=form1"), takeStoredBody: take, proof: nil)
        #expect(form.request.url == "https://h.example/submit?keep=1")
        #expect(form.request.method == "POST")
        #expect(form.request.body == Array("a=1".utf8))
    }

    @Test("no channel: the request passes untouched; two channels at once are refused")
    func channels() throws {
        let plain = ResourceRequest(method: "POST", url: "https://h.example/x", headers: ["Content-Type": "text/plain"], body: [1])
        #expect(try restorer.restore(plain, takeStoredBody: none, proof: nil) == (plain, .none))
        #expect(throws: BodyRestorationError.conflictingChannels([.header, .formQuery])) {
            try restorer.restore(ResourceRequest(url: "https://h.example/x?POST_DATA=a", headers: ["BODY": "b"]), takeStoredBody: none, proof: nil)
        }
    }

    @Test("the query string keeps duplicates, order and encodings when one parameter is removed")
    func queryString() {
        var query = QueryString("b=2&a=1&POST_DATA=x&a=%20&c")
        #expect(query.values("a") == ["1", "%20"])
        query.remove("POST_DATA")
        #expect(query.text == "b=2&a=1&a=%20&c")
        #expect(query.values("c") == [""])
    }
}
