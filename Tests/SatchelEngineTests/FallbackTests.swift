import Foundation
import SatchelCore
@testable import SatchelEngine
import SatchelHTTP
import SatchelTestSupport
import SatchelWebKit
import Testing

typealias Origin = TestOrigin

@Suite("Network fallback through URLSession, against a real local origin", .serialized)
struct FallbackTests {
    static let secret = BodyProofSecret.random()
    func loader(_ folder: String, origin: Origin, timeouts: FetchTimeouts = FetchTimeouts(connect: .seconds(2), responseHead: .seconds(3), idle: .seconds(3)), routes: [Route] = []) throws -> ResourceLoader {
        let package = try makePackage(in: folder, files: ["index.html": text("home"), "offline.html": text("<h1>offline</h1>"), "cached.json": text("{\"cached\":true}")], routes: routes)
        let withOffline = ServedPackage(manifest: try Manifest(
            id: package.manifest.id, version: package.manifest.version, createdAt: package.manifest.createdAt, scope: package.manifest.scope,
            offlinePage: SafePath(validating: "offline.html"), routes: routes, files: package.manifest.files), files: package.files)
        let engine = try ResourceEngine(source: FolderSource([withOffline]), configuration: EngineConfiguration(bodyProof: .required(Self.secret)))
        return ResourceLoader(engine: engine, fetcher: URLSessionFetcher(), policy: NetworkPolicy(
            allowedHosts: [try HostPattern("m.shop.com")], upstreamOverrides: ["m.shop.com": origin.base], timeouts: timeouts))
    }

    @Test("a restored POST reaches the origin byte-exact with method, headers and query; satchel headers are gone")
    func forwards() async throws {
        let origin = try await Origin()
        defer { origin.stop() }
        try await withTemporaryFolder { folder async throws in
            let loader = try loader(folder, origin: origin)
            let body = "{\"name\":\"Zoë ☕\",\"n\":1}"
            let request = BodyProof.attaching(to: ResourceRequest(method: "POST", url: "satchel://m.shop.com/echo?x=1&y=%20", headers: [
                "X-Satchel-Body": encodeURIComponentForTests(body), "X-Satchel-Content-Type": "application/json", "X-Custom": "kept",
                "Cookie": "session=abc", "Connection": "keep-alive",
            ]), secret: Self.secret)
            let (response, outcome, channel) = (await loader.respond(to: request)).parts
            #expect(outcome == .network)
            #expect(channel == .header)
            #expect(response.status == 200)
            let echo = try JSONDecoder().decode(TestOrigin.Echo.self, from: Data(try await response.body.collect()))
            #expect(echo.method == "POST")
            #expect(echo.path == "/echo?x=1&y=%20")
            #expect(Array(Data(base64Encoded: echo.body)!) == Array(body.utf8))
            let headers = Dictionary(echo.headers.map { ($0[0].lowercased(), $0[1]) }) { a, _ in a }
            #expect(headers["content-type"] == "application/json")
            #expect(headers["x-custom"] == "kept")
            #expect(headers["cookie"] == "session=abc")
            #expect(headers.keys.allSatisfy { !$0.hasPrefix("x-satchel") })
            #expect(response.headers["Set-Cookie"] == "seen=1")
        }
    }

    @Test("Satchel's fields without a body claim (a proof, a method, a marker, the token parameter) do not reach the origin")
    func markersStayHome() async throws {
        let origin = try await Origin()
        defer { origin.stop() }
        try await withTemporaryFolder { folder async throws in
            let loader = try loader(folder, origin: origin)
            let request = ResourceRequest(method: "GET", url: "satchel://m.shop.com/echo?x=1&SATCHEL_TOKEN=1.2.3", headers: [
                "X-Satchel-Token": "1.2.3", "X-Satchel-Method": "PUT", "X-Satchel-Keepalive": "1", "X-Custom": "kept",
            ])
            let (response, outcome, channel) = (await loader.respond(to: request)).parts
            #expect(outcome == .network)
            #expect(channel == .none)
            let echo = try JSONDecoder().decode(TestOrigin.Echo.self, from: Data(try await response.body.collect()))
            #expect(echo.method == "GET")
            #expect(echo.path == "/echo?x=1")
            let names = echo.headers.map { $0[0].lowercased() }
            #expect(names.contains("x-custom"))
            #expect(names.allSatisfy { !$0.hasPrefix("x-satchel") }, "\(names)")
        }
    }

    @Test("a POST whose page gave no Content-Type reaches the origin without one (URLSession would add a form type)")
    func noInventedContentType() async throws {
        let origin = try await Origin()
        defer { origin.stop() }
        try await withTemporaryFolder { folder async throws in
            let loader = try loader(folder, origin: origin)
            for method in [RequestMethod.post, .put] {
                let (response, outcome, _) = (await loader.respond(to: ResourceRequest(method: method, url: "satchel://m.shop.com/echo", body: [0, 1, 2, 255]))).parts
                #expect(outcome == .network)
                let echo = try JSONDecoder().decode(TestOrigin.Echo.self, from: Data(try await response.body.collect()))
                #expect(Array(Data(base64Encoded: echo.body)!) == [0, 1, 2, 255])
                #expect(!echo.headers.contains { $0[0].lowercased() == "content-type" }, "\(method): \(echo.headers)")
            }
        }
    }

    @Test("cookies come from the pluggable provider unless the request carries its own")
    func cookies() async throws {
        let origin = try await Origin()
        defer { origin.stop() }
        struct Jar: CookieProvider {
            func cookieHeader(for url: String, request: ResourceRequest) async -> String? { url.hasPrefix("https://m.shop.com/") ? "jar=1; theme=dark" : nil }
        }
        try await withTemporaryFolder { folder async throws in
            let base = try loader(folder, origin: origin)
            let loader = ResourceLoader(engine: base.engine, fetcher: URLSessionFetcher(), policy: NetworkPolicy(
                allowedHosts: [try HostPattern("m.shop.com")], upstreamOverrides: ["m.shop.com": origin.base], cookies: Jar()))
            let (response, _, _) = (await loader.respond(to: ResourceRequest(url: "satchel://m.shop.com/echo"))).parts
            let echo = try JSONDecoder().decode(TestOrigin.Echo.self, from: Data(try await response.body.collect()))
            #expect(echo.headers.first { $0[0].lowercased() == "cookie" }?[1] == "jar=1; theme=dark")
            let (own, _, _) = (await loader.respond(to: ResourceRequest(url: "satchel://m.shop.com/echo", headers: ["Cookie": "mine=2"]))).parts
            let ownEcho = try JSONDecoder().decode(TestOrigin.Echo.self, from: Data(try await own.body.collect()))
            #expect(ownEcho.headers.filter { $0[0].lowercased() == "cookie" }.map { $0[1] } == ["mine=2"])
        }
    }

    @Test("redirects come back to the caller, not followed")
    func redirects() async throws {
        let origin = try await Origin()
        defer { origin.stop() }
        try await withTemporaryFolder { folder async throws in
            let (response, _, _) = (await (try loader(folder, origin: origin)).respond(to: ResourceRequest(url: "satchel://m.shop.com/redirect"))).parts
            #expect(response.status == 302)
            #expect(response.headers["Location"] == "/echo")
        }
    }

    @Test("refused, reset, garbage and stalled upstreams give 502 or 504 within the timeout")
    func failures() async throws {
        let origin = try await Origin()
        defer { origin.stop() }
        try await withTemporaryFolder { folder async throws in
            let loader = try loader(folder, origin: origin)
            for (path, status) in [("/reset", 502), ("/garbage", 502)] {
                let (response, outcome, _) = (await loader.respond(to: ResourceRequest(url: "satchel://m.shop.com" + path))).parts
                #expect(response.status == status, "\(path)")
                #expect(outcome == .error)
                #expect(response.headers["X-Satchel-Error"] != nil)
            }
            let started = ContinuousClock.now
            let (stalled, _, _) = (await loader.respond(to: ResourceRequest(url: "satchel://m.shop.com/stall"))).parts
            #expect(stalled.status == 504)
            // The origin stalls for 30 s and then closes: a 504 is the head timeout's (3 s) answer, whatever a busy test
            // pool adds to the clock below, which only tells it from waiting out the stall.
            #expect(ContinuousClock.now - started < .seconds(30))
            // Nothing listens on port 9 of loopback: connection refused.
            let refused = ResourceLoader(engine: loader.engine, fetcher: URLSessionFetcher(), policy: NetworkPolicy(allowedHosts: [try HostPattern("m.shop.com")], upstreamOverrides: ["m.shop.com": "http://127.0.0.1:9"]))
            let (response, _, _) = (await refused.respond(to: ResourceRequest(url: "satchel://m.shop.com/x.json"))).parts
            #expect(response.status == 502)
        }
    }

    @Test("a host that is not allow-listed is refused: no open proxy")
    func allowList() async throws {
        let origin = try await Origin()
        defer { origin.stop() }
        try await withTemporaryFolder { folder async throws in
            let (response, _, _) = (await (try loader(folder, origin: origin)).respond(to: ResourceRequest(url: "https://evil.example/steal"))).parts
            #expect(response.status == 403)
            #expect(response.headers["X-Satchel-Error"]?.contains("evil.example") == true)
        }
    }

    @Test("strategies: network-first falls back to the package; a navigation with both down gets the offline page (503)")
    func strategies() async throws {
        let origin = try await Origin()
        defer { origin.stop() }
        try await withTemporaryFolder { folder async throws in
            let routes = [try Route(prefix: "/cached.json", strategy: .networkFirst, timeoutMs: 500)]
            var loader = try loader(folder, origin: origin, routes: routes)
            // The origin has no /cached.json: a 404 from the network is an answer, and network-first returns it.
            let (fromNetwork, outcome, _) = (await loader.respond(to: ResourceRequest(url: "satchel://m.shop.com/cached.json"))).parts
            #expect(fromNetwork.status == 404)
            #expect(outcome == .network)
            origin.stop()
            loader = try self.loader(folder, origin: origin, routes: routes)
            let (fallback, fallbackOutcome, _) = (await loader.respond(to: ResourceRequest(url: "satchel://m.shop.com/cached.json"))).parts
            #expect(fallbackOutcome == .packageAfterNetworkFailure)
            #expect(try await fallback.body.collect() == text("{\"cached\":true}"))
            let (page, pageOutcome, _) = (await loader.respond(to: ResourceRequest(url: "satchel://m.shop.com/account", headers: ["Accept": "text/html,*/*"]))).parts
            #expect(pageOutcome == .offlinePage)
            #expect(page.status == 503)
            #expect(try await page.body.collect() == text("<h1>offline</h1>"))
            let (api, _, _) = (await loader.respond(to: ResourceRequest(url: "satchel://m.shop.com/api/x", headers: ["Accept": "application/json"]))).parts
            #expect(api.status == 502)
        }
    }

    @Test("X-Satchel-Cache: read into the request's cache policy and never sent upstream; a bad value is a 400 that names it; return-cache-dont-load without a cache fails with a reason (504), a navigation gets the offline page")
    func cachePolicyHeader() async throws {
        let origin = try await Origin()
        defer { origin.stop() }
        try await withTemporaryFolder { folder async throws in
            let loader = try loader(folder, origin: origin)
            let routed = loader.engine.route(ResourceRequest(url: "satchel://m.shop.com/echo", headers: ["X-Satchel-Cache": " Stale-While-Revalidate:600 "]))
            guard case .routed(let request) = routed else { Issue.record("not routed: \(routed)"); return }
            #expect(request.cachePolicy == (try RequestCachePolicy(policy: .staleWhileRevalidate, maxAge: 600)))
            #expect(request.request.headers["X-Satchel-Cache"] == nil)
            let (echoed, _, _) = (await loader.respond(to: ResourceRequest(url: "satchel://m.shop.com/echo", headers: ["X-Satchel-Cache": "reload-ignoring-cache"]))).parts
            let echo = try JSONDecoder().decode(TestOrigin.Echo.self, from: Data(try await echoed.body.collect()))
            #expect(!echo.headers.contains { $0[0].lowercased() == "x-satchel-cache" }, "\(echo.headers)")
            let (bad, _, _) = (await loader.respond(to: ResourceRequest(url: "satchel://m.shop.com/echo", headers: ["X-Satchel-Cache": "sometimes"]))).parts
            #expect(bad.status == 400 && (bad.headers["X-Satchel-Error"] ?? "").contains("must be one of use-protocol-policy"))
            let (maxAgeOnReload, _, _) = (await loader.respond(to: ResourceRequest(url: "satchel://m.shop.com/echo", headers: ["X-Satchel-Cache": "reload-ignoring-cache:60"]))).parts
            #expect(maxAgeOnReload.status == 400)
            let (offline, _, _) = (await loader.respond(to: ResourceRequest(url: "satchel://m.shop.com/echo", headers: ["X-Satchel-Cache": "return-cache-dont-load"]))).parts
            #expect(offline.status == 504 && (offline.headers["X-Satchel-Error"] ?? "").contains("no HTTP cache"))
            let (page, _, _) = (await loader.respond(to: ResourceRequest(
                url: "satchel://m.shop.com/account", headers: ["X-Satchel-Cache": "return-cache-dont-load", "Accept": "text/html"]))).parts
            #expect(page.status == 503 && page.headers["X-Satchel-Offline"] == "1")
        }
    }

    @Test("a manifest's cachePolicies give a path's requests their policy; the page's header wins")
    func manifestCachePolicies() throws {
        try withTemporaryFolder { folder in
            let base = try makePackage(in: folder, files: ["index.html": text("home")])
            let package = ServedPackage(manifest: try Manifest(
                id: base.manifest.id, version: base.manifest.version, createdAt: base.manifest.createdAt, scope: base.manifest.scope,
                cachePolicies: [try CacheRoute(parsing: "/api/=stale-while-revalidate:600"), try CacheRoute(parsing: "/api/live/=reload-ignoring-cache")],
                minRuntime: SatchelRuntime.cachePolicies, files: base.manifest.files), files: base.files)
            let engine = try ResourceEngine(source: FolderSource([package]))
            func policy(_ path: String, _ headers: HTTPHeaders = [:]) -> RequestCachePolicy? {
                guard case .routed(let routed) = engine.route(ResourceRequest(url: "satchel://m.shop.com" + path, headers: headers)) else { return nil }
                return routed.cachePolicy
            }
            #expect(policy("/api/cart")?.description == "stale-while-revalidate:600")
            #expect(policy("/api/live/price")?.description == "reload-ignoring-cache", "the longest prefix")
            #expect(policy("/index.html") == nil)
            #expect(policy("/api/cart", ["X-Satchel-Cache": "reload-revalidating"])?.description == "reload-revalidating")
        }
    }

    @Test("cancelling the request cancels the upstream exchange")
    func cancellation() async throws {
        let origin = try await Origin()
        defer { origin.stop() }
        try await withTemporaryFolder { folder async throws in
            let loader = try loader(folder, origin: origin)
            let task = Task {
                let (response, _, _) = (await loader.respond(to: ResourceRequest(url: "satchel://m.shop.com/hang"))).parts
                if case .stream(let stream) = response.body {
                    for try await _ in stream {}
                }
            }
            // Cancelled once the exchange is under way (the origin is writing its body), however long that took to come.
            #expect(try await origin.sawEvent("hang: started", within: 120), "the request never reached the origin")
            task.cancel()
            _ = await task.result
            // The origin writes every 50 ms for 10 s: it sees the client go away at its next write, or finishes.
            var events: [String] = []
            while !events.contains("hang: client went away") && !events.contains("hang: finished") {
                try await Task.sleep(for: .milliseconds(100))
                events = try await origin.events()
            }
            #expect(events.contains("hang: client went away"), "\(events)")
        }
    }

    @Test("a fetch cancelled before it began sends nothing: the origin never sees its request")
    func cancelledBeforeItBegan() async throws {
        let origin = try await Origin()
        defer { origin.stop() }
        let fetcher = URLSessionFetcher()
        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await fetcher.fetchResponse(ResourceRequest(url: origin.base + "/hang?cancelled"), timeouts: FetchTimeouts())
        }
        await #expect(throws: CancellationError.self) { _ = try await cancelled.value }
        // A request made after it on the same session is seen; the cancelled one must not be, then or in the next second.
        let later = try await fetcher.fetchResponse(ResourceRequest(url: origin.base + "/echo?after"), timeouts: FetchTimeouts())
        _ = try await later.body.collect()
        #expect(try await origin.sawEvent("seen: GET /echo?after", within: 120))
        let sent = try await origin.sawEvent("seen: GET /hang?cancelled", within: 1)
        #expect(!sent, "the cancelled request reached the origin")
    }
}

extension ResourceLoader.Answer {
    /// The answer as the tests take it apart.
    var parts: (ResourceResponse, ResourceLoader.Outcome, BodyChannel) { (response, outcome, bodyChannel) }
}

func encodeURIComponentForTests(_ text: String) -> String {
    let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.!~*'()".utf8)
    return text.utf8.map { unreserved.contains($0) ? String(UnicodeScalar($0)) : String(format: "%%%02X", $0) }.joined()
}
