import Foundation
import SatchelBundle
import SatchelCore
import SatchelEngine
import SatchelHTTP
@testable import SatchelServer
import SatchelStore
import SatchelTestSupport
import Testing
import SatchelPublishing

/// The breaks a new user found in the network path and the request edge, each through real sockets against a
/// real origin: what the client receives is what the origin sent, and what the origin receives is what the
/// client sent.
@Suite("satchel serve: the network path and the request edge", .serialized)
struct NetworkPathTests {
    /// A server whose misses for m.shop.example and api.example go to `origin`.
    func proxying(to origin: TestOrigin, routes: [Route] = [], configure: (inout ServerConfiguration) -> Void = { _ in }) async throws -> ServerFixture {
        var configuration = ServerConfiguration(
            port: 0, allowedUpstreams: [try HostPattern("m.shop.example"), try HostPattern("api.example")],
            upstreamOverrides: ["m.shop.example": origin.base, "api.example": origin.base], accessLog: false)
        configure(&configuration)
        return try await ServerFixture(configuration: configuration, routes: routes)
    }

    @Test("bytes an origin sends past a response's end (a body to a HEAD) never become the answer to the next, pipelined request")
    func strayBytesAfterAResponse() async throws {
        let origin = try await TestOrigin()
        defer { origin.stop() }
        let fixture = try await proxying(to: origin)
        let client = try RawClient(port: fixture.port)
        // The GET is sent upstream as the HEAD's answer ends, on the connection that answer came on, while the
        // stray bytes behind it are still in the same read.
        client.send("HEAD http://api.example/headbody HTTP/1.1\r\nHost: api.example\r\n\r\nGET http://api.example/echo HTTP/1.1\r\nHost: api.example\r\n\r\n")
        let answers = await client.responses(2, heads: [0])
        #expect(answers.map(\.status) == [200, 200], "\(answers.map { String(decoding: $0.body, as: UTF8.self) })")
        #expect(answers.last.map { String(decoding: $0.body, as: UTF8.self).contains("\"/echo\"") } == true)
        await fixture.stop()
    }

    @Test("a miss whose fetch fails before it starts (a TRACE with a body) is answered in order between pipelined misses")
    func fetchFailingAtOnceBetweenPipelinedMisses() async throws {
        let origin = try await TestOrigin()
        defer { origin.stop() }
        let fixture = try await proxying(to: origin)
        let client = try RawClient(port: fixture.port)
        // The TRACE's answer is made while the server is still handing the request over (no connection is opened
        // for it), so the answer and the bookkeeping of the request in flight must not cross.
        client.send(
            "GET http://api.example/echo?first HTTP/1.1\r\nHost: api.example\r\n\r\n"
                + "TRACE http://api.example/echo HTTP/1.1\r\nHost: api.example\r\nContent-Length: 3\r\n\r\nabc"
                + "GET http://api.example/echo?third HTTP/1.1\r\nHost: api.example\r\n\r\n")
        let answers = await client.responses(3)
        #expect(answers.map(\.status) == [200, 400, 200])
        #expect(answers.first.map { String(decoding: $0.body, as: UTF8.self).contains("first") } == true)
        #expect(answers.dropFirst().first?.values("X-Satchel-Error").first?.contains("TRACE") == true)
        #expect(answers.last.map { String(decoding: $0.body, as: UTF8.self).contains("third") } == true)
        // Alone on a connection, and again on the same connection: nothing is left waiting.
        client.send("TRACE http://api.example/echo HTTP/1.1\r\nHost: api.example\r\nContent-Length: 1\r\n\r\nx")
        #expect(await client.responses(1).map(\.status) == [400])
        client.send("GET http://api.example/echo?last HTTP/1.1\r\nHost: api.example\r\n\r\n")
        #expect(await client.responses(1).map(\.status) == [200])
        await fixture.stop()
    }

    @Test("an upgrade the origin was not asked for is a 502 for that request only: the next one on the connection is answered")
    func unaskedUpgradeThroughServer() async throws {
        let origin = try await TestOrigin()
        defer { origin.stop() }
        let fixture = try await proxying(to: origin)
        let client = try RawClient(port: fixture.port)
        client.send("GET http://api.example/upgrade HTTP/1.1\r\nHost: api.example\r\n\r\n")
        let first = await client.responses(1)
        #expect(first.map(\.status) == [502])
        #expect(first.first?.values("X-Satchel-Error").first?.contains("101") == true)
        // A request on the upgraded connection would wait for its head timeout and end in a 504: a 200 says it went on a
        // new one.
        client.send("GET http://api.example/echo HTTP/1.1\r\nHost: api.example\r\n\r\n")
        #expect(await client.responses(1).map(\.status) == [200])
        await fixture.stop()
    }

    @Test("two Set-Cookie fields reach the client as two lines; Content-Length is kept; nothing is added to the request")
    func headersAsSent() async throws {
        let origin = try await TestOrigin()
        defer { origin.stop() }
        let fixture = try await proxying(to: origin)
        let client = try RawClient(port: fixture.port)
        client.send("GET http://api.example/cookies HTTP/1.1\r\nHost: api.example\r\n\r\n")
        let response = try #require(await client.responses(1).first)
        #expect(response.values("Set-Cookie") == ["a=1; Path=/; Expires=Wed, 21 Oct 2037 07:28:00 GMT; HttpOnly", "b=2; Path=/"])
        #expect(response.values("X-Repeated") == ["first", "second", "third, with a comma"])
        #expect(response.values("Content-Length") == ["11"])
        #expect(response.values("Transfer-Encoding").isEmpty, "a known length is not turned into chunks")
        #expect(bodyText(response) == "two cookies")

        // The request the origin saw: the client's fields, in order, and nothing the client did not send.
        client.send("POST http://api.example/echo HTTP/1.1\r\nHost: api.example\r\nAccept: */*\r\nX-Twice: 1\r\nCookie: s=1\r\nX-Twice: 2\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi")
        let echoed = try #require(await client.responses(1).first)
        let echo = try JSONSerialization.jsonObject(with: Data(echoed.body)) as? [String: Any]
        let names = (echo?["headers"] as? [[String]] ?? []).map { $0[0] }
        #expect(names == ["Host", "Accept", "X-Twice", "Cookie", "X-Twice", "Content-Type", "Content-Length"])
        await fixture.stop()
    }

    @Test("a network-first:1000 route whose upstream sends 30 bytes over 2.4 s gives the client all 30 bytes")
    func routeTimeoutBoundsTheHeadOnly() async throws {
        let origin = try await TestOrigin()
        defer { origin.stop() }
        let fixture = try await proxying(to: origin, routes: [try Route(parsing: "/drip=network-first:1000")])
        let client = try RawClient(port: fixture.port)
        client.send("GET /drip?n=30&seconds=2.4 HTTP/1.1\r\nHost: m.shop.example\r\n\r\n")
        let response = try #require(await client.responses(1).first)
        #expect(response.status == 200)
        #expect(response.body == (0..<30).map { UInt8(0x41 + $0 % 26) })
        // A head later than the route's timeout falls back to the package (here: not in it, so the network's 504).
        let late = try RawClient(port: fixture.port)
        late.send("GET /drip?n=1&seconds=2 HTTP/1.1\r\nHost: m.shop.example\r\n\r\n")
        #expect(await late.responses(1).first?.status == 200, "the head comes at once; only the body is slow")
        await fixture.stop()
    }

    @Test("a client that stops reading holds the upstream back; a client that goes away closes the upstream request")
    func backpressureAndCancellation() async throws {
        let origin = try await TestOrigin()
        defer { origin.stop() }
        let fixture = try await proxying(to: origin)
        let slow = try RawClient(port: fixture.port, receiveBuffer: 64 << 10)
        slow.send("GET http://api.example/big?n=\(512 << 20) HTTP/1.1\r\nHost: api.example\r\n\r\n")
        _ = await slow.read { $0.count >= 1 << 20 }
        try await Task.sleep(for: .seconds(2))
        slow.close()
        var sent: Int?
        var finished = false
        for _ in 0..<100 where sent == nil && !finished {
            try await Task.sleep(for: .milliseconds(100))
            let events = try await origin.events()
            finished = events.contains("big: finished")
            sent = events.compactMap { $0.hasPrefix("big: client went away after ") ? Int($0.split(separator: " ").dropLast().last ?? "") : nil }.first
        }
        #expect(!finished, "the origin sent all 512 MB: nothing held it back")
        let bytes = try #require(sent, "the upstream request was closed when the client went away")
        #expect(bytes < 64 << 20, "the origin sent \(bytes) bytes to a client that read 1 MB")

        let leaving = try RawClient(port: fixture.port)
        leaving.send("GET http://api.example/hang HTTP/1.1\r\nHost: api.example\r\n\r\n")
        _ = await leaving.read { String(decoding: $0, as: UTF8.self).contains("\r\n\r\n") }
        leaving.close()
        #expect(try await origin.sawEvent("hang: client went away"))
        await fixture.stop()
    }

    @Test("a client that reads slowly, pausing again and again, gets every byte of a large upstream body")
    func slowReaderGetsEverything() async throws {
        let origin = try await TestOrigin()
        defer { origin.stop() }
        let fixture = try await proxying(to: origin)
        for round in 0..<3 {
            let client = try RawClient(port: fixture.port, receiveBuffer: 16 << 10)
            let size = 24 << 20
            client.send("GET http://api.example/big?n=\(size) HTTP/1.1\r\nHost: api.example\r\n\r\n")
            var received: [UInt8] = []
            while RawClient.parse(received) == nil {
                let (more, closed) = await client.read { _ in true }
                received += more
                if closed || more.isEmpty { break }
                if received.count % 7 == round { try await Task.sleep(for: .milliseconds(1)) }
            }
            guard let response = RawClient.parse(received) else {
                Issue.record("round \(round): the body stopped after \(received.count) bytes")
                break
            }
            #expect(response.0.body.count == size)
            #expect(response.0.body.prefix(512) == ArraySlice((0..<512).map { UInt8($0 % 256) }))
        }
        await fixture.stop()
    }

    @Test("two Host fields are a 400 and cannot put one package's page in the cache under another host")
    func twoHostFields() async throws {
        let fixture = try await ServerFixture()
        try makeTree(fixture.folder + "/docs", ["docs/index.html": "<h1>docs</h1>", "index.html": "docs home"])
        let docs = PackOptions(id: try PackageID("docs"), version: try SemanticVersion("1.0.0"), scope: try Scope(hosts: [HostPattern("docs.example")]))
        try fixture.store.install(bundle: try Packer.pack(source: fixture.folder + "/docs", options: docs, outputFolder: fixture.folder + "/out-docs").bundle)
        let client = try RawClient(port: fixture.port)
        for _ in 0..<4 {
            let attacker = try RawClient(port: fixture.port)
            attacker.send("GET /docs/ HTTP/1.1\r\nHost: docs.example\r\nHost: m.shop.example\r\n\r\n")
            let refused = await attacker.responses(1).first
            #expect(refused?.status == 400)
            #expect(bodyText(refused).contains("Host"))
        }
        client.send("GET /docs/ HTTP/1.1\r\nHost: m.shop.example\r\n\r\nGET /docs/ HTTP/1.1\r\nHost: m.shop.example\r\n\r\n")
        let clean = await client.responses(2)
        #expect(clean.allSatisfy { !bodyText($0).contains("docs") }, "m.shop.example never answers with the docs page")
        // Without a Host an HTTP/1.1 request is refused too (RFC 9112 §3.2); HTTP/1.0 may omit it.
        let noHost = try RawClient(port: fixture.port)
        noHost.send("GET / HTTP/1.1\r\n\r\n")
        #expect(await noHost.responses(1).first?.status == 400)
        await fixture.stop()
    }

    @Test("a parse error behind a valid pipelined request is answered after it, in order, and closes")
    func parseErrorAfterPipelinedRequest() async throws {
        let fixture = try await ServerFixture()
        let client = try RawClient(port: fixture.port)
        // The valid request's answer needs a task (an endpoint), so it is still in flight when the garbage is parsed.
        client.send("GET /_satchel/hook.js HTTP/1.1\r\nHost: 127.0.0.1:\(fixture.port)\r\n\r\nGET / HTTP/1.1\r\nHost m.shop.example\r\n\r\n")
        let answers = await client.responses(2)
        #expect(answers.map(\.status) == [200, 400])
        #expect(bodyText(answers.first).contains("satchel"))
        #expect(answers.last?.values("X-Content-Type-Options") == ["nosniff"])
        #expect(await client.read().closed)
        await fixture.stop()
    }

    @Test("CONNECT keeps the bytes sent right behind its head, and reaches port 443 only unless configured")
    func connect() async throws {
        let origin = try await TestOrigin()
        defer { origin.stop() }
        let fixture = try await proxying(to: origin)
        let tunnel = try RawClient(port: fixture.port)
        // A TLS client sends its ClientHello in the same packet as the CONNECT; here, a plain request.
        tunnel.send("CONNECT api.example:443 HTTP/1.1\r\nHost: api.example:443\r\n\r\nGET /echo HTTP/1.1\r\nHost: api.example\r\n\r\n")
        let answers = await tunnel.responses(2)
        #expect(answers.first?.status == 200)
        #expect(answers.count == 2 && bodyText(answers.last).contains("\"path\": \"/echo\""), "the request behind the CONNECT head reached the origin")
        let otherPort = try RawClient(port: fixture.port)
        otherPort.send("CONNECT api.example:8443 HTTP/1.1\r\nHost: api.example:8443\r\n\r\n")
        let refused = await otherPort.responses(1).first
        #expect(refused?.status == 403)
        #expect(bodyText(refused).contains("port 8443"))
        await fixture.stop()

        let configured = try await proxying(to: origin) { $0.connectPorts = [8443] }
        let allowed = try RawClient(port: configured.port)
        allowed.send("CONNECT api.example:8443 HTTP/1.1\r\nHost: api.example:8443\r\n\r\n")
        #expect(await allowed.responses(1).first?.status == 200)
        await configured.stop()
    }

    @Test("a request pipelined behind a long answer is not timed out while the server is busy answering")
    func noTimeoutWhileAnswering() async throws {
        var configuration = ServerConfiguration(port: 0, accessLog: false)
        configuration.limits.readTimeout = .milliseconds(500)
        configuration.limits.idleTimeout = .seconds(30)
        let fixture = try await ServerFixture(configuration: configuration, bigFile: 8 << 20)
        let client = try RawClient(port: fixture.port, receiveBuffer: 64 << 10)
        client.send("GET /big.mp4 HTTP/1.1\r\nHost: m.shop.example\r\n\r\n")
        // Read the 8 MB slowly: the answer takes well over the read timeout. The next request is sent while
        // the first answer is still being written.
        var received: [UInt8] = []
        var sentSecond = false
        while received.count < 8 << 20 {
            if !sentSecond, received.count > 1 << 20 {
                client.send("GET /app.js HTTP/1.1\r\nHost: m.shop.example\r\n\r\n")
                sentSecond = true
            }
            let (more, closed) = await client.read { _ in true }
            received += more
            if closed || more.isEmpty { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        var all = received
        while RawClient.parse(all).flatMap({ RawClient.parse($0.1) }) == nil {
            let (more, closed) = await client.read { _ in true }
            all += more
            if closed || more.isEmpty { break }
        }
        let first = try #require(RawClient.parse(all))
        #expect(first.0.status == 200 && first.0.body.count == 8 << 20)
        let second = try #require(RawClient.parse(first.1))
        #expect(second.0.status == 200, "the pipelined request got its answer, not a 408")
        #expect(bodyText(second.0) == "console.log(1)")
        await fixture.stop()
    }
}
