import Foundation
import SatchelCore
import SatchelEngine
import SatchelHTTP
import SatchelTestSupport
@testable import SatchelHost
import Testing

/// A cookie store in memory that takes its time over every operation, as WebKit's (in another process) does: what
/// the jar's ordering has to survive.
final class SlowCookieStore: CookieStore, @unchecked Sendable {
    private let lock = NSLock()
    private var cookies: [Cookie] = []
    let delay: Duration
    /// Each operation takes a random part of `delay` instead (so that, unordered, later writes would often land first).
    let jitter: Bool

    init(delay: Duration = .milliseconds(20), jitter: Bool = false) {
        self.delay = delay
        self.jitter = jitter
    }

    private func pause() async {
        let nanoseconds = delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
        try? await Task.sleep(for: .nanoseconds(jitter ? Int64.random(in: 0...max(0, nanoseconds)) : nanoseconds))
    }

    var snapshot: [Cookie] { lock.withLock { cookies } }

    func allCookies() async -> [Cookie] {
        await pause()
        return lock.withLock { cookies }
    }

    func setCookie(_ cookie: Cookie) async {
        await pause()
        lock.withLock {
            cookies.removeAll { $0.sameIdentity(as: cookie) }
            if cookie.expires.map({ $0 > Date().timeIntervalSince1970 }) ?? true { cookies.append(cookie) }
        }
    }

    func deleteCookie(_ cookie: Cookie) async {
        await pause()
        lock.withLock { cookies.removeAll { $0.sameIdentity(as: cookie) } }
    }

    func deleteAllCookies() async {
        await pause()
        lock.withLock { cookies.removeAll() }
    }
}

@Suite("The app's cookie jar: pages, native code and the network share one store")
struct CookieJarTests {
    let page = "satchel://m.shop.com/cart/view"
    let upstream = "https://m.shop.com/api/cart"

    @Test("each Set-Cookie field from the network lands on its own; a refused one says why and changes nothing")
    func received() async throws {
        let jar = AppCookieJar(store: SlowCookieStore())
        let refused = try await jar.received(["sid=s1; Path=/; HttpOnly", "theme=dark; Path=/", "bad=\u{1}", "__Host-x=1"], for: page, request: ResourceRequest(url: page))
        #expect(refused == [.controlCharacter, .hostPrefixRules])
        #expect(Set(try await jar.cookies().map(\.name)) == ["sid", "theme"])
        #expect(try await jar.cookieHeader(for: upstream, request: ResourceRequest(url: page)) == "sid=s1; theme=dark")
    }

    @Test("document.cookie shows no HttpOnly cookie; a page can neither set nor replace one; its writes are in the jar for the next request")
    func pages() async throws {
        let store = SlowCookieStore(delay: .milliseconds(30))
        let jar = AppCookieJar(store: store)
        try await jar.received(["sid=s1; Path=/; HttpOnly"], for: page, request: ResourceRequest(url: page))
        #expect(try await jar.documentCookie(for: page) == "")
        #expect(try await jar.pageWrote("sid=forged; Path=/", at: page) == .failure(.replacesHttpOnly))
        #expect(try await jar.pageWrote("x=1; HttpOnly", at: page) == .failure(.httpOnlyFromScript))
        // Not awaited: the next request's header must still see it (the jar orders writes before reads).
        let write = Task { try await jar.pageWrote("theme=ocean; Path=/", at: page) }
        try? await Task.sleep(for: .milliseconds(1))
        #expect(try await jar.cookieHeader(for: upstream, request: ResourceRequest(url: page)) == "sid=s1; theme=ocean")
        _ = try await write.value
        #expect(try await jar.documentCookie(for: page) == "theme=ocean")
        #expect(try await jar.documentCookie(for: "satchel://other.com/") == "")
    }

    @Test("a hundred writes from many tasks are applied in the order they were made")
    func ordering() async throws {
        let jar = AppCookieJar(store: SlowCookieStore(delay: .milliseconds(5), jitter: true), configuration: .init(storeTimeout: .seconds(3600)))
        // Each write is made before the next (a short pause between): they must land in that order although the
        // store takes a random time over each.
        var writes: [Task<Void, any Error>] = []
        for value in 0..<100 {
            writes.append(Task { try await jar.pageWrote("n=\(value); Path=/", at: page) })
            try? await Task.sleep(for: .microseconds(200))
        }
        // Every write done (however long a busy machine takes), the last one made is the one that stands.
        for write in writes { try await write.value }
        #expect(try await jar.documentCookie(for: page) == "n=99")
    }

    @Test("native code: set (an HttpOnly login too), read for a URL, delete by name, clear for logout; observers hear each change")
    func native() async throws {
        let store = SlowCookieStore(delay: .milliseconds(1))
        let jar = AppCookieJar(store: store)
        let changes = Locked<[AppCookieJar.Change]>([])
        jar.observe { change in changes.withLock { $0.append(change) } }
        #expect((try? await jar.set("login=token; Path=/; HttpOnly; Secure; SameSite=Lax", for: "https://m.shop.com/").get())?.httpOnly == true)
        #expect((try? await jar.set("lang=fr; Domain=shop.com; Path=/", for: "https://m.shop.com/").get())?.hostOnly == false)
        #expect(try await jar.set("x=1; Domain=evil.com", for: "https://m.shop.com/") == .failure(.domainMismatch(domain: "evil.com", host: "m.shop.com")))
        #expect(Set(try await jar.cookies(for: "satchel://m.shop.com/").map(\.name)) == ["login", "lang"])
        #expect(try await jar.cookies(for: "http://m.shop.com/").map(\.name) == ["lang"], "Secure is for secure URLs only")
        #expect(try await jar.cookies(for: "satchel://img.shop.com/").map(\.name) == ["lang"])
        #expect(try await jar.documentCookie(for: "satchel://m.shop.com/") == "lang=fr")
        #expect(try await jar.delete(named: "lang", for: "https://img.shop.com/") == 1)
        #expect(try await jar.cookies().map(\.name) == ["login"])
        try await jar.clear()
        #expect(try await jar.cookies().isEmpty && store.snapshot.isEmpty)
        #expect(try await jar.cookieHeader(for: upstream, request: ResourceRequest(url: page)) == nil)
        #expect(changes.withLock { $0 } == [.domains(["m.shop.com"]), .domains(["shop.com"]), .domains(["shop.com"]), .cleared])
    }

    @Test("a cross-site request (another site's Origin) carries no Lax or Strict cookie upstream, and cannot set one")
    func crossSite() async throws {
        let jar = AppCookieJar(store: SlowCookieStore(delay: .zero))
        _ = try await jar.set("lax=1; Path=/; SameSite=Lax", for: upstream)
        _ = try await jar.set("none=2; Path=/; SameSite=None; Secure", for: upstream)
        let foreign = ResourceRequest(url: page, headers: ["Origin": "satchel://other.example"])
        #expect(try await jar.cookieHeader(for: upstream, request: foreign) == "none=2")
        #expect(try await jar.cookieHeader(for: upstream, request: ResourceRequest(url: page, headers: ["Origin": "satchel://www.shop.com"])) == "lax=1; none=2")
        #expect(try await jar.received(["set=1; SameSite=Strict"], for: page, request: foreign) == [.sameSiteFromCrossSite])
    }

    @Test("expired cookies are never read back, and an expiring Set-Cookie deletes its namesake")
    func expiry() async throws {
        let store = SlowCookieStore(delay: .zero)
        let jar = AppCookieJar(store: store)
        try await jar.received(["a=1; Path=/"], for: page, request: ResourceRequest(url: page))
        try await jar.received(["a=gone; Path=/; Max-Age=0"], for: page, request: ResourceRequest(url: page))
        #expect(try await jar.cookies().isEmpty && store.snapshot.isEmpty)
        try await jar.set(Cookie(name: "old", value: "1", domain: "m.shop.com", expires: 1))
        #expect(try await jar.cookies().isEmpty, "an expired cookie the store still holds is not read back")
    }
}

@Suite("The driver's cookie part: document.cookie requests and Set-Cookie from a real origin")
struct DriverCookieTests {
    let tests = SchemeTaskDriverTests()

    func pageRequest(_ driver: SchemeTaskDriver, path: String = "/", write: String? = nil, proof: Bool = true) throws -> ResourceRequest {
        var headers: HTTPHeaders = [:]
        if let write { headers.add(PageCookies.writeHeader, write.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? write) }
        var request = ResourceRequest(url: "satchel://app.example\(PageCookies.path)?path=" + (path.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? path), headers: headers)
        if proof {
            let secret = try #require(driver.loader.engine.bodyProofSecret)
            let token = BodyProof.make(
                secret: secret, channel: .cookie, binding: PageCookies.binding(path: path, write: write),
                time: Int64(Date().timeIntervalSince1970 * 1000), nonce: "n" + UUID().uuidString.replacingOccurrences(of: "-", with: ""))
            request.headers.add("X-Satchel-Token", token)
        }
        return request
    }

    func run(_ driver: SchemeTaskDriver, _ queue: DispatchQueue, _ request: ResourceRequest) async throws -> (head: ResponseHead?, body: String) {
        let task = RecordingTask(request)
        queue.async { driver.start(task) }
        #expect(await task.ended())
        #expect(task.snapshot.violations.isEmpty)
        return task.response
    }

    @Test("a page's write with the hook's proof reaches the jar, and the answer is the document's cookies; without a proof, or replayed, 403")
    func endpoint() async throws {
        try await withTemporaryFolder { folder async throws in
            let queue = tests.makeQueue()
            let jar = AppCookieJar(store: SlowCookieStore(delay: .milliseconds(5)))
            let driver = try tests.driver(folder, queue: queue, cookies: jar)
            try await jar.received(["sid=s; Path=/; HttpOnly", "cart=3; Path=/cart"], for: "satchel://app.example/", request: ResourceRequest(url: "satchel://app.example/"))
            let written = try await run(driver, queue, try pageRequest(driver, path: "/cart/view", write: "theme=dark ocean; Path=/"))
            #expect(written.head?.status == 200 && written.head?.headers["Cache-Control"] == "no-store")
            #expect(written.body == "cart=3; theme=dark ocean", "no HttpOnly cookie; the /cart cookie for a /cart page")
            #expect(try await jar.cookieHeader(for: "https://app.example/x", request: ResourceRequest(url: "satchel://app.example/x")) == "sid=s; theme=dark ocean")
            let read = try await run(driver, queue, try pageRequest(driver, path: "/"))
            #expect(read.body == "theme=dark ocean")
            let refused = try await run(driver, queue, try pageRequest(driver, write: "sid=forged; Path=/"))
            #expect(refused.head?.headers[PageCookies.refusedHeader] == "a script cannot replace an HttpOnly cookie" && refused.body == "theme=dark ocean")
            let forged = try await run(driver, queue, try pageRequest(driver, write: "evil=1", proof: false))
            #expect(forged.head?.status == 403)
            let replay = try pageRequest(driver, write: "again=1")
            #expect(try await run(driver, queue, replay).head?.status == 200)
            #expect(try await run(driver, queue, replay).head?.status == 403, "a proof is good once")
            #expect(try await jar.cookies().map(\.name).sorted() == ["again", "cart", "sid", "theme"])
        }
    }

    @Test("Set-Cookie from a real origin: both fields stored on their own (HttpOnly kept), none reaches WebKit, and the next request carries them")
    func network() async throws {
        let origin = try await TestOrigin()
        defer { origin.stop() }
        try await withTemporaryFolder { folder async throws in
            let queue = tests.makeQueue()
            let jar = AppCookieJar(store: SlowCookieStore(delay: .milliseconds(5)))
            let driver = try tests.driver(folder, queue: queue, allowed: [try HostPattern("api.example")], overrides: ["api.example": origin.base], cookies: jar)
            let set = try await run(driver, queue, ResourceRequest(url: "satchel://api.example/cookies"))
            #expect(set.head?.status == 200 && set.head?.headers.values("Set-Cookie") == [])
            let stored = try await jar.cookies()
            #expect(stored.map(\.name).sorted() == ["a", "b"] && stored.first { $0.name == "a" }?.httpOnly == true)
            let echo = try await run(driver, queue, ResourceRequest(url: "satchel://api.example/echo"))
            let decoded = try JSONDecoder().decode(TestOrigin.Echo.self, from: Data(echo.body.utf8))
            #expect(decoded.headers.first { $0[0].lowercased() == "cookie" }?[1] == "a=1; b=2")
            // /echo sets seen=1 as it answers.
            #expect(try await jar.documentCookie(for: "satchel://api.example/") == "b=2; seen=1")
        }
    }
}

/// A store whose first `stuck` calls of one kind never answer (WKHTTPCookieStore's callback that never comes).
final class StuckCookieStore: CookieStore, @unchecked Sendable {
    private let lock = NSLock()
    private var cookies: [Cookie] = []
    private var stuckSets: Int
    private var stuckReads: Int

    init(stuckSets: Int = 0, stuckReads: Int = 0) {
        self.stuckSets = stuckSets
        self.stuckReads = stuckReads
    }

    private func stuck(_ count: ReferenceWritableKeyPath<StuckCookieStore, Int>) -> Bool {
        lock.withLock {
            guard self[keyPath: count] > 0 else { return false }
            self[keyPath: count] -= 1
            return true
        }
    }

    func allCookies() async -> [Cookie] {
        if stuck(\.stuckReads) { try? await Task.sleep(for: .seconds(3600)) }
        return lock.withLock { cookies }
    }
    func setCookie(_ cookie: Cookie) async {
        if stuck(\.stuckSets) { try? await Task.sleep(for: .seconds(3600)) }
        lock.withLock {
            cookies.removeAll { $0.sameIdentity(as: cookie) }
            cookies.append(cookie)
        }
    }
    func deleteCookie(_ cookie: Cookie) async { lock.withLock { cookies.removeAll { $0.sameIdentity(as: cookie) } } }
    func deleteAllCookies() async { lock.withLock { cookies = [] } }
}

@Suite("Cookie-store calls are bounded: one that never answers fails its own operation, is logged, and the rest go on")
struct BoundedCookieStoreTests {
    @Test("a setCookie that never answers: that write fails naming it and is logged; the next write and reads go on")
    func stuckWrite() async throws {
        let logged = Locked<[String]>([])
        let jar = AppCookieJar(
            store: StuckCookieStore(stuckSets: 1), configuration: .init(storeTimeout: .seconds(1), log: { line in logged.withLock { $0.append(line) } }))
        let started = ContinuousClock.now
        await #expect(throws: CookieStoreError.noAnswer(operation: "setCookie", limit: .seconds(1))) {
            try await jar.set("a=1", for: "https://m.shop.com/")
        }
        #expect(logged.withLock { $0 } == ["the cookie store did not answer setCookie within 1.0 seconds"])
        #expect(try await jar.set("b=2", for: "https://m.shop.com/").map(\.name) == .success("b"))
        #expect(try await jar.cookieHeader(for: "https://m.shop.com/x", request: ResourceRequest(url: "satchel://m.shop.com/")) == "b=2")
        // The stuck call sleeps an hour; the bound tells "after its timeout" from "after the hour" however late a busy
        // test pool resumes the timer (it has taken a minute while every test starts at once).
        #expect(ContinuousClock.now - started < .seconds(600), "bounded, not waiting for the stuck call (it sleeps an hour)")
    }

    @Test("a read that never answers: the network request that needed cookies fails with 504 naming it; document.cookie too; the next request goes on")
    func stuckRead() async throws {
        try await withTemporaryFolder { folder in
            let logged = Locked<[String]>([])
            let jar = AppCookieJar(
                store: StuckCookieStore(stuckReads: 1), configuration: .init(storeTimeout: .seconds(1), log: { line in logged.withLock { $0.append(line) } }))
            let queue = SchemeTaskDriverTests().makeQueue()
            let origin = try await TestOrigin()
            defer { origin.stop() }
            let driver = try SchemeTaskDriverTests().driver(
                folder, queue: queue, allowed: [try HostPattern("api.example")], overrides: ["api.example": origin.base], cookies: jar)
            let failed = try await DriverCookieTests().run(driver, queue, ResourceRequest(url: "satchel://api.example/echo"))
            #expect(failed.head?.status == 504 && failed.body.contains("allCookies"), "\(failed.head?.status ?? 0) \(failed.body)")
            #expect(logged.withLock { $0 }.count == 1)
            let next = try await DriverCookieTests().run(driver, queue, ResourceRequest(url: "satchel://api.example/echo"))
            #expect(next.head?.status == 200)
        }
    }
}

