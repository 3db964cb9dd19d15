import Foundation
import SatchelCore
import SatchelHTTP
@testable import SatchelHost
import Testing

/// A cookie store in memory that counts its round trips (`allCookies` calls), tells the jar of a change only when the
/// test says so (as `WKHTTPCookieStoreObserver`'s callback comes: later than the change, on its own), and holds the
/// reads the test names until it lets them answer. A held read answers with the cookies the store held when the call
/// reached it, as WebKit's does: a change made while it is held is not in its answer.
final class ObservedCookieStore: CookieStore, @unchecked Sendable {
    private struct State {
        var cookies: [Cookie]
        var reads = 0
        /// Reads (numbered from 1) that wait for ``release(read:)``.
        var holding: Set<Int>
        var held: [Int: CheckedContinuation<Void, Never>] = [:]
        var released: Set<Int> = []
        var readWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
        /// `setCookie` calls that never answer until ``releaseSets()`` (the callback that does not come).
        var stuckSets: Int
        var heldSets: [CheckedContinuation<Void, Never>] = []
        var changed: (@Sendable () -> Void)?
    }

    private let state: Locked<State>
    let tellsOfChanges: Bool
    /// Names of cookies the store cannot hold (`setCookie` leaves it as it was, as the adapters do with a cookie their
    /// platform's type refuses).
    let refused: Set<String>

    init(cookies: [Cookie] = [], tellsOfChanges: Bool = true, holdReads: Set<Int> = [], stuckSets: Int = 0, refused: Set<String> = []) {
        state = Locked(State(cookies: cookies, holding: holdReads, stuckSets: stuckSets))
        self.tellsOfChanges = tellsOfChanges
        self.refused = refused
    }

    /// How many times the store was read.
    var reads: Int { state.withLock { $0.reads } }
    var cookies: [Cookie] { state.withLock { $0.cookies } }

    func allCookies() async -> [Cookie] {
        let answer = Locked<[Cookie]>([])
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            state.withLock { state in
                state.reads += 1
                let number = state.reads
                answer.withLock { $0 = state.cookies }
                if state.holding.contains(number), !state.released.contains(number) {
                    state.held[number] = continuation
                } else {
                    continuation.resume()
                }
                let reached = state.readWaiters.filter { $0.count <= number }
                state.readWaiters.removeAll { $0.count <= number }
                for waiter in reached { waiter.continuation.resume() }
            }
        }
        return answer.withLock { $0 }
    }

    /// Returns once `count` reads have reached the store (their answers are taken).
    func readsStarted(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            state.withLock { state in
                if state.reads >= count { continuation.resume() } else { state.readWaiters.append((count, continuation)) }
            }
        }
    }

    /// Lets held read `number` answer (now, or at once when it comes).
    func release(read number: Int) {
        state.withLock { state in
            state.released.insert(number)
            state.held.removeValue(forKey: number)?.resume()
        }
    }

    func setCookie(_ cookie: Cookie) async {
        let stuck = state.withLock { state in
            guard state.stuckSets > 0 else { return false }
            state.stuckSets -= 1
            return true
        }
        if stuck { await withCheckedContinuation { continuation in state.withLock { $0.heldSets.append(continuation) } } }
        guard !refused.contains(cookie.name) else { return }
        state.withLock { state in
            state.cookies.removeAll { $0.sameIdentity(as: cookie) }
            state.cookies.append(cookie)
        }
    }

    /// The stuck `setCookie` calls answer at last (the platform may still answer a call the jar gave up on).
    func releaseSets() {
        for continuation in state.withLock({ state in defer { state.heldSets = [] }; return state.heldSets }) { continuation.resume() }
    }

    func deleteCookie(_ cookie: Cookie) async { state.withLock { $0.cookies.removeAll { $0.sameIdentity(as: cookie) } } }
    func deleteAllCookies() async { state.withLock { $0.cookies = [] } }

    func observeChanges(_ changed: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { $0.changed = changed }
        return tellsOfChanges
    }

    func kept(_ cookie: Cookie) -> Cookie? { refused.contains(cookie.name) ? nil : cookie }

    /// The web view's own load sets a cookie: the store changes, and the jar hears nothing until ``tellChanged()``.
    func webViewSets(_ cookie: Cookie) {
        state.withLock { state in
            state.cookies.removeAll { $0.sameIdentity(as: cookie) }
            state.cookies.append(cookie)
        }
    }

    /// The store's change observer fires (WebKit's `cookiesDidChange(in:)`: no detail of what changed).
    func tellChanged() {
        state.withLock { $0.changed }?()
    }
}

@Suite("The jar reads the store through a snapshot that the store's change observer keeps fresh (issue 48)")
struct CookieSnapshotTests {
    let page = "satchel://m.shop.com/cart/view"
    let upstream = "https://m.shop.com/api/cart"
    var request: ResourceRequest { ResourceRequest(url: page) }
    /// The store's bound, far beyond any wait these tests make on purpose (they hold a read until they release it): a
    /// busy machine must never turn a held read into a timeout. The timeout's own test sets 50 ms.
    static let patient = AppCookieJar.Configuration(storeTimeout: .seconds(3600))

    /// A clock that moves one second per call: cookies written one after another are created in that order.
    static func steppingClock() -> @Sendable () -> Double {
        let now = Locked(1_700_000_000.0)
        return { now.withLock { value in defer { value += 1 }; return value } }
    }

    @Test("reads with no change between them cost one round trip in all, for the network, pages and native code")
    func unchanged() async throws {
        let store = ObservedCookieStore(cookies: [
            Cookie(name: "sid", value: "s1", domain: "m.shop.com", httpOnly: true), Cookie(name: "theme", value: "dark", domain: "m.shop.com"),
        ])
        let jar = AppCookieJar(store: store, configuration: Self.patient)
        for _ in 0..<10 {
            #expect(try await jar.cookieHeader(for: upstream, request: request) == "sid=s1; theme=dark")
            #expect(try await jar.documentCookie(for: page) == "theme=dark")
        }
        #expect(try await jar.cookies(for: upstream).map(\.name) == ["sid", "theme"])
        #expect(store.reads == 1)
    }

    @Test("the store says it changed: the next read makes exactly one round trip and sees the change, the reads after it none")
    func notified() async throws {
        let store = ObservedCookieStore()
        let jar = AppCookieJar(store: store, configuration: Self.patient)
        #expect(try await jar.documentCookie(for: page) == "")
        store.webViewSets(Cookie(name: "a", value: "1", domain: "m.shop.com"))
        #expect(try await jar.documentCookie(for: page) == "", "until the store tells, the jar answers from what it read")
        #expect(store.reads == 1)
        store.tellChanged()
        #expect(try await jar.documentCookie(for: page) == "a=1")
        #expect(store.reads == 2)
        #expect(try await jar.cookieHeader(for: upstream, request: request) == "a=1")
        #expect(try await jar.documentCookie(for: page) == "a=1")
        #expect(store.reads == 2)
    }

    @Test("the jar's own writes are in the snapshot at once; the observer's later callback costs one round trip and loses none of them")
    func ownWrites() async throws {
        let store = ObservedCookieStore()
        let jar = AppCookieJar(store: store, configuration: Self.patient, clock: Self.steppingClock())
        #expect(try await jar.documentCookie(for: page) == "")
        #expect(try await jar.pageWrote("theme=ocean; Path=/", at: page).map(\.name) == .success("theme"))
        #expect(try await jar.received(["sid=s2; Path=/; HttpOnly"], for: page, request: request) == [])
        #expect(try await jar.set("lang=fr; Domain=shop.com; Path=/", for: "https://m.shop.com/").map(\.name) == .success("lang"))
        #expect(try await jar.pageWrote("sid=forged; Path=/", at: page) == .failure(.replacesHttpOnly), "the write's rules saw the HttpOnly cookie")
        #expect(try await jar.cookieHeader(for: upstream, request: request) == "theme=ocean; sid=s2; lang=fr")
        #expect(try await jar.documentCookie(for: page) == "theme=ocean; lang=fr")
        #expect(try await jar.delete(named: "lang", for: upstream) == 1)
        #expect(try await jar.documentCookie(for: page) == "theme=ocean")
        #expect(store.reads == 1, "the writes and the reads after them answered from the snapshot")
        // WebKit's callback for those writes comes now: the next read asks the store once, and every write is there.
        store.tellChanged()
        #expect(try await jar.cookieHeader(for: upstream, request: request) == "theme=ocean; sid=s2")
        #expect(store.reads == 2)
        try await jar.clear()
        #expect(try await jar.cookies().isEmpty && store.cookies.isEmpty)
        #expect(store.reads == 2, "logout leaves the jar knowing the store is empty")
    }

    @Test("a change told while a round trip is in flight: that answer is not kept, the next read asks again, and its answer is kept")
    func changedDuringRoundTrip() async throws {
        let store = ObservedCookieStore(holdReads: [1])
        let jar = AppCookieJar(store: store, configuration: Self.patient)
        let early = Task { try await jar.documentCookie(for: page) }
        await store.readsStarted(1)
        store.webViewSets(Cookie(name: "a", value: "1", domain: "m.shop.com"))
        store.tellChanged()
        store.release(read: 1)
        #expect(try await early.value == "", "the read made before the change answers without it")
        #expect(try await jar.documentCookie(for: page) == "a=1")
        #expect(store.reads == 2)
        #expect(try await jar.documentCookie(for: page) == "a=1")
        #expect(store.reads == 2)
    }

    @Test("a round trip that began before the jar's write and ends after it does not undo the write")
    func staleRoundTripEndsAfterWrite() async throws {
        let store = ObservedCookieStore(holdReads: [1, 2])
        let jar = AppCookieJar(store: store, configuration: Self.patient)
        let early = Task { try await jar.documentCookie(for: page) }
        await store.readsStarted(1)
        // Something else changed the store: the round trip in flight may not hold it, so the write reads anew.
        store.tellChanged()
        let write = Task { try await jar.pageWrote("theme=ocean; Path=/", at: page) }
        await store.readsStarted(2)
        store.release(read: 2)
        #expect(try await write.value.map(\.name) == .success("theme"))
        // The early round trip ends last, with the store as it was before the write.
        store.release(read: 1)
        #expect(try await early.value == "")
        #expect(try await jar.documentCookie(for: page) == "theme=ocean")
        #expect(store.reads == 2)
    }

    @Test("readers that come while the snapshot is unknown share one round trip")
    func sharedRoundTrip() async throws {
        let store = ObservedCookieStore(cookies: [Cookie(name: "theme", value: "dark", domain: "m.shop.com")], holdReads: [1])
        let jar = AppCookieJar(store: store, configuration: Self.patient)
        let readers = (0..<8).map { index in
            Task { index.isMultiple(of: 2) ? try await jar.documentCookie(for: page) : try await jar.cookieHeader(for: upstream, request: request) }
        }
        await Self.readersAwaitingRoundTrip(jar, 8)
        store.release(read: 1)
        for reader in readers { #expect(try await reader.value == "theme=dark") }
        #expect(store.reads == 1)
    }

    /// Returns once `count` reads wait for the jar's round trip in flight (the one that started it included).
    static func readersAwaitingRoundTrip(_ jar: AppCookieJar, _ count: Int) async {
        await jar.snapshot?.readersWaiting(atLeast: count)
    }

    @Test("a store that cannot tell of changes is asked on every read, as before")
    func unobserved() async throws {
        let store = ObservedCookieStore(cookies: [Cookie(name: "theme", value: "dark", domain: "m.shop.com")], tellsOfChanges: false)
        let jar = AppCookieJar(store: store, configuration: Self.patient)
        for _ in 0..<3 { #expect(try await jar.documentCookie(for: page) == "theme=dark") }
        _ = try await jar.pageWrote("a=1; Path=/", at: page)
        #expect(try await jar.documentCookie(for: page) == "theme=dark; a=1")
        #expect(store.reads == 5, "three reads, the write's own read of the store, and the read after it")
    }

    @Test("a write whose store call does not answer leaves the snapshot unknown: the next read asks the store")
    func unansweredWrite() async throws {
        let store = ObservedCookieStore(stuckSets: 1)
        let logged = Locked<[String]>([])
        let jar = AppCookieJar(store: store, configuration: .init(storeTimeout: .milliseconds(50), log: { line in logged.withLock { $0.append(line) } }))
        #expect(try await jar.documentCookie(for: page) == "")
        // The held call cannot answer before the bound: the test lets it answer only after the jar gave up on it.
        await #expect(throws: CookieStoreError.noAnswer(operation: "setCookie", limit: .milliseconds(50))) {
            try await jar.pageWrote("a=1; Path=/", at: page)
        }
        store.releaseSets()
        #expect(try await jar.documentCookie(for: page) == "a=1", "the platform did the write after all; no callback told")
        #expect(store.reads == 2)
        #expect(logged.withLock { $0 }.count == 1)
    }

    @Test("a written cookie is in the snapshot as the store keeps it: one the store cannot hold is not shown")
    func keptAsTheStoreKeepsIt() async throws {
        let store = ObservedCookieStore(refused: ["odd"])
        let jar = AppCookieJar(store: store, configuration: Self.patient)
        #expect(try await jar.documentCookie(for: page) == "")
        #expect(try await jar.pageWrote("odd=1; Path=/", at: page).map(\.name) == .success("odd"), "the rules accept it")
        #expect(try await jar.documentCookie(for: page) == "", "a round trip would not show it either")
        #expect(store.reads == 1)
    }
}
