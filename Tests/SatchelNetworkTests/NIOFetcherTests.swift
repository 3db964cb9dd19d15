import Foundation
import NIOCore
import NIOPosix
import SatchelCore
import SatchelHTTP
@testable import SatchelNetwork
import SatchelTestSupport
import Testing

/// The fetcher against a real local origin that misbehaves: repeated fields, drips, late heads, stalls,
/// resets, garbage, a 512 MB body behind a consumer that stops reading.
@Suite("NIOFetcher against a real origin", .serialized)
struct NIOFetcherTests {
    let fetcher = NIOFetcher(eventLoopGroup: MultiThreadedEventLoopGroup.singleton)

    func withOrigin(_ body: (TestOrigin) async throws -> Void) async throws {
        let origin = try await TestOrigin()
        do { try await body(origin) } catch {
            origin.stop()
            try await fetcher.shutdown()
            throw error
        }
        origin.stop()
        try await fetcher.shutdown()
    }

    @Test("repeated response fields stay separate lines in order, Content-Length passes through, hop-by-hop fields do not")
    func responseFieldsAsSent() async throws {
        try await withOrigin { origin in
            let response = try await fetcher.fetch(ResourceRequest(url: origin.base + "/cookies"), timeouts: FetchTimeouts())
            #expect(response.status == 200)
            #expect(response.headers.values("Set-Cookie") == ["a=1; Path=/; Expires=Wed, 21 Oct 2037 07:28:00 GMT; HttpOnly", "b=2; Path=/"])
            #expect(response.headers.values("X-Repeated") == ["first", "second", "third, with a comma"])
            #expect(response.headers["Content-Length"] == "11")
            let names = response.headers.map { $0.name.lowercased() }
            #expect(names.firstIndex(of: "set-cookie")! < names.firstIndex(of: "x-repeated")!, "order kept")
            #expect(!names.contains("connection") && !names.contains("transfer-encoding"))
            #expect(String(decoding: try await response.body.collect(), as: UTF8.self) == "two cookies")
        }
    }

    @Test("request fields arrive as sent: order, repeats, nothing added but Host and the body's length")
    func requestFieldsAsSent() async throws {
        try await withOrigin { origin in
            let headers: HTTPHeaders = HTTPHeaders([
                ("Accept", "application/json"), ("X-Multi", "one"), ("Cookie", "a=1"), ("X-Multi", "two"), ("Content-Type", "text/plain"),
            ])
            let request = ResourceRequest(method: "POST", url: origin.base + "/echo?q=%41", headers: headers, body: Array("body".utf8))
            let response = try await fetcher.fetch(request, timeouts: FetchTimeouts())
            let echo = try JSONDecoder().decode(TestOrigin.Echo.self, from: Data(try await response.body.collect()))
            #expect(echo.method == "POST")
            #expect(echo.path == "/echo?q=%41")
            #expect(echo.body == Data("body".utf8).base64EncodedString())
            #expect(echo.headers.map { $0[0] } == ["Host", "Accept", "X-Multi", "Cookie", "X-Multi", "Content-Type", "Content-Length"])
            #expect(echo.headers.first == ["Host", "127.0.0.1:\(origin.port)"])
            #expect(echo.headers.filter { $0[0] == "X-Multi" }.map { $0[1] } == ["one", "two"])
        }
    }

    @Test("a request that cannot be written as it is fails at once as the request's fault (400, naming the field), and nothing reaches the origin")
    func unwritableRequests() async throws {
        try await withOrigin { origin in
            // (what is wrong, the request, what the message must name)
            let cases: [(String, ResourceRequest, String)] = [
                ("CR LF in a value", ResourceRequest(url: origin.base + "/echo", headers: HTTPHeaders([("X-Note", "a\r\nX-Injected: 1")])), "X-Note"),
                ("LF in a value", ResourceRequest(url: origin.base + "/echo", headers: HTTPHeaders([("X-Note", "a\nX-Injected: 1")])), "X-Note"),
                ("NUL in a value", ResourceRequest(url: origin.base + "/echo", headers: HTTPHeaders([("X-Note", "a\u{0}b")])), "X-Note"),
                ("a name that is not a token", ResourceRequest(url: origin.base + "/echo", headers: HTTPHeaders([("X Note", "a")])), "X Note"),
                ("a method that is not a token", ResourceRequest(method: "GET /x", url: origin.base + "/echo"), "method"),
                ("a space in the path", ResourceRequest(url: origin.base + "/echo two"), "path"),
                // The host becomes the Host field as it is: a line break in it would add fields of its own.
                ("CR LF in the host", ResourceRequest(url: "http://a\r\nX-Injected.example/echo"), "host"),
                ("a space in the query", ResourceRequest(url: origin.base + "/echo?a=b c"), "query"),
                ("a control character in a value", ResourceRequest(url: origin.base + "/echo", headers: HTTPHeaders([("X-Note", "a\u{1}b")])), "X-Note"),
                ("DEL in a value", ResourceRequest(url: origin.base + "/echo", headers: HTTPHeaders([("X-Note", "a\u{7F}b")])), "X-Note"),
                ("ESC in a value", ResourceRequest(url: origin.base + "/echo", headers: HTTPHeaders([("X-Note", "\u{1B}[0m")])), "X-Note"),
                // NIO's encoder drops the length of a TRACE and writes its body anyway: the origin would read the
                // body as a request of its own (past the allow-list), and its answer could reach another client.
                ("a TRACE with a body", ResourceRequest(method: "TRACE", url: origin.base + "/echo", body: Array("GET /smuggled HTTP/1.1\r\nHost: elsewhere.example\r\n\r\n".utf8)), "TRACE"),
                ("CONNECT", ResourceRequest(method: "CONNECT", url: origin.base + "/echo"), "CONNECT"),
            ]
            // Refused before anything is sent: the error is `.invalidRequest` (a request that went out would end in the
            // origin's answer or the head timeout's 504), and the origin saw nothing. No clock needed.
            for (name, request, named) in cases {
                do {
                    let response = try await fetcher.fetch(request, timeouts: FetchTimeouts(responseHead: .seconds(5)))
                    Issue.record("\(name): answered \(response.status) \(try await text(response))")
                } catch let error as FetchError {
                    // The origin did nothing wrong: a message blaming it ("upstream sent a bad response") sends the
                    // page's developer to the wrong server.
                    guard case .invalidRequest = error else { Issue.record("\(name): \(error)"); continue }
                    #expect(error.status == 400)
                    #expect(error.description.contains("/echo"), "\(name): names the URL: \(error)")
                    #expect(error.description.contains(named), "\(name): names what is wrong: \(error)")
                }
            }
            #expect(try await origin.events().filter { $0.hasPrefix("seen:") } == [], "nothing reached the origin")
            // What may go: a tab and bytes past ASCII in a value, a TRACE without a body.
            let fine = try await fetcher.fetch(ResourceRequest(url: origin.base + "/echo", headers: HTTPHeaders([("X-Note", "a\tb"), ("X-Name", "Zoë")])), timeouts: FetchTimeouts())
            let echo = try JSONDecoder().decode(TestOrigin.Echo.self, from: Data(try await fine.body.collect()))
            #expect(echo.headers.first { $0[0] == "X-Note" }?[1] == "a\tb")
            #expect(echo.headers.contains { $0[0] == "X-Name" })
            let trace = try await fetcher.fetch(ResourceRequest(method: "TRACE", url: origin.base + "/echo"), timeouts: FetchTimeouts())
            #expect(trace.status == 200)
            _ = try await trace.body.collect()
        }
    }

    @Test("an upgrade nobody asked for (101) is a 502 naming it, and its connection is never reused")
    func unaskedUpgrade() async throws {
        try await withOrigin { origin in
            let loop = MultiThreadedEventLoopGroup.singleton.next()
            do {
                let response = try await fetch(origin.base + "/upgrade", on: loop)
                Issue.record("a 101 was passed on as an answer: \(response.status)")
            } catch let error as FetchError {
                guard case .badResponse = error else { Issue.record("\(error)"); return }
                #expect(error.description.contains("101"), "\(error)")
            }
            #expect(try await fetcher.idleConnections(on: loop).get() == 0)
            // NIO's decoder stops parsing after a 101: a request on that connection would wait for its head timeout
            // and fail with a 504, so a 200 says it went on a new connection.
            let next = try await NIOFetcher.withPreferredEventLoop(loop) {
                try await fetcher.fetch(ResourceRequest(url: origin.base + "/conn"), timeouts: FetchTimeouts(responseHead: .seconds(5)))
            }
            #expect(next.status == 200)
            _ = try await next.body.collect()
        }
    }

    @Test("the head timeout bounds the wait for the head only: a late head times out, a body dripping for longer than it arrives whole")
    func headTimeoutNeverCutsABody() async throws {
        try await withOrigin { origin in
            let short = FetchTimeouts(responseHead: .milliseconds(500), idle: .seconds(5))
            do {
                _ = try await fetcher.fetch(ResourceRequest(url: origin.base + "/late?ms=2000"), timeouts: short)
                Issue.record("a head later than the head timeout must time out")
            } catch let error as FetchError {
                #expect(error.status == 504)
            }
            // 30 bytes over 2.4 s with a 1 s head timeout (a route's `network-first:1000`): all 30 arrive.
            let route = FetchTimeouts(responseHead: .milliseconds(1000), idle: .seconds(5))
            let started = ContinuousClock.now
            let drip = try await fetcher.fetch(ResourceRequest(url: origin.base + "/drip?n=30&seconds=2.4"), timeouts: route)
            let bytes = try await drip.body.collect()
            #expect(bytes.count == 30)
            #expect(bytes == (0..<30).map { UInt8(0x41 + $0 % 26) })
            #expect(ContinuousClock.now - started >= .seconds(2), "the body took longer than the head timeout")
        }
    }

    @Test("head deadlines on one loop share a timer: a shorter one added later still fires on time, and each fires at its own")
    func headDeadlinesOnOneLoop() async throws {
        try await withOrigin { origin in
            let loop = MultiThreadedEventLoopGroup.singleton.next()
            // Timed where the answer arrives, on the event loop (the completion runs there, inline), not where this task
            // resumes: on a busy test pool a task resumes late, a loop's timer never does.
            func timed(_ path: String, head: Duration) async -> (Duration, Result<Int, any Error>) {
                await NIOFetcher.withPreferredEventLoop(loop) {
                    await withCheckedContinuation { (continuation: CheckedContinuation<(Duration, Result<Int, any Error>), Never>) in
                        let started = ContinuousClock.now
                        fetcher.fetch(
                            ResourceRequest(url: origin.base + path), timeouts: FetchTimeouts(responseHead: head, idle: .seconds(5)),
                            on: InlineExecutor.shared
                        ) { result in
                            continuation.resume(returning: (ContinuousClock.now - started, result.map(\.status)))
                        }
                    }
                }
            }
            // Started in this order: the timer is first armed for 5 s, then must move to 0.8 s, then on to 1.6 s.
            async let patient = timed("/late?ms=1200", head: .seconds(5))
            try await Task.sleep(for: .milliseconds(50))
            async let hasty = timed("/late?ms=4000", head: .milliseconds(800))
            async let middling = timed("/late?ms=4000", head: .milliseconds(1600))
            let (patientTime, patientResult) = await patient
            let (hastyTime, hastyResult) = await hasty
            let (middlingTime, middlingResult) = await middling
            #expect(try patientResult.get() == 200, "a head within its timeout arrives")
            #expect(patientTime >= .milliseconds(1100))
            for (name, time, result, low, high) in [("0.8 s", hastyTime, hastyResult, 750, 1500), ("1.6 s", middlingTime, middlingResult, 1550, 2700)] {
                guard case .failure(let error as FetchError) = result, error.status == 504 else {
                    Issue.record("\(name): expected a 504 timeout, got \(result)")
                    continue
                }
                #expect(time >= .milliseconds(low) && time < .milliseconds(high), "\(name) timed out after \(time)")
            }
            #expect(try await loop.submit { fetcher.pools.pool(for: loop).headDeadlines.count }.get() == 0, "nothing left waiting")
        }
    }

    @Test("the idle timeout counts only time spent waiting for the upstream, never a slow consumer")
    func idleTimeout() async throws {
        try await withOrigin { origin in
            let timeouts = FetchTimeouts(responseHead: .seconds(5), idle: .milliseconds(500))
            // The upstream goes quiet for 2 s before its first body byte.
            let quiet = try await fetcher.fetch(ResourceRequest(url: origin.base + "/drip?n=2&seconds=4"), timeouts: timeouts)
            do {
                _ = try await quiet.body.collect()
                Issue.record("a body that stalls past the idle timeout must fail")
            } catch let error as FetchError {
                #expect(error.status == 504)
                #expect(error.description.contains("no body bytes"))
            }
            // The consumer pauses for three idle periods: the body still arrives whole.
            let big = try await fetcher.fetch(ResourceRequest(url: origin.base + "/big?n=\(4 << 20)"), timeouts: timeouts)
            guard case .stream(let stream) = big.body else { Issue.record("expected a stream"); return }
            var iterator = stream.makeAsyncIterator()
            var total = try await iterator.next()?.count ?? 0
            try await Task.sleep(for: .milliseconds(1500))
            while let chunk = try await iterator.next() { total += chunk.count }
            #expect(total == 4 << 20)
        }
    }

    @Test("backpressure: while the consumer does not read, the upstream is not read either")
    func backpressure() async throws {
        try await withOrigin { origin in
            let bytes = try await Self.bytesSentWhileConsumerPauses(fetcher, origin: origin)
            #expect(bytes < 64 << 20, "the origin sent \(bytes) bytes while the consumer paused")
        }
    }

    /// Reads four chunks of a 512 MB body, pauses 2 s, stops; returns how much the origin had sent when the
    /// connection closed. Without backpressure that is all 512 MB (loopback moves gigabytes a second); with it,
    /// what was taken plus what the kernel's socket buffers hold.
    static func bytesSentWhileConsumerPauses(_ fetcher: any NetworkFetcher, origin: TestOrigin) async throws -> Int {
        let consumer = Task {
            let response = try await fetcher.fetch(ResourceRequest(url: origin.base + "/big?n=\(512 << 20)"), timeouts: FetchTimeouts(idle: .seconds(30)))
            var iterator = response.body.chunks().makeAsyncIterator()
            for _ in 0..<4 { _ = try await iterator.next() }
            try await Task.sleep(for: .seconds(2))
        }
        _ = await consumer.result
        var sent: Int?
        for _ in 0..<100 where sent == nil {
            try await Task.sleep(for: .milliseconds(100))
            let events = try await origin.events()
            if events.contains("big: finished") { return 512 << 20 }  // it sent everything: nothing held it back
            sent = events.compactMap { event in
                event.hasPrefix("big: client went away after ") ? Int(event.split(separator: " ").dropLast().last ?? "") : nil
            }.first
        }
        return try #require(sent, "the origin saw the upstream request close")
    }

    @Test("cancelling the consumer closes the upstream request")
    func cancellation() async throws {
        try await withOrigin { origin in
            let consumer = Task {
                let response = try await fetcher.fetch(ResourceRequest(url: origin.base + "/hang"), timeouts: FetchTimeouts())
                for try await _ in response.body.chunks() {}
            }
            try await Task.sleep(for: .milliseconds(400))
            consumer.cancel()
            _ = await consumer.result
            #expect(try await origin.sawEvent("hang: client went away"))
        }
    }

    @Test("refused, reset, garbage: typed 502s; redirects are returned, not followed; HEAD has no body")
    func failuresAndRedirects() async throws {
        try await withOrigin { origin in
            for path in ["/reset", "/garbage"] {
                do {
                    let response = try await fetcher.fetch(ResourceRequest(url: origin.base + path), timeouts: FetchTimeouts())
                    _ = try await response.body.collect()
                    Issue.record("\(path) must fail")
                } catch let error as FetchError {
                    #expect(error.status == 502, "\(path): \(error)")
                }
            }
            do {
                _ = try await fetcher.fetch(ResourceRequest(url: "http://127.0.0.1:9/x"), timeouts: FetchTimeouts())
                Issue.record("nothing listens on port 9")
            } catch let error as FetchError {
                #expect(error.status == 502)
                #expect(error.description.contains("127.0.0.1"))
            }
            let redirect = try await fetcher.fetch(ResourceRequest(url: origin.base + "/redirect"), timeouts: FetchTimeouts())
            #expect(redirect.status == 302)
            #expect(redirect.headers["Location"] == "/echo")
            let head = try await fetcher.fetch(ResourceRequest(method: "HEAD", url: origin.base + "/cookies"), timeouts: FetchTimeouts())
            #expect(head.status == 200)
            #expect(head.headers["Content-Length"] == "11")
            #expect(try await head.body.collect().isEmpty)
        }
    }
}

extension NIOFetcherTests {
    /// A fetch made on `loop`, so that consecutive fetches share that loop's pool.
    func fetch(_ url: String, method: RequestMethod = .get, on loop: any EventLoop) async throws -> ResourceResponse {
        try await NIOFetcher.withPreferredEventLoop(loop) {
            try await fetcher.fetch(ResourceRequest(method: method, url: url), timeouts: FetchTimeouts())
        }
    }

    func text(_ response: ResourceResponse) async throws -> String {
        String(decoding: try await response.body.collect(), as: UTF8.self)
    }

    @Test("connections are kept and reused; one the origin closes while idle leaves the pool at once")
    func connectionReuse() async throws {
        try await withOrigin { origin in
            let loop = MultiThreadedEventLoopGroup.singleton.next()
            let first = try await text(try await fetch(origin.base + "/conn", on: loop))
            let second = try await text(try await fetch(origin.base + "/conn", on: loop))
            #expect(first == second, "the second request went over the first one's connection")
            #expect(try await fetcher.idleConnections(on: loop).get() == 1)
            // The origin answers /bye and closes the connection 200 ms later, while it sits in the pool.
            #expect(try await text(try await fetch(origin.base + "/bye", on: loop)) == "bye")
            try await Task.sleep(for: .milliseconds(700))
            #expect(try await fetcher.idleConnections(on: loop).get() == 0, "the closed connection left the pool")
            let third = try await text(try await fetch(origin.base + "/conn", on: loop))
            #expect(third != first, "a new connection")
            let dropped = try await origin.events().filter { $0.hasPrefix("once: dropped") }
            #expect(dropped.isEmpty)
        }
    }

    @Test("a name whose first address refuses (happy eyeballs): the connection that wins carries the request")
    func secondAddressWins() async throws {
        try await withOrigin { origin in
            // AAAA first: ::1, where nothing listens on the origin's port; then A: 127.0.0.1, the origin.
            let fetcher = try NIOFetcher(maxIdleConnectionsPerHost: 0, additionalTrustRoots: []) { loop in
                FixedResolver(loop: loop, v6: [try! SocketAddress(ipAddress: "::1", port: origin.port)], v4: [try! SocketAddress(ipAddress: "127.0.0.1", port: origin.port)])
            }
            for _ in 0..<5 {
                let response = try await fetcher.fetch(ResourceRequest(url: "http://two-addresses.test:\(origin.port)/echo"), timeouts: FetchTimeouts(responseHead: .seconds(5)))
                #expect(response.status == 200)
                let echo = try JSONDecoder().decode(TestOrigin.Echo.self, from: Data(try await response.body.collect()))
                #expect(echo.headers.first == ["Host", "two-addresses.test:\(origin.port)"])
            }
            try await fetcher.shutdown()
        }
    }

    @Test("a response dropped unread closes its upstream connection")
    func droppedResponse() async throws {
        try await withOrigin { origin in
            do {
                let response = try await fetcher.fetch(ResourceRequest(url: origin.base + "/hang"), timeouts: FetchTimeouts())
                #expect(response.status == 200)
            }
            #expect(try await origin.sawEvent("hang: client went away"))
        }
    }

    @Test("with no idle connections allowed, each request gets its own connection, closed after it")
    func noIdleConnections() async throws {
        try await withOrigin { origin in
            let loop = MultiThreadedEventLoopGroup.singleton.next()
            let single = NIOFetcher(maxIdleConnectionsPerHost: 0)
            var ports: Set<String> = []
            for _ in 0..<2 {
                let response = try await NIOFetcher.withPreferredEventLoop(loop) {
                    try await single.fetch(ResourceRequest(url: origin.base + "/conn"), timeouts: FetchTimeouts())
                }
                ports.insert(try await text(response))
            }
            #expect(ports.count == 2)
            #expect(try await single.idleConnections(on: loop).get() == 0)
            try await single.shutdown()
        }
    }

    @Test("a connection whose request was not all written when its answer ended (an upload refused early) is not reused")
    func earlyAnswerNotReused() async throws {
        try await withOrigin { origin in
            let loop = MultiThreadedEventLoopGroup.singleton.next()
            // More than the sockets' buffers hold: most of it is still waiting to be written when the 413 ends.
            let upload = [UInt8](repeating: 0x61, count: 32 << 20)
            let early = try await NIOFetcher.withPreferredEventLoop(loop) {
                try await fetcher.fetch(ResourceRequest(method: "POST", url: origin.base + "/early", body: upload), timeouts: FetchTimeouts())
            }
            #expect(early.status == 413)
            let earlyPort = try await text(early)
            let next = try await text(try await fetch(origin.base + "/conn", on: loop))
            #expect(!next.isEmpty && next != earlyPort, "a new connection, not the one with the upload's rest in it")
            #expect(try await fetcher.idleConnections(on: loop).get() == 1)
        }
    }

    @Test("at most the configured number of idle connections is kept: the oldest goes, the newest is reused first")
    func idleCap() async throws {
        try await withOrigin { origin in
            let loop = MultiThreadedEventLoopGroup.singleton.next()
            let capped = NIOFetcher(maxIdleConnectionsPerHost: 2)
            func fetch(_ path: String) async throws -> String {
                try await text(try await NIOFetcher.withPreferredEventLoop(loop) {
                    try await capped.fetch(ResourceRequest(url: origin.base + path), timeouts: FetchTimeouts())
                })
            }
            // Three at once need three connections; /conn answers with the client's port after a short wait.
            async let a = fetch("/conn?ms=300")
            async let b = fetch("/conn?ms=300")
            async let c = fetch("/conn?ms=300")
            let ports = try await [a, b, c]
            #expect(Set(ports).count == 3)
            #expect(try await capped.idleConnections(on: loop).get() == 2)
            // Taken newest first: two requests in a row reuse the same connection, one of the three.
            let first = try await fetch("/conn")
            let second = try await fetch("/conn")
            #expect(first == second && ports.contains(first))
            #expect(try await capped.idleConnections(on: loop).get() == 2)
            try await capped.shutdown()
        }
    }

    @Test("a request the origin drops unanswered on a reused connection is sent again on a new one if idempotent, never if not")
    func staleConnectionRetry() async throws {
        try await withOrigin { origin in
            let loop = MultiThreadedEventLoopGroup.singleton.next()
            #expect(try await text(try await fetch(origin.base + "/once", on: loop)) == "first")
            // The pooled connection has served /once: the origin reads the next request on it and closes.
            #expect(try await text(try await fetch(origin.base + "/once", on: loop)) == "first", "sent again on a new connection")
            do {
                _ = try await fetch(origin.base + "/once", method: "POST", on: loop)
                Issue.record("a POST dropped unanswered must fail, not be sent twice")
            } catch let error as FetchError {
                #expect(error.status == 502)
                #expect(error.description.contains("without answering"), "\(error)")
            }
            let events = try await origin.events()
            #expect(events.filter { $0 == "once: dropped GET" }.count == 1)
            #expect(events.filter { $0 == "once: dropped POST" }.count == 1)
            #expect(events.filter { $0 == "seen: POST /once" }.count == 1, "the POST reached the origin once")
            #expect(events.filter { $0 == "seen: GET /once" }.count == 3, "answered, dropped, answered on a new connection")
        }
    }

    @Test("https: the certificate is checked against the system's and the given trust roots, by name; an unknown one is a 502")
    func https() async throws {
        try await withTemporaryFolder { folder in
            let (certificate, key) = try await makeLocalhostCertificate(in: folder)
            let origin = try await TestOrigin(tls: (certificate, key))
            defer { origin.stop() }
            let trusting = try NIOFetcher(additionalTrustRoots: [certificate])
            do {
                let response = try await trusting.fetch(ResourceRequest(url: origin.base + "/echo"), timeouts: FetchTimeouts())
                let echo = try JSONDecoder().decode(TestOrigin.Echo.self, from: Data(try await response.body.collect()))
                #expect(echo.headers.first == ["Host", "localhost:\(origin.port)"])
                // A body delimited by the close, from an origin that closes without close_notify: whole.
                let unframed = try await trusting.fetch(ResourceRequest(url: origin.base + "/nolength?n=100000"), timeouts: FetchTimeouts())
                let bytes = try await unframed.body.collect()
                #expect(bytes.count == 100_000)
                #expect(bytes == (0..<100_000).map { UInt8($0 % 256) })
                // An address is not the certificate's name: refused, though the CA is trusted.
                do {
                    _ = try await trusting.fetch(ResourceRequest(url: "https://127.0.0.1:\(origin.port)/echo"), timeouts: FetchTimeouts())
                    Issue.record("the certificate names localhost, not 127.0.0.1")
                } catch let error as FetchError {
                    #expect(error.status == 502, "\(error)")
                }
            }
            try await trusting.shutdown()
            do {
                _ = try await fetcher.fetch(ResourceRequest(url: origin.base + "/echo"), timeouts: FetchTimeouts())
                Issue.record("a certificate no trust root vouches for must be refused")
            } catch let error as FetchError {
                #expect(error.status == 502)
                #expect(error.description.contains("TLS"), "\(error)")
            }
            try await fetcher.shutdown()
            #expect(throws: FetchError.self) { try NIOFetcher(additionalTrustRoots: [folder + "/missing.pem"]) }
        }
    }
}

@Suite("The network fallback's memory, in a child process")
struct NetworkMemoryTests {
    @Test("1 GiB through ResourceLoader and NIOFetcher, read with a pause like a slow client: peak memory grows by under 32 MiB")
    func gigabyteStream() async throws {
        let origin = try await TestOrigin()
        defer { origin.stop() }
        let probe = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("SatchelNetworkProbe").path
        let bytes = 1 << 30
        let outcome = try await runProcess(probe, [origin.base + "/big?n=\(bytes)", String(bytes)])
        try #require(outcome.status == 0, "\(outcome.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Int])
        #expect(report["bytesReceived"] == bytes)
        let growth = try #require(report["peakGrowthBytes"])
        print("1 GiB through the network fallback: peak RSS grew by \(growth / 1024) KiB")
        #expect(growth < 32 << 20, "peak resident memory grew by \(growth) bytes")
    }
}

/// Answers every name with the given addresses, IPv6 first as a real resolver's AAAA answer would come.
struct FixedResolver: Resolver, Sendable {
    let loop: any EventLoop
    let v6: [SocketAddress]
    let v4: [SocketAddress]
    func initiateAQuery(host: String, port: Int) -> EventLoopFuture<[SocketAddress]> { loop.makeSucceededFuture(v4) }
    func initiateAAAAQuery(host: String, port: Int) -> EventLoopFuture<[SocketAddress]> { loop.makeSucceededFuture(v6) }
    func cancelQueries() {}
}
