import Foundation
import Logging
import SatchelBundle
import SatchelCache
import SatchelCore
import SatchelEngine
import SatchelHTTP
@testable import SatchelServer
import SatchelStore
import SatchelTestSupport
import Testing
import SatchelPublishing

/// A store with one package (shop, m.shop.example) and a running server on a free port.
final class ServerFixture: @unchecked Sendable {
    let folder: String
    let server: LocalServer
    let port: Int
    let store: PackageStore

    init(
        configuration: ServerConfiguration = ServerConfiguration(port: 0, accessLog: false), files: [String: String]? = nil, bigFile: Int = 0,
        routes: [Route] = [], timeouts: FetchTimeouts = FetchTimeouts(), logger: Logger = Logger(label: "satchel.access")
    ) async throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("satchel-server-\(UUID().uuidString)").path
        try makeTree(folder + "/src", files ?? ["index.html": "<!doctype html><html><head><title>t</title></head><body>home</body></html>", "app.js": "console.log(1)", "offline.html": "<h1>offline</h1>"])
        if bigFile > 0 {
            let bytes = (0..<bigFile).map { UInt8(truncatingIfNeeded: $0 &* 13) }
            try Data(bytes).write(to: URL(fileURLWithPath: folder + "/src/big.mp4"))
        }
        let options = PackOptions(
            id: try PackageID("shop"), version: try SemanticVersion("1.0.0"), scope: try Scope(hosts: [HostPattern("m.shop.example")]),
            offlinePage: try SafePath(validating: "offline.html"), routes: routes)
        let bundle = try Packer.pack(source: folder + "/src", options: options, outputFolder: folder + "/out").bundle
        store = try PackageStore(root: folder + "/store")
        _ = try store.install(bundle: bundle)
        let engine = try ResourceEngine(source: store, configuration: EngineConfiguration(activation: .immediate))
        let policy = NetworkPolicy(allowedHosts: configuration.allowedUpstreams, upstreamOverrides: configuration.upstreamOverrides, timeouts: timeouts)
        server = try LocalServer(store: store, engine: engine, policy: policy, configuration: configuration, logger: logger)
        port = try await server.start()
    }

    func stop() async {
        try? await server.shutdown()
        try? FileManager.default.removeItem(atPath: folder)
    }
}

@Suite("satchel serve over real sockets", .serialized)
struct ServerTests {
    @Test("a repeated plain GET is answered with the same bytes until a new version is activated; conditionals and ranges are never reused")
    func reusedAnswers() async throws {
        let fixture = try await ServerFixture()
        let client = try RawClient(port: fixture.port)
        let get = "GET /app.js HTTP/1.1\r\nHost: m.shop.example\r\n\r\n"
        client.send(get + get)
        let twice = await client.responses(2)
        try #require(twice.count == 2)
        #expect(twice[0].body == twice[1].body && twice[0].headers == twice[1].headers)
        #expect(String(decoding: twice[1].body, as: UTF8.self) == "console.log(1)")
        let etag = try #require(twice[0].headers["etag"])
        client.send("GET /app.js HTTP/1.1\r\nHost: m.shop.example\r\nIf-None-Match: \(etag)\r\n\r\nGET /app.js HTTP/1.1\r\nHost: m.shop.example\r\nRange: bytes=0-6\r\n\r\n")
        let conditional = await client.responses(2)
        #expect(conditional.map(\.status) == [304, 206])
        #expect(String(decoding: conditional[1].body, as: UTF8.self) == "console")

        // Version 2.0.0 becomes active: the very next request sees it.
        try makeTree(fixture.folder + "/src2", ["index.html": "<h1>two</h1>", "app.js": "console.log(2)", "offline.html": "<h1>offline</h1>"])
        let options = PackOptions(id: try PackageID("shop"), version: try SemanticVersion("2.0.0"), scope: try Scope(hosts: [HostPattern("m.shop.example")]))
        try fixture.store.install(bundle: try Packer.pack(source: fixture.folder + "/src2", options: options, outputFolder: fixture.folder + "/out2").bundle)
        client.send(get)
        let after = await client.responses(1)
        #expect(String(decoding: after.first?.body ?? [], as: UTF8.self) == "console.log(2)")
        let status = try JSONSerialization.jsonObject(with: Data(fixture.server.responder.statusJSON().utf8)) as? [String: Any]
        let logged = (status?["requests"] as? [[String: Any]])?.filter { ($0["url"] as? String)?.hasSuffix("/app.js") == true }
        #expect(logged?.count == 5, "every answer, reused or not, is in the request log")
        await fixture.stop()
    }

    @Test("X-Satchel-Cache: bogus is a 400 naming the value whether or not the same path was just served (every request field the engine reads keys the reuse)")
    func cachePolicyHeaderNeverReused() async throws {
        let fixture = try await ServerFixture()
        let client = try RawClient(port: fixture.port)
        let bogus = "GET /app.js HTTP/1.1\r\nHost: m.shop.example\r\nX-Satchel-Cache: bogus\r\n\r\n"
        client.send(bogus)
        let fresh = await client.responses(1)
        #expect(fresh.first?.status == 400)
        // A plain GET of the path, twice (the second is answered from the reused bytes), then the bogus one again.
        let get = "GET /app.js HTTP/1.1\r\nHost: m.shop.example\r\n\r\n"
        client.send(get + get + bogus)
        let after = await client.responses(3)
        #expect(after.map(\.status) == [200, 200, 400])
        #expect(String(decoding: after.last.map(\.body) ?? [], as: UTF8.self).contains("bogus"))
        await fixture.stop()
    }

    @Test("all five preconditions at the socket, after the plain answer was reused: If-Match and If-Unmodified-Since give 412, If-None-Match and If-Modified-Since 304, If-Range gates a range by tag or date")
    func preconditionsAtTheSocket() async throws {
        let fixture = try await ServerFixture()
        let client = try RawClient(port: fixture.port)
        let get = "GET /app.js HTTP/1.1\r\nHost: m.shop.example\r\n"
        client.send(get + "\r\n" + get + "\r\n")
        let plain = await client.responses(2)
        try #require(plain.count == 2)
        let etag = try #require(plain[0].headers["etag"])
        let modified = try #require(plain[0].headers["last-modified"])
        #expect(Timestamp(httpDate: modified) != nil, "Last-Modified is an HTTP date: \(modified)")
        let before = Timestamp(secondsSinceEpoch: Timestamp(httpDate: modified)!.secondsSinceEpoch - 86_400).httpDate
        let cases: [(String, Int, String)] = [
            ("If-Match: \"other\"", 412, ""),
            ("If-Match: \(etag)", 200, "console.log(1)"),
            ("If-Unmodified-Since: \(before)", 412, ""),
            ("If-Unmodified-Since: \(modified)", 200, "console.log(1)"),
            ("If-None-Match: \(etag)", 304, ""),
            ("If-Modified-Since: \(modified)", 304, ""),
            ("If-Modified-Since: \(before)", 200, "console.log(1)"),
            ("Range: bytes=0-6\r\nIf-Range: \(modified)", 206, "console"),
            ("Range: bytes=0-6\r\nIf-Range: \(before)", 200, "console.log(1)"),
            ("If-Match: \"other\"\r\nIf-None-Match: \(etag)", 412, ""),
        ]
        for (fields, status, body) in cases {
            client.send(get + fields + "\r\n\r\n")
            let answer = await client.responses(1).first
            #expect(answer?.status == status, "\(fields)")
            #expect(String(decoding: answer?.body ?? [], as: UTF8.self) == body, "\(fields)")
        }
        await fixture.stop()
    }

    @Test("the request log shows each URL absolute, credentials and body-channel values redacted, the rest as sent")
    func requestLogRedacts() async throws {
        let fixture = try await ServerFixture()
        let client = try RawClient(port: fixture.port)
        client.send("GET /app.js?v=1&access_token=abc&POST_DATA=x%3D1 HTTP/1.1\r\nHost: m.shop.example\r\n\r\n")
        client.send("GET http://user:pw@m.shop.example/index.html?page=2 HTTP/1.1\r\nHost: m.shop.example\r\n\r\n")
        let statuses = await client.responses(2).map(\.status)
        #expect(statuses.count == 2, "\(statuses)")
        let urls = fixture.server.responder.log.recent.map(\.url)
        #expect(urls == [
            "http://[redacted]@m.shop.example/index.html?page=2",
            "http://m.shop.example/app.js?v=1&access_token=[redacted]&POST_DATA=[redacted]",
        ])
        await fixture.stop()
    }

    @Test("origin mode with Host, keep-alive for several requests, and pipelining in order")
    func keepAliveAndPipelining() async throws {
        let fixture = try await ServerFixture()
        let client = try RawClient(port: fixture.port)
        client.send("GET / HTTP/1.1\r\nHost: m.shop.example\r\n\r\n")
        let first = await client.responses(1)
        try #require(first.count == 1)
        #expect(first[0].status == 200)
        #expect(String(decoding: first[0].body, as: UTF8.self).contains("home"))
        client.send("GET /app.js HTTP/1.1\r\nHost: m.shop.example\r\n\r\nGET /missing.png HTTP/1.1\r\nHost: m.shop.example\r\n\r\nHEAD /app.js HTTP/1.1\r\nHost: m.shop.example\r\n\r\n")
        let pipelined = await client.responses(3, heads: [2])
        try #require(pipelined.count == 3)
        // The miss goes to the network, where no host is allowed: 403, never an open proxy.
        #expect(pipelined.map(\.status) == [200, 403, 200])
        #expect(String(decoding: pipelined[0].body, as: UTF8.self) == "console.log(1)")
        #expect(pipelined[2].body.isEmpty)

        // Forty pipelined requests in one write, alternating event-loop hits and task-answered endpoints:
        // the answers come back in request order.
        let many = (0..<40).map { $0 % 2 == 0 ? "GET /app.js HTTP/1.1\r\nHost: m.shop.example\r\n\r\n" : "GET /_satchel/hook.js HTTP/1.1\r\nHost: 127.0.0.1:\(fixture.port)\r\n\r\n" }
        client.send(many.joined())
        let answers = await client.responses(40)
        try #require(answers.count == 40)
        #expect(answers.allSatisfy { $0.status == 200 })
        for (index, answer) in answers.enumerated() {
            let text = String(decoding: answer.body, as: UTF8.self)
            #expect(index % 2 == 0 ? text == "console.log(1)" : text.contains("satchel"), "answer \(index) out of order")
        }
        await fixture.stop()
    }
}

typealias Origin = TestOrigin

@Suite("satchel serve: limits, proxy mode, CONNECT, bodies, shutdown", .serialized)
struct ServerLimitTests {
    @Test("headers over 64 KiB get 431; a body over the limit gets 413; both close the connection")
    func sizeLimits() async throws {
        var configuration = ServerConfiguration(port: 0, accessLog: false)
        configuration.limits.maxBodyBytes = 1000
        let fixture = try await ServerFixture(configuration: configuration)
        let big = String(repeating: "a", count: 70_000)
        let client = try RawClient(port: fixture.port)
        client.send("GET / HTTP/1.1\r\nHost: m.shop.example\r\nX-Big: \(big)\r\n\r\n")
        let headers = await client.responses(1)
        #expect(headers.first?.status == 431)
        #expect(await client.read().closed)
        let post = try RawClient(port: fixture.port)
        post.send("POST /_satchel/bodies/x HTTP/1.1\r\nHost: m.shop.example\r\nContent-Length: 5000\r\n\r\n" + String(repeating: "b", count: 5000))
        #expect(await post.responses(1).first?.status == 413)
        #expect(await post.read().closed)
        // Just under the header limit is fine.
        let fine = try RawClient(port: fixture.port)
        fine.send("GET / HTTP/1.1\r\nHost: m.shop.example\r\nX-Big: \(String(repeating: "a", count: 60_000))\r\n\r\n")
        #expect(await fine.responses(1).first?.status == 200)
        await fixture.stop()
    }

    @Test("idle connections close; a slow request gets 408; connections over the cap are refused")
    func timeouts() async throws {
        var configuration = ServerConfiguration(port: 0, accessLog: false)
        configuration.limits.idleTimeout = .milliseconds(500)
        configuration.limits.readTimeout = .milliseconds(700)
        configuration.limits.maxConnections = 2
        let fixture = try await ServerFixture(configuration: configuration)
        let idle = try RawClient(port: fixture.port)
        let started = Date()
        #expect(await idle.read().closed)
        // Closed by the server's own timer (its event loop, not the test's pool): well within the client's own 10 s read
        // timeout, which would otherwise end the read unclosed.
        #expect(Date().timeIntervalSince(started) < 10, "the idle timeout is half a second")
        let slow = try RawClient(port: fixture.port)
        slow.send("GET / HTTP/1.1\r\nHost: m.shop.example\r\n")  // the head never ends
        // Keep the connection busy enough not to be idle, but never finish the request.
        for _ in 0..<3 {
            try await Task.sleep(for: .milliseconds(300))
            slow.send("X-Drip: 1\r\n")
        }
        let answer = await slow.read()
        #expect(String(decoding: answer.bytes, as: UTF8.self).hasPrefix("HTTP/1.1 408"))
        let a = try RawClient(port: fixture.port)
        let b = try RawClient(port: fixture.port)
        let c = try RawClient(port: fixture.port)
        c.send("GET / HTTP/1.1\r\nHost: m.shop.example\r\n\r\n")
        #expect(await c.read().bytes.isEmpty, "the third connection is over the cap")
        a.send("GET / HTTP/1.1\r\nHost: m.shop.example\r\n\r\n")
        #expect(await a.responses(1).first?.status == 200)
        _ = b
        await fixture.stop()
    }

    @Test("forward-proxy mode: absolute-form targets go through the engine; misses reach the allowed upstream; CONNECT only to allowed hosts")
    func proxy() async throws {
        let origin = try await Origin()
        defer { origin.stop() }
        let configuration = ServerConfiguration(
            port: 0, allowedUpstreams: [try HostPattern("m.shop.example"), try HostPattern("api.example")],
            upstreamOverrides: ["m.shop.example": "http://127.0.0.1:\(origin.port)", "api.example": "http://127.0.0.1:\(origin.port)"], accessLog: false)
        let fixture = try await ServerFixture(configuration: configuration)
        let client = try RawClient(port: fixture.port)
        client.send("GET http://m.shop.example/app.js HTTP/1.1\r\nHost: m.shop.example\r\n\r\n")
        let hit = await client.responses(1)
        #expect(hit.first?.status == 200)
        #expect(bodyText(hit.first) == "console.log(1)")
        client.send("POST http://m.shop.example/echo?x=1 HTTP/1.1\r\nHost: m.shop.example\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello")
        let echoed = await client.responses(1)
        #expect(echoed.first?.status == 200)
        let echo = try JSONSerialization.jsonObject(with: Data(echoed.first?.body ?? [])) as? [String: Any]
        #expect(echo?["path"] as? String == "/echo?x=1")
        #expect(echo?["body"] as? String == Data("hello".utf8).base64EncodedString())

        let denied = try RawClient(port: fixture.port)
        denied.send("CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n")
        #expect(await denied.responses(1).first?.status == 403)
        let tunnel = try RawClient(port: fixture.port)
        tunnel.send("CONNECT api.example:443 HTTP/1.1\r\nHost: api.example:443\r\n\r\n")
        #expect(await tunnel.responses(1).first?.status == 200)
        // Through the tunnel, plain HTTP to the origin the override named.
        tunnel.send("GET /echo HTTP/1.1\r\nHost: api.example\r\n\r\n")
        let through = await tunnel.responses(1)
        #expect(through.first?.status == 200)
        #expect(bodyText(through.first).contains("\"method\": \"GET\""))
        await fixture.stop()
    }

    @Test("with body-loss emulation, a hooked request arrives whole and a plain one arrives empty")
    func bodyLoss() async throws {
        let origin = try await Origin()
        defer { origin.stop() }
        let configuration = ServerConfiguration(
            port: 0, allowedUpstreams: [try HostPattern("m.shop.example")], upstreamOverrides: ["m.shop.example": "http://127.0.0.1:\(origin.port)"],
            injectHook: true, emulateBodyLoss: true, accessLog: false)
        let fixture = try await ServerFixture(configuration: configuration)
        let secret = try #require(fixture.server.responder.loader.engine.bodyProofSecret)
        let client = try RawClient(port: fixture.port)
        // What the hook sends: the body in a header with its proof (the body itself is dropped).
        let token = BodyProof.attaching(to: ResourceRequest(method: "POST", url: "http://m.shop.example/echo", headers: ["X-Satchel-Body": "caf%C3%A9"]), secret: secret).headers["X-Satchel-Token"]!
        client.send("POST http://m.shop.example/echo HTTP/1.1\r\nHost: m.shop.example\r\nX-Satchel-Body: caf%C3%A9\r\nX-Satchel-Token: \(token)\r\nX-Satchel-Content-Type: text/plain\r\nContent-Length: 5\r\n\r\ncafé")
        let restored = await client.responses(1)
        let restoredEcho = try JSONSerialization.jsonObject(with: Data(restored.first?.body ?? [])) as? [String: Any]
        #expect(restoredEcho?["body"] as? String == Data("café".utf8).base64EncodedString())
        client.send("POST http://m.shop.example/echo HTTP/1.1\r\nHost: m.shop.example\r\nContent-Length: 4\r\n\r\nlost")
        let lost = await client.responses(1)
        let lostEcho = try JSONSerialization.jsonObject(with: Data(lost.first?.body ?? [])) as? [String: Any]
        #expect(lostEcho?["body"] as? String == "", "without the hook the body is lost, as in a web view")
        // The body store endpoint (which also wants a proof) and the request naming the stored body.
        let storeToken = BodyProof.make(secret: secret, channel: .bodyStore, binding: "b1", time: Int64(Date().timeIntervalSince1970 * 1000), nonce: "store-nonce-1")
        client.send("POST /_satchel/bodies/b1 HTTP/1.1\r\nHost: m.shop.example\r\nContent-Type: application/octet-stream\r\nContent-Length: 3\r\n\r\n\u{1}\u{2}\u{3}")
        #expect(await client.responses(1).first?.status == 403, "an unproven body is not stored")
        client.send("POST /_satchel/bodies/b1 HTTP/1.1\r\nHost: m.shop.example\r\nX-Satchel-Token: \(storeToken)\r\nContent-Type: application/octet-stream\r\nContent-Length: 3\r\n\r\n\u{1}\u{2}\u{3}")
        #expect(await client.responses(1).first?.status == 204)
        let idToken = BodyProof.attaching(to: ResourceRequest(method: "POST", url: "http://m.shop.example/echo", headers: ["X-Satchel-Body-Id": "b1"]), secret: secret).headers["X-Satchel-Token"]!
        client.send("POST http://m.shop.example/echo HTTP/1.1\r\nHost: m.shop.example\r\nX-Satchel-Body-Id: b1\r\nX-Satchel-Token: \(idToken)\r\nContent-Length: 0\r\n\r\n")
        let stored = try JSONSerialization.jsonObject(with: Data(await client.responses(1).first?.body ?? [])) as? [String: Any]
        #expect(stored?["body"] as? String == Data([1, 2, 3]).base64EncodedString())
        client.send("GET /_satchel/status.json HTTP/1.1\r\nHost: localhost:\(fixture.port)\r\n\r\n")
        let status = try JSONSerialization.jsonObject(with: Data(await client.responses(1).first?.body ?? [])) as? [String: Any]
        let channels = (status?["requests"] as? [[String: Any]] ?? []).compactMap { $0["bodyChannel"] as? String }
        #expect(channels.contains("header"))
        #expect(channels.contains("body-store"))
        // HTML gets the hook; the hook is served.
        client.send("GET / HTTP/1.1\r\nHost: m.shop.example\r\n\r\nGET /_satchel/hook.js HTTP/1.1\r\nHost: 127.0.0.1:\(fixture.port)\r\n\r\n")
        let pages = await client.responses(2)
        #expect(bodyText(pages.first).contains("<head><script>/* Satchel body hook"), "inline: no script URL another site could load")
        // Pages and frames get the hook; HTML a script fetches as data does not.
        client.send("GET / HTTP/1.1\r\nHost: m.shop.example\r\nSec-Fetch-Dest: empty\r\n\r\nGET / HTTP/1.1\r\nHost: m.shop.example\r\nSec-Fetch-Dest: iframe\r\n\r\n")
        let fetched = await client.responses(2)
        #expect(!bodyText(fetched.first).contains("Satchel body hook"))
        #expect(bodyText(fetched.last).contains("Satchel body hook"))
        #expect(bodyText(pages.last).contains("http://m.shop.example"))
        await fixture.stop()
    }

    @Test("graceful shutdown finishes the response in flight, then refuses new connections")
    func shutdown() async throws {
        let fixture = try await ServerFixture(bigFile: 32 << 20)
        let client = try RawClient(port: fixture.port)
        client.send("GET /big.mp4 HTTP/1.1\r\nHost: m.shop.example\r\n\r\n")
        let partial = await client.read { $0.count > 1 << 20 }
        #expect(!partial.closed)
        let stopping = Task { try await fixture.server.shutdown() }
        var received = partial.bytes
        while true {
            let (more, closed) = await client.read { _ in true }
            received += more
            if closed || more.isEmpty { break }
        }
        try await stopping.value
        let head = received.firstRange(of: Array("\r\n\r\n".utf8))!
        #expect(received.count - head.upperBound == 32 << 20, "the whole body arrived")
        #expect((try? RawClient(port: fixture.port)) == nil, "no new connections after shutdown")
        try? FileManager.default.removeItem(atPath: fixture.folder)
    }

    @Test("--publish serves a folder of bundles and catalogs with Range and ETag")
    func publish() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("satchel-publish-\(UUID().uuidString)").path
        try makeTree(folder, [
            "catalog.json": "{\"schema\":1}", "bundles/shop-1.0.0.zip": "0123456789", "objects/ab/\(String(repeating: "ab", count: 32)).gz": "object",
        ])
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let fixture = try await ServerFixture(configuration: ServerConfiguration(port: 0, defaultHost: "m.shop.example", publishFolder: folder, accessLog: false))
        let client = try RawClient(port: fixture.port)
        client.send("GET /catalog.json HTTP/1.1\r\nHost: 127.0.0.1:\(fixture.port)\r\n\r\n")
        let catalog = await client.responses(1)
        #expect(catalog.first?.status == 200)
        #expect(bodyText(catalog.first) == "{\"schema\":1}")
        let etag = catalog.first?.headers["etag"] ?? ""
        client.send("GET /bundles/shop-1.0.0.zip HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: bytes=4-\r\n\r\nGET /catalog.json HTTP/1.1\r\nHost: 127.0.0.1\r\nIf-None-Match: \(etag)\r\n\r\n")
        let more = await client.responses(2)
        #expect(more.first?.status == 206)
        #expect(bodyText(more.first) == "456789")
        #expect(more.last?.status == 304)
        // What a CDN in front may keep: objects for good, bundles for a day, the catalog for a minute.
        #expect(catalog.first?.headers["cache-control"] == "public, max-age=60, no-transform")
        #expect(more.first?.headers["cache-control"] == "public, max-age=86400, no-transform")
        client.send("HEAD /objects/ab/\(String(repeating: "ab", count: 32)).gz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let object = await client.responses(1, heads: [0])
        #expect(object.first?.headers["cache-control"] == "public, max-age=31536000, immutable, no-transform")
        await fixture.stop()
    }

    @Test("--reports: a POST to /_satchel/reports under any Host, and a catalog request's report headers, each append a line; a bad report is a 400")
    func reports() async throws {
        try await withTemporaryFolder { folder async throws in
            try makeTree(folder + "/release", ["catalog.json": "{\"schema\":1}"])
            var configuration = ServerConfiguration(port: 0, defaultHost: "m.shop.example", publishFolder: folder + "/release", accessLog: false)
            configuration.reports = try ReportLog(path: folder + "/reports.jsonl")
            let fixture = try await ServerFixture(configuration: configuration)
            let report = DeviceReport(channel: try ReleaseChannel("beta"), items: [
                .init(id: try PackageID("shop"), role: .active, version: try SemanticVersion("1.1.0"), token: "0123456789abcdef", state: "trial"),
            ])
            let body = String(decoding: report.canonicalJSON.bytes, as: UTF8.self)
            let headers = report.headerFields.map { "\($0.name): \($0.value)\r\n" }.joined()
            let client = try RawClient(port: fixture.port)
            // Through a CDN: its own Host.
            client.send("POST /_satchel/reports HTTP/1.1\r\nHost: origin\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            client.send("POST /_satchel/reports HTTP/1.1\r\nHost: origin\r\nContent-Length: 7\r\n\r\n{\"x\":1}")
            client.send("GET /catalog.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\(headers)\r\n")
            let answers = await client.responses(3)
            #expect(answers.map(\.status) == [204, 400, 200])
            #expect(bodyText(answers[1]).contains("device report is malformed"))
            await fixture.stop()
            let lines = try String(contentsOfFile: folder + "/reports.jsonl", encoding: .utf8).split(separator: "\n")
            let records = try lines.map { try ReportRecord.parse(line: Array($0.utf8)) }
            #expect(records.map(\.via) == ["post", "header"] && records.allSatisfy { $0.report == report })
        }
    }
}

@Suite("satchel serve with its HTTP cache, over real sockets", .serialized)
struct ServerCacheTests {
    @Test("a fresh hit's encoded answer is sent again only while it stays the same: Age moves on each second, and a POST's invalidation ends it at once")
    func reusedHits() async throws {
        let origin = try await TestOrigin()
        defer { origin.stop() }
        try await withTemporaryFolder { folder async throws in
            let store = try PackageStore(root: folder + "/store")
            let engine = try ResourceEngine(source: store, configuration: EngineConfiguration(activation: .immediate))
            // One clock for the cache and the origin, moved by the test: Age moves when the test says a second passed.
            let clock = Locked(Date().timeIntervalSince1970.rounded(.down))
            try await origin.setClock(clock.withLock { $0 })
            let cache = try HTTPCache(configuration: CacheConfiguration(folder: folder + "/cache", mode: .shared, clock: { clock.withLock { $0 } }))
            let policy = NetworkPolicy(allowedHosts: [try HostPattern("api.example")], upstreamOverrides: ["api.example": origin.base])
            let server = try LocalServer(
                store: store, engine: engine, policy: policy,
                configuration: ServerConfiguration(port: 0, defaultHost: "api.example", allowedUpstreams: policy.allowedHosts, accessLog: false),
                cache: cache)
            let port = try await server.start()
            let client = try RawClient(port: port)
            let path = "/cached/hot?h=Cache-Control%3Amax-age%3D600"
            let get = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"
            client.send(get)
            let first = try #require(await client.responses(1).first)
            #expect(first.headers["cache-status"] == "satchel; fwd=uri-miss; stored")
            let stored = await eventually(within: .seconds(120)) { cache.statistics.stored == 1 }
            #expect(stored, "the first answer was never stored")
            client.send(get + get + get)
            let hits = await client.responses(3)
            #expect(hits.count == 3 && hits.allSatisfy { $0.headers["cache-status"]?.hasPrefix("satchel; hit") == true && $0.body == first.body })
            try await origin.setClock(clock.withLock { $0 += 1; return $0 })
            client.send(get)
            let later = try #require(await client.responses(1).first)
            #expect(Int(later.headers["age"] ?? "") ?? 0 >= 1, "a second on, Age moved: the old encoded answer was not sent")
            // Invalidation by a POST to the URL: the very next GET goes to the origin.
            client.send("POST \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: 0\r\n\r\n")
            _ = await client.responses(1)
            client.send(get)
            let fetched = try #require(await client.responses(1).first)
            #expect(fetched.headers["cache-status"]?.contains("fwd=uri-miss") == true, "\(fetched.headers["cache-status"] ?? "")")
            #expect(cache.statistics.hits >= 4)
            try await server.shutdown()
        }
    }
}
