import Foundation
import Logging
import SatchelCore
import SatchelBundle
import SatchelEngine
import SatchelHTTP
@testable import SatchelServer
import SatchelStore
import SatchelTestSupport
import Testing
import SatchelPublishing

/// Every line the access log writes, kept for the test to read.
final class CapturedLog: LogHandler, @unchecked Sendable {
    let lines = Locked([String]())
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String, file: String, function: String, line: UInt) {
        lines.withLock { $0.append(message.description) }
    }
}

/// Body channels that cannot be forged, and a server that leaks nothing: through real sockets, against a real
/// origin that records every request it sees.
@Suite("satchel serve: proofs of origin and what it shows", .serialized)
struct SecurityTests {
    func server(origin: TestOrigin, log: CapturedLog? = nil) async throws -> ServerFixture {
        let configuration = ServerConfiguration(
            port: 0, allowedUpstreams: [try HostPattern("m.shop.example")], upstreamOverrides: ["m.shop.example": origin.base], injectHook: true,
            emulateBodyLoss: true, accessLog: log != nil)
        return try await ServerFixture(configuration: configuration, logger: log.map { handler in Logger(label: "satchel.access") { _ in handler } } ?? Logger(label: "x"))
    }

    static var nowMilliseconds: Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }

    @Test("a POST_DATA GET without a proof, with a stale proof or with another launch's proof is refused (403) and nothing reaches the origin")
    func forgedBodiesRefused() async throws {
        let origin = try await TestOrigin()
        defer { origin.stop() }
        let fixture = try await server(origin: origin)
        let secret = try #require(fixture.server.responder.loader.engine.bodyProofSecret)
        let form = "/echo?POST_DATA=user%3Dalice%26password%3Dhunter2"
        let binding = "user%3Dalice%26password%3Dhunter2"
        let stale = BodyProof.make(secret: secret, channel: .formQuery, binding: binding, time: Self.nowMilliseconds - 600_000, nonce: "stale-nonce-1")
        let otherLaunch = BodyProof.make(secret: .random(), channel: .formQuery, binding: binding, time: Self.nowMilliseconds, nonce: "other-nonce-1")
        let otherBody = BodyProof.make(secret: secret, channel: .formQuery, binding: "user%3Dmallory", time: Self.nowMilliseconds, nonce: "other-body-1")
        for (label, target) in [
            ("no proof (an <img src>, a link, another site)", form), ("a stale proof", form + "&SATCHEL_TOKEN=" + stale),
            ("another launch's proof", form + "&SATCHEL_TOKEN=" + otherLaunch), ("a proof for another body", form + "&SATCHEL_TOKEN=" + otherBody),
        ] {
            let client = try RawClient(port: fixture.port)
            client.send("GET \(target) HTTP/1.1\r\nHost: m.shop.example\r\nCookie: session=abc\r\n\r\n")
            let answer = await client.responses(1).first
            #expect(answer?.status == 403, "\(label)")
            #expect(answer?.values("X-Content-Type-Options") == ["nosniff"], "\(label)")
        }
        #expect(try await origin.events().filter { $0.hasPrefix("seen:") }.isEmpty, "nothing was sent upstream")
        // The hook's own proof is accepted, once.
        let good = BodyProof.make(secret: secret, channel: .formQuery, binding: binding, time: Self.nowMilliseconds, nonce: "good-nonce-1")
        let client = try RawClient(port: fixture.port)
        client.send("GET \(form)&SATCHEL_TOKEN=\(good) HTTP/1.1\r\nHost: m.shop.example\r\n\r\nGET \(form)&SATCHEL_TOKEN=\(good) HTTP/1.1\r\nHost: m.shop.example\r\n\r\n")
        let answers = await client.responses(2)
        #expect(answers.map(\.status) == [200, 403], "accepted, then refused as a replay")
        let echo = try JSONSerialization.jsonObject(with: Data(answers.first?.body ?? [])) as? [String: Any]
        #expect(echo?["method"] as? String == "POST")
        #expect(echo?["path"] as? String == "/echo", "POST_DATA and the proof are not forwarded")
        #expect(try await origin.events().filter { $0.hasPrefix("seen:") } == ["seen: POST /echo"])
        let status = try JSONSerialization.jsonObject(with: Data(fixture.server.responder.statusJSON().utf8)) as? [String: Any]
        let outcomes = (status?["requests"] as? [[String: Any]] ?? []).compactMap { $0["outcome"] as? String }
        #expect(outcomes.filter { $0 == "refused" }.count == 5, "every refusal is logged as one")
        await fixture.stop()
    }

    @Test("the access log, the status page and status.json show no body value, credential, cookie or secret")
    func nothingSecretLeaves() async throws {
        let origin = try await TestOrigin()
        defer { origin.stop() }
        let log = CapturedLog()
        let fixture = try await server(origin: origin, log: log)
        let secret = try #require(fixture.server.responder.loader.engine.bodyProofSecret)
        let client = try RawClient(port: fixture.port)
        // The hook (and so the secret) is in the page the app serves...
        client.send("GET / HTTP/1.1\r\nHost: m.shop.example\r\n\r\n")
        #expect(bodyText(await client.responses(1).first).contains(secret.text))
        // ...and then a form with a password, a login link with credentials, a header body, cookies and authorization.
        let form = BodyProof.attaching(to: ResourceRequest(url: "http://m.shop.example/echo?POST_DATA=user%3Dalice%26password%3Dhunter2"), secret: secret)
        let header = BodyProof.attaching(to: ResourceRequest(method: "POST", url: "http://m.shop.example/echo", headers: ["X-Satchel-Body": "card%3D4111111111111111"]), secret: secret)
        client.send("GET \(form.url) HTTP/1.1\r\nHost: m.shop.example\r\nCookie: session=cookie-value-42\r\n\r\n")
        client.send("POST /echo HTTP/1.1\r\nHost: m.shop.example\r\nX-Satchel-Body: card%3D4111111111111111\r\nX-Satchel-Token: \(header.headers["X-Satchel-Token"]!)\r\nAuthorization: Bearer auth-value-77\r\nContent-Length: 0\r\n\r\n")
        client.send("GET /echo?user=alice&password=hunter3&access_token=tok-99&q=shoes HTTP/1.1\r\nHost: m.shop.example\r\n\r\n")
        #expect(await client.responses(3).map(\.status) == [200, 200, 200])
        client.send("GET /_satchel/status.json HTTP/1.1\r\nHost: 127.0.0.1:\(fixture.port)\r\n\r\nGET /_satchel/ HTTP/1.1\r\nHost: localhost:\(fixture.port)\r\n\r\n")
        let pages = await client.responses(2)
        let shown = [bodyText(pages.first), bodyText(pages.last), log.lines.withLock { $0.joined(separator: "\n") }]
        #expect(shown[0].contains("\"requests\"") && shown[1].contains("Latest requests") && !shown[2].isEmpty)
        for (place, text) in zip(["status.json", "the status page", "the access log"], shown) {
            for secretValue in [secret.text, "hunter2", "alice%26password", "4111111111111111", "cookie-value-42", "auth-value-77", "hunter3", "tok-99", "SATCHEL_TOKEN=1"] {
                #expect(!text.contains(secretValue), "\(place) shows \(secretValue)")
            }
            #expect(text.contains("q=shoes"), "\(place) still shows what is not secret")
        }
        await fixture.stop()
    }

    @Test("the status endpoints answer on the server's own address only, never under a package's host")
    func statusOnOwnAddressOnly() async throws {
        let origin = try await TestOrigin()
        defer { origin.stop() }
        let fixture = try await server(origin: origin)
        let client = try RawClient(port: fixture.port)
        for (label, request, isStatus) in [
            ("package host, origin form", "GET /_satchel/status.json HTTP/1.1\r\nHost: m.shop.example\r\n\r\n", false),
            ("package host, proxy form", "GET http://m.shop.example/_satchel/status.json HTTP/1.1\r\nHost: m.shop.example\r\n\r\n", false),
            ("loopback without the port", "GET /_satchel/status.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", false),
            ("own address", "GET /_satchel/status.json HTTP/1.1\r\nHost: 127.0.0.1:\(fixture.port)\r\n\r\n", true),
            ("own address, proxy form", "GET http://localhost:\(fixture.port)/_satchel/status.json HTTP/1.1\r\nHost: localhost:\(fixture.port)\r\n\r\n", true),
        ] {
            client.send(request)
            let answer = await client.responses(1).first
            let json = (try? JSONSerialization.jsonObject(with: Data(answer?.body ?? []))) as? [String: Any]
            #expect((json?["requests"] != nil) == isStatus, "\(label): \(answer?.status ?? 0)")
        }
        await fixture.stop()
    }
}

@Suite("satchel serve: the hook in a built-in's large page")
struct BuiltInHookTests {
    @Test("a page a built-in bundle streams (deflated, over the small-file size) still gets the hook, whole")
    func largeBuiltInPage() async throws {
        try await withTemporaryFolder { folder async throws in
            let filler = String(repeating: "<p>offline catalogue entry</p>\n", count: 8000)
            try makeTree(folder + "/src", ["index.html": "<!doctype html><html><head><title>big</title></head><body>\(filler)</body></html>"])
            let options = PackOptions(id: try PackageID("big"), version: try SemanticVersion("1.0.0"), scope: try Scope(hosts: [HostPattern("big.example")]))
            let bundle = try Packer.pack(source: folder + "/src", options: options, outputFolder: folder + "/out").bundle
            let store = try PackageStore(root: folder + "/store", configuration: StoreConfiguration(builtIns: [bundle]))
            let engine = try ResourceEngine(source: store, configuration: EngineConfiguration(activation: .immediate))
            let server = try LocalServer(store: store, engine: engine, policy: NetworkPolicy(allowedHosts: []), configuration: ServerConfiguration(port: 0, injectHook: true, accessLog: false))
            let port = try await server.start()
            // The server inflates this page from a task on the cooperative pool; in the full suite, tests that block
            // that pool's two threads (running the CLI, waiting for processes) held it back past 10 s twice.
            let client = try RawClient(port: port, timeout: 60)
            client.send("GET / HTTP/1.1\r\nHost: big.example\r\n\r\n")
            let page = try #require(await client.responses(1).first)
            #expect(page.status == 200)
            #expect(bodyText(page).contains("Satchel body hook"))
            #expect(bodyText(page).hasSuffix(filler + "</body></html>"), "the whole page, after the hook")
            try await server.shutdown()
        }
    }
}
