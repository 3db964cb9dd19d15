import Foundation
@testable import SatchelCache
import SatchelCore
import SatchelHTTP
import SatchelNetwork
import SatchelTestSupport
import Testing

/// Time as both the cache and the origin count it, moved only by the test: a lifetime runs out when the test says
/// so, never because the machine was slow between two lines. It starts on a whole second, so that the origin's
/// `Date` (whole seconds) says exactly the cache's time.
final class TestClock: Sendable {
    private let seconds = Locked(Date().timeIntervalSince1970.rounded(.down))
    func now() -> Double { seconds.withLock { $0 } }
    func advance(by interval: Double) -> Double { seconds.withLock { $0 += interval; return $0 } }
}

/// A cache in a temporary folder in front of a real origin, through real sockets (NIOFetcher), both on one clock
/// the test moves.
final class CacheFixture: @unchecked Sendable {
    let origin: TestOrigin
    let folder: String
    let network = NIOFetcher()
    let clock = TestClock()
    private(set) var cache: HTTPCache
    private(set) var fetcher: CachingFetcher

    init(mode: CacheMode = .shared, maxBytes: Int64 = 1 << 30) async throws {
        origin = try await TestOrigin()
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("satchel-cache-\(UUID().uuidString)").path
        let clock = clock
        cache = try HTTPCache(configuration: CacheConfiguration(folder: folder + "/cache", maxBytes: maxBytes, mode: mode, clock: { clock.now() }))
        fetcher = CachingFetcher(cache: cache, upstream: network)
        try await origin.setClock(clock.now())
    }

    /// Opens the cache folder again, as a restarted process would.
    func reopen(mode: CacheMode = .shared, maxBytes: Int64 = 1 << 30) throws {
        let clock = clock
        cache = try HTTPCache(configuration: CacheConfiguration(folder: folder + "/cache", maxBytes: maxBytes, mode: mode, clock: { clock.now() }))
        fetcher = CachingFetcher(cache: cache, upstream: network)
    }

    /// Moves the cache's and the origin's time on by `seconds`.
    func advance(by seconds: Double) async throws {
        try await origin.setClock(clock.advance(by: seconds))
    }

    /// Until every response the cache was storing is stored (or dropped): a request after this finds the entry,
    /// not a fill in progress. A bound on a hang, not a speed goal.
    func settled() async {
        let cache = cache
        let done = await eventually(within: .seconds(120)) { cache.filling.withLock { $0.isEmpty } }
        #expect(done, "the cache was still storing after two minutes")
    }

    struct Answer {
        let status: Int
        let headers: HTTPHeaders
        let body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
        var cacheStatus: String { headers["Cache-Status"] ?? "" }
        var originCount: Int { Int(headers["X-Origin-Count"] ?? "") ?? 0 }
    }

    func url(_ path: String) -> String { origin.base + path }

    func get(_ path: String, _ fields: [(String, String)] = [], method: RequestMethod = .get) async throws -> Answer {
        let response = try await fetcher.fetch(ResourceRequest(method: method, url: url(path), headers: HTTPHeaders(fields)), timeouts: FetchTimeouts())
        return Answer(status: response.status, headers: response.headers, body: try await response.body.collect())
    }

    func stop() async {
        try? await network.shutdown()
        origin.stop()
        try? FileManager.default.removeItem(atPath: folder)
    }
}

/// `h=Name:Value` query parameters for the origin's /cached/ answers.
func fields(_ pairs: [(String, String)]) -> String {
    pairs.map { "h=" + ("\($0.0):\($0.1)".addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "") }.joined(separator: "&")
}

@Suite("The HTTP cache against a real origin, through real sockets", .serialized)
struct CachingFetcherTests {
    @Test("a fresh response is stored and reused: the origin sees one request; Age and Cache-Status tell the hit")
    func freshHit() async throws {
        let fixture = try await CacheFixture()
        let path = "/cached/fresh?" + fields([("Cache-Control", "max-age=60")])
        let first = try await fixture.get(path)
        #expect(first.status == 200 && first.text == "fresh #1")
        #expect(first.cacheStatus == "satchel; fwd=uri-miss; stored")
        await fixture.settled()
        let second = try await fixture.get(path)
        #expect(second.text == "fresh #1")
        #expect(second.cacheStatus.hasPrefix("satchel; hit; ttl="))
        #expect(second.headers["Age"] != nil)
        #expect(fixture.cache.statistics.hits == 1 && fixture.cache.statistics.stored == 1)
        await fixture.stop()
    }

    @Test("no-store, and private in a shared cache, are never stored; a private cache keeps private answers")
    func notStored() async throws {
        let fixture = try await CacheFixture()
        for (cc, why) in [("no-store, max-age=60", "no-store"), ("private, max-age=60", "private")] {
            let path = "/cached/\(why)?" + fields([("Cache-Control", cc)])
            let first = try await fixture.get(path)
            #expect(first.cacheStatus == "satchel; fwd=uri-miss; detail=\(why)")
            #expect(try await fixture.get(path).text == "\(why) #2", "\(cc) went to the origin again")
        }
        try fixture.reopen(mode: .private)
        let path = "/cached/mine?" + fields([("Cache-Control", "private, max-age=60")])
        _ = try await fixture.get(path)
        await fixture.settled()
        #expect(try await fixture.get(path).text == "mine #1")
        await fixture.stop()
    }

    @Test("a stale response is revalidated: the origin's 304 freshens the stored fields, the stored body answers")
    func revalidation() async throws {
        let fixture = try await CacheFixture()
        let path = "/cached/validated?" + fields([("Cache-Control", "max-age=1"), ("ETag", "\"v1\"")])
        #expect(try await fixture.get(path).text == "validated #1")
        try await fixture.advance(by: 2)
        let revalidated = try await fixture.get(path)
        #expect(revalidated.text == "validated #1", "the stored body, after the origin's 304")
        #expect(revalidated.originCount == 2, "the 304's X-Origin-Count replaced the stored one")
        #expect(revalidated.cacheStatus.hasPrefix("satchel; fwd=stale; fwd-status=304"))
        #expect(fixture.cache.statistics.revalidations == 1)
        await fixture.stop()
    }

    @Test("Vary: another value of the named field is a miss, the same value a hit; Vary: * is never stored")
    func vary() async throws {
        let fixture = try await CacheFixture()
        let path = "/cached/lang?" + fields([("Cache-Control", "max-age=60"), ("Vary", "Accept-Language")])
        #expect(try await fixture.get(path, [("Accept-Language", "en")]).text == "lang #1")
        await fixture.settled()
        let french = try await fixture.get(path, [("Accept-Language", "fr")])
        #expect(french.text == "lang #2" && french.cacheStatus.hasPrefix("satchel; fwd=vary-miss"))
        await fixture.settled()
        #expect(try await fixture.get(path, [("Accept-Language", "en")]).text == "lang #1")
        #expect(try await fixture.get(path, [("Accept-Language", "fr")]).text == "lang #2")
        let star = "/cached/star?" + fields([("Cache-Control", "max-age=60"), ("Vary", "*")])
        _ = try await fixture.get(star)
        #expect(try await fixture.get(star).text == "star #2")
        await fixture.stop()
    }

    @Test("the origin down: stale-if-error answers within its window, must-revalidate never, and a disconnected cache answers stale")
    func staleOnError() async throws {
        let fixture = try await CacheFixture()
        let lenient = "/cached/lenient?" + fields([("Cache-Control", "max-age=1, stale-if-error=60")])
        let strict = "/cached/strict?" + fields([("Cache-Control", "max-age=1, must-revalidate")])
        let plain = "/cached/plain?" + fields([("Cache-Control", "max-age=1")])
        for path in [lenient, strict, plain] { _ = try await fixture.get(path) }
        try await fixture.advance(by: 2)
        try await fixture.origin.failCached("503")
        let fromCache = try await fixture.get(lenient)
        #expect(fromCache.status == 200 && fromCache.text == "lenient #1")
        #expect(fromCache.cacheStatus == "satchel; fwd=stale; fwd-status=503; detail=stale-if-error")
        #expect(try await fixture.get(strict).status == 503)
        #expect(try await fixture.get(plain).status == 503, "a 503 without stale-if-error is the answer")
        try await fixture.origin.failCached("reset")
        let disconnected = try await fixture.get(plain)
        #expect(disconnected.status == 200 && disconnected.text == "plain #1")
        await #expect(throws: FetchError.self) { _ = try await fixture.get(strict) }
        try await fixture.origin.failCached("")
        await fixture.stop()
    }

    @Test("stale-while-revalidate: the stale answer at once, the origin asked behind it, the next request gets what it said")
    func staleWhileRevalidate() async throws {
        let fixture = try await CacheFixture()
        let path = "/cached/swr?" + fields([("Cache-Control", "max-age=1, stale-while-revalidate=60")])
        #expect(try await fixture.get(path).text == "swr #1")
        try await fixture.advance(by: 2)
        let stale = try await fixture.get(path)
        #expect(stale.text == "swr #1" && stale.cacheStatus.contains("detail=stale-while-revalidate"))
        // The refresh behind it is the origin's second answer, and it stays fresh: time moves only when the test says.
        var next = try await fixture.get(path)
        let deadline = ContinuousClock.now + .seconds(120)
        while next.text == "swr #1", ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            next = try await fixture.get(path)
        }
        #expect(next.text == "swr #2")
        await fixture.stop()
    }

    @Test("a successful POST invalidates the URL and the Location it names (§4.4)")
    func invalidation() async throws {
        let fixture = try await CacheFixture()
        let item = "/cached/item?" + fields([("Cache-Control", "max-age=60")])
        _ = try await fixture.get(item)
        await fixture.settled()
        #expect(try await fixture.get(item).text == "item #1")
        let post = "/cached/list?" + fields([("Location", item)])
        _ = try await fixture.get(post, method: "POST")
        #expect(try await fixture.get(item).text == "item #2", "invalidated by the POST's Location")
        await fixture.stop()
    }

    @Test("HEAD, Range and conditional requests are answered from a stored GET")
    func fromStored() async throws {
        let fixture = try await CacheFixture()
        let path = "/cached/bytes?size=100000&" + fields([("Cache-Control", "max-age=60"), ("ETag", "\"b1\"")])
        let whole = try await fixture.get(path)
        #expect(whole.body.count == 100_000)
        await fixture.settled()
        let head = try await fixture.get(path, method: "HEAD")
        #expect(head.status == 200 && head.body.isEmpty && head.headers["Content-Length"] == "100000" && head.cacheStatus.contains("hit"))
        let range = try await fixture.get(path, [("Range", "bytes=1000-1999")])
        #expect(range.status == 206 && range.headers["Content-Range"] == "bytes 1000-1999/100000")
        #expect(range.body == Array(whole.body[1000...1999]))
        let notModified = try await fixture.get(path, [("If-None-Match", "\"b1\"")])
        #expect(notModified.status == 304 && notModified.body.isEmpty)
        let precondition = try await fixture.get(path, [("If-Match", "\"other\"")])
        #expect(precondition.status == 412)
        #expect(whole.originCount == 1 && fixture.cache.statistics.misses == 1)
        await fixture.stop()
    }

    @Test("request directives: no-cache goes to the origin, only-if-cached never does, max-stale takes a stale answer")
    func requestDirectives() async throws {
        let fixture = try await CacheFixture()
        let path = "/cached/directives?" + fields([("Cache-Control", "max-age=1"), ("ETag", "\"d\"")])
        let missing = try await fixture.get("/cached/absent", [("Cache-Control", "only-if-cached")])
        #expect(missing.status == 504)
        _ = try await fixture.get(path)
        let forced = try await fixture.get(path, [("Cache-Control", "no-cache")])
        #expect(forced.cacheStatus.hasPrefix("satchel; fwd=request; fwd-status=304"))
        try await fixture.advance(by: 2)
        let stale = try await fixture.get(path, [("Cache-Control", "max-stale=600")])
        #expect(stale.cacheStatus.contains("hit") && stale.cacheStatus.contains("max-stale"))
        #expect(try await fixture.get(path, [("Cache-Control", "only-if-cached")]).status == 504, "stale, and the request may not go to the origin")
        await fixture.stop()
    }

    @Test("twenty concurrent requests for one URL make one upstream request; the rest read the same fill")
    func collapsed() async throws {
        let fixture = try await CacheFixture()
        let path = "/cached/hot?size=2000000&pace=5&" + fields([("Cache-Control", "max-age=60")])
        let answers = try await withThrowingTaskGroup(of: CacheFixture.Answer.self) { group in
            for _ in 0..<20 { group.addTask { try await fixture.get(path) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.allSatisfy { $0.status == 200 && $0.body.count == 2_000_000 })
        #expect(Set(answers.map(\.body)).count == 1)
        #expect(answers.map(\.originCount).allSatisfy { $0 == 1 }, "one upstream request")
        #expect(fixture.cache.statistics.misses == 1)
        await fixture.stop()
    }

    @Test("a client that goes away does not end a fill another client reads; the stored body is whole")
    func leavingClient() async throws {
        let fixture = try await CacheFixture()
        let path = "/cached/shared?size=4000000&pace=10&" + fields([("Cache-Control", "max-age=60")])
        let request = ResourceRequest(url: fixture.url(path))
        let first = try await fixture.fetcher.fetch(request, timeouts: FetchTimeouts())
        var iterator = first.body.chunks().makeAsyncIterator()
        _ = try await iterator.next()
        let second = try await fixture.fetcher.fetch(request, timeouts: FetchTimeouts())
        #expect(second.headers["Cache-Status"]?.contains("collapsed") == true)
        _ = consume iterator
        _ = consume first
        let body = try await second.body.collect()
        #expect(body.count == 4_000_000)
        await fixture.settled()
        let third = try await fixture.get(path)
        #expect(third.cacheStatus.contains("hit") && third.body == body)
        await fixture.stop()
    }

    @Test("the last reader leaving: a fill past half its length is finished and stored; one before half stops and leaves no file")
    func backgroundFill() async throws {
        let fixture = try await CacheFixture()
        func leave(_ name: String, afterReading bytes: Int) async throws {
            let path = "/cached/\(name)?size=4000000&pace=5&" + fields([("Cache-Control", "max-age=60")])
            let response = try await fixture.fetcher.fetch(ResourceRequest(url: fixture.url(path)), timeouts: FetchTimeouts())
            var iterator = response.body.chunks().makeAsyncIterator()
            var read = 0
            while read < bytes, let chunk = try await iterator.next() { read += chunk.count }
        }
        try await leave("late", afterReading: 3_000_000)
        try await leave("early", afterReading: 100_000)
        await fixture.settled()
        let late = try await fixture.get("/cached/late?size=4000000&pace=5&" + fields([("Cache-Control", "max-age=60")]))
        #expect(late.cacheStatus.contains("hit") && late.body.count == 4_000_000, "finished in the background: \(late.cacheStatus)")
        let early = try await fixture.get("/cached/early?size=4000000&pace=5&" + fields([("Cache-Control", "max-age=60")]))
        #expect(early.originCount == 2, "stopped, so fetched again")
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.folder + "/cache/tmp").isEmpty, "the stopped fill's file is gone")
        await fixture.stop()
    }

    @Test("a restarted cache finds what was complete; a fill cut short is gone")
    func restart() async throws {
        let fixture = try await CacheFixture()
        let kept = "/cached/kept?" + fields([("Cache-Control", "max-age=600")])
        _ = try await fixture.get(kept)
        await fixture.settled()
        // A fill in progress when the process died: a body in tmp/ with no record.
        FileManager.default.createFile(atPath: fixture.folder + "/cache/tmp/deadbeef.body", contents: Data(repeating: 1, count: 10))
        try fixture.reopen()
        #expect(try await fixture.get(kept).text == "kept #1")
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.folder + "/cache/tmp").isEmpty)
        await fixture.stop()
    }

    @Test("the bound holds: least recently used entries go first")
    func bound() async throws {
        let fixture = try await CacheFixture(maxBytes: 250_000)
        func path(_ name: String) -> String { "/cached/\(name)?size=100000&" + fields([("Cache-Control", "max-age=600")]) }
        for name in ["a", "b"] {
            _ = try await fixture.get(path(name))
            await fixture.settled()
        }
        _ = try await fixture.get(path("a"))  // a is now the most recently used
        _ = try await fixture.get(path("c"))
        await fixture.settled()
        #expect(fixture.cache.storedBytes <= 250_000)
        #expect(try await fixture.get(path("a")).originCount == 1, "a kept")
        #expect(try await fixture.get(path("b")).originCount == 2, "b evicted")
        await fixture.stop()
    }

    @Test("an answer that cannot be stored passes through with its body untouched, and the next misses for it do not wait")
    func passThrough() async throws {
        let fixture = try await CacheFixture()
        let path = "/cached/api?size=70000&" + fields([("Cache-Control", "no-store")])
        let request = ResourceRequest(url: fixture.url(path))
        let response = try await fixture.fetcher.fetch(request, timeouts: FetchTimeouts())
        #expect(response.body.knownLength == nil)
        if case .stream(let stream) = response.body { #expect(stream.source is UpstreamExchange, "the NIO exchange itself, not a copy") }
        _ = try await response.body.collect()
        let answers = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<5 { group.addTask { try await fixture.get(path).originCount } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(answers).count == 5, "every request went to the origin itself: \(answers)")
        await fixture.stop()
    }
}
