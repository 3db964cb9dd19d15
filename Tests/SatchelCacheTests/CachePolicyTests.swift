import Foundation
@testable import SatchelCache
import SatchelCore
import SatchelHTTP
import Testing

/// The source articles' cache policies (and Workbox's stale-while-revalidate), each against a real origin: what the
/// origin sees tells whether the network was asked.
@Suite("Cache policies per request, against a real origin", .serialized)
struct CachePolicyTests {
    func get(_ fixture: CacheFixture, _ path: String, _ policy: CachePolicy?, maxAge: Int? = nil) async throws -> CacheFixture.Answer {
        let request = ResourceRequest(url: fixture.url(path), cachePolicy: try policy.map { try RequestCachePolicy(policy: $0, maxAge: maxAge) })
        let response = try await fixture.fetcher.fetch(request, timeouts: FetchTimeouts())
        return CacheFixture.Answer(status: response.status, headers: response.headers, body: try await response.body.collect())
    }

    /// A response fresh for one second, then stale: the test's clock moved two seconds on.
    func staleEntry(_ fixture: CacheFixture, _ name: String) async throws -> String {
        let path = "/cached/\(name)?" + fields([("Cache-Control", "max-age=1")])
        #expect(try await get(fixture, path, nil).text == "\(name) #1")
        try await fixture.advance(by: 2)
        return path
    }

    @Test("use-protocol-policy is RFC 9111 as it is: a fresh answer from the cache")
    func protocolPolicy() async throws {
        let fixture = try await CacheFixture(mode: .private)
        let path = "/cached/protocol?" + fields([("Cache-Control", "max-age=60")])
        _ = try await get(fixture, path, .useProtocolPolicy)
        let hit = try await get(fixture, path, .useProtocolPolicy)
        #expect(hit.text == "protocol #1" && hit.cacheStatus.hasPrefix("satchel; hit"))
        await fixture.stop()
    }

    @Test("reload-ignoring-cache asks the origin although a fresh answer is stored, and stores the new one")
    func reloadIgnoringCache() async throws {
        let fixture = try await CacheFixture(mode: .private)
        let path = "/cached/reload?" + fields([("Cache-Control", "max-age=60")])
        _ = try await get(fixture, path, nil)
        let reloaded = try await get(fixture, path, .reloadIgnoringCache)
        #expect(reloaded.text == "reload #2" && reloaded.cacheStatus.contains("fwd=request") && reloaded.cacheStatus.contains("reload-ignoring-cache"))
        await fixture.settled()
        #expect(try await get(fixture, path, nil).text == "reload #2", "the reloaded answer replaced the stored one")
        await fixture.stop()
    }

    @Test("return-cache-else-load answers a stale entry without the origin; past its max age, or with nothing stored, it loads")
    func returnCacheElseLoad() async throws {
        let fixture = try await CacheFixture(mode: .private)
        let path = try await staleEntry(fixture, "else-load")
        let stale = try await get(fixture, path, .returnCacheElseLoad)
        #expect(stale.text == "else-load #1" && stale.cacheStatus.contains("hit") && stale.cacheStatus.contains("return-cache-else-load; stale"))
        let tooOld = try await get(fixture, path, .returnCacheElseLoad, maxAge: 0)
        #expect(tooOld.text == "else-load #2", "older than the max age: the origin was asked")
        let nothing = try await get(fixture, "/cached/else-load-new", .returnCacheElseLoad)
        #expect(nothing.text == "else-load-new #1")
        #expect(fixture.cache.statistics.staleAnswers == 1)
        await fixture.stop()
    }

    @Test("return-cache-dont-load never asks the origin: a stored answer of any age, or a failure that says why")
    func returnCacheDontLoad() async throws {
        let fixture = try await CacheFixture(mode: .private)
        let path = try await staleEntry(fixture, "dont-load")
        try await fixture.origin.failCached("reset")
        let stored = try await get(fixture, path, .returnCacheDontLoad)
        #expect(stored.text == "dont-load #1" && stored.cacheStatus.contains("return-cache-dont-load; stale"))
        await #expect(throws: FetchError.notCached("nothing is stored for \(fixture.url("/cached/never"))")) {
            _ = try await get(fixture, "/cached/never", .returnCacheDontLoad)
        }
        await #expect(throws: FetchError.self) { _ = try await get(fixture, path, .returnCacheDontLoad, maxAge: 0) }
        try await fixture.origin.failCached("")
        await fixture.stop()
    }

    @Test("reload-revalidating asks the origin about a fresh stored answer before using it")
    func reloadRevalidating() async throws {
        let fixture = try await CacheFixture(mode: .private)
        let path = "/cached/revalidate?" + fields([("Cache-Control", "max-age=60"), ("ETag", "\"v1\"")])
        _ = try await get(fixture, path, nil)
        let revalidated = try await get(fixture, path, .reloadRevalidating)
        // The origin answers 304 to the stored ETag: the stored body, counted as a revalidation.
        #expect(revalidated.text == "revalidate #1" && revalidated.cacheStatus.contains("fwd=request") && revalidated.cacheStatus.contains("fwd-status=304"))
        #expect(revalidated.originCount == 2, "the origin saw the second request")
        #expect(fixture.cache.statistics.revalidations == 1)
        await fixture.stop()
    }

    @Test("stale-while-revalidate answers a stale entry at once and refreshes it behind; the next request gets the refresh")
    func staleWhileRevalidate() async throws {
        let fixture = try await CacheFixture(mode: .private)
        let path = try await staleEntry(fixture, "swr")
        let stale = try await get(fixture, path, .staleWhileRevalidate)
        #expect(stale.text == "swr #1" && stale.cacheStatus.contains("stale-while-revalidate; stale"))
        // The refresh stores a newer answer: #2, or later, since this policy refreshes behind every answer it gives.
        var next = "swr #1"
        let deadline = ContinuousClock.now + .seconds(120)
        while next == "swr #1", ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            next = try await get(fixture, path, .staleWhileRevalidate).text
        }
        #expect(next.hasPrefix("swr #") && next != "swr #1", "\(next)")
        await fixture.stop()
    }
}
