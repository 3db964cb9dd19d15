import Foundation
import SatchelCore
import SatchelHTTP

/// The platform's cookie store as Satchel uses it: WebKit's cookie manager on WebKitGTK, `WKHTTPCookieStore` on
/// Apple platforms. It only stores; what goes in and what comes out is decided by ``CookieRules``.
public protocol CookieStore: Sendable {
    /// Every cookie held (expired ones may be among them).
    func allCookies() async -> [Cookie]
    /// Adds `cookie`, replacing the one with the same name, domain and path; one whose expiry has passed deletes it.
    func setCookie(_ cookie: Cookie) async
    func deleteCookie(_ cookie: Cookie) async
    func deleteAllCookies() async
    /// Calls `changed` after the store's cookies change, whoever changed them (the web view's own loads, the jar), and
    /// returns true; false when the store cannot tell (the default). A store that tells lets the jar answer reads from
    /// a copy instead of asking the store each time, so it must tell of every change; it may tell late and more than
    /// once, and a call need not say what changed. One that starts telling only later (its registration is
    /// asynchronous) calls `changed` once it does: what was read before then may be stale.
    func observeChanges(_ changed: @escaping @Sendable () -> Void) -> Bool
    /// `cookie` as a read gives it back after ``setCookie(_:)`` (what the platform's cookie type keeps of it), or nil
    /// when the store cannot hold it and `setCookie` leaves the store as it was. The jar's copy holds its own writes
    /// in this form, so that a read answered from the copy is the one the store would give. The default: `cookie`.
    func kept(_ cookie: Cookie) -> Cookie?
}

extension CookieStore {
    public func observeChanges(_ changed: @escaping @Sendable () -> Void) -> Bool { false }
    public func kept(_ cookie: Cookie) -> Cookie? { cookie }
}

/// One cookie jar for the app's pages, its native code and the network fallback, kept in the platform's store.
///
/// WebKit keeps no cookies for a custom scheme: a `satchel://` page's `document.cookie` does nothing, and a scheme
/// handler's `Set-Cookie` is ignored. So this jar, given to the ``SchemeTaskDriver`` and as the network policy's
/// ``CookieProvider``:
/// - stores each `Set-Cookie` field the network sends on its own, before the page sees the response;
/// - sends the cookies that apply with every upstream request (a `satchel://host` page counts as `https://host`);
/// - answers the hook's `document.cookie` reads and writes (never showing or letting a script touch HttpOnly
///   cookies);
/// - gives native code set, read, delete and clear (logout), and tells observers (the adapters, which tell their
///   pages; the app's HTTP cache) about every change.
///
/// Writes are ordered: each waits for the one before, and every read waits for the writes made before it, so a write
/// is in the store in time for the next request, whatever the platform store's own latency.
///
/// Reads are answered from a copy of the store's cookies that the store's change observer keeps fresh
/// (``CookieStore/observeChanges(_:)``): one round trip to the store when the copy is unknown (at first, and after the
/// store says it changed), shared by the reads that come meanwhile; the jar's own writes are in the copy as soon as
/// the store has them. A store that cannot tell of changes is asked on every read.
///
/// Every call to the store is bounded (``Configuration/storeTimeout``): a call that does not answer fails the one
/// operation that made it with ``CookieStoreError`` naming the call (a request that needed cookies gets 504), is
/// logged, and the operations queued behind it go on.
public final class AppCookieJar: CookieProvider, Sendable {
    public let store: any CookieStore
    public let customSchemes: Set<String>
    public let configuration: Configuration
    private let clock: @Sendable () -> Double
    /// What the jar knows of the store between round trips; nil when the store cannot tell of changes.
    let snapshot: CookieSnapshot?

    public struct Configuration: Sendable {
        /// The longest one call to the store may take.
        public var storeTimeout: Duration
        /// Told of every call that did not answer in time (default: a line on standard error).
        public var log: @Sendable (String) -> Void

        public init(storeTimeout: Duration = .seconds(5), log: @escaping @Sendable (String) -> Void = AppCookieJar.standardErrorLog) {
            self.storeTimeout = storeTimeout
            self.log = log
        }
    }

    /// A line on standard error, prefixed `satchel:`.
    public static let standardErrorLog: @Sendable (String) -> Void = { line in
        FileHandle.standardError.write(Data("satchel: \(line)\n".utf8))
    }
    /// The last write; the next write and every read wait for it.
    private let lastWrite = Locked<Task<Void, Never>?>(nil)
    private let observers = Locked<[@Sendable (Change) -> Void]>([])

    /// What changed, for observers.
    public enum Change: Sendable, Equatable {
        /// Cookies were set or deleted for these hosts' pages (a cookie's domain).
        case domains(Set<String>)
        /// Every cookie went (``clear()``).
        case cleared
    }

    public init(
        store: any CookieStore, customSchemes: Set<String> = ["satchel"], configuration: Configuration = Configuration(),
        clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) {
        self.store = store
        self.customSchemes = customSchemes
        self.configuration = configuration
        self.clock = clock
        // The observer holds the copy, not the jar: the store (which the jar holds) keeps no jar alive.
        let snapshot = CookieSnapshot()
        self.snapshot = store.observeChanges { snapshot.storeChanged() } ? snapshot : nil
    }

    /// Calls `observer` after every change has reached the store (on no particular thread).
    public func observe(_ observer: @escaping @Sendable (Change) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    // MARK: Native code

    /// Sets a cookie as a `Set-Cookie` field for `url` would (an HTTP cookie: it may be HttpOnly).
    @discardableResult
    public func set(_ setCookie: String, for url: String) async throws(CookieStoreError) -> Result<Cookie, CookieRejection> {
        try await write(setCookie, at: url, source: .http, context: .sameSite)
    }

    /// Stores `cookie` as it is (its own rules are the caller's).
    public func set(_ cookie: Cookie) async throws(CookieStoreError) {
        try await enqueue { [self] () async throws(CookieStoreError) in
            try await put(cookie)
            return .domains([cookie.domain])
        }
    }

    /// Every live cookie, or those a request to `url` would carry (HttpOnly ones included).
    public func cookies(for url: String? = nil) async throws(CookieStoreError) -> [Cookie] {
        let all = try await liveCookies()
        guard let url else { return all }
        guard let target = CookieURL(url, customSchemes: customSchemes) else { return [] }
        return all.filter { CookieRules.applies($0, to: target, source: .http, now: clock()) }
    }

    /// Deletes the cookies called `name` that a request to `url` would carry; returns how many.
    @discardableResult
    public func delete(named name: String, for url: String) async throws(CookieStoreError) -> Int {
        let doomed = try await cookies(for: url).filter { $0.name == name }
        try await enqueue { [self] () async throws(CookieStoreError) in
            for cookie in doomed { try await remove(cookie) }
            return .domains(Set(doomed.map(\.domain)))
        }
        return doomed.count
    }

    public func delete(_ cookie: Cookie) async throws(CookieStoreError) {
        try await enqueue { [self] () async throws(CookieStoreError) in
            try await remove(cookie)
            return .domains([cookie.domain])
        }
    }

    /// Logout: every cookie goes, for pages and native code alike; observers hear ``Change/cleared``.
    public func clear() async throws(CookieStoreError) {
        try await enqueue { [self] () async throws(CookieStoreError) in
            try await change("deleteAllCookies") { [store] in await store.deleteAllCookies() }
            snapshot?.cleared()
            return .cleared
        }
    }

    // MARK: The network

    /// Stores the `Set-Cookie` fields of a network response to the page's `request` for `url`, each on its own;
    /// returns why each refused one was refused (in order).
    @discardableResult
    public func received(_ fields: [String], for url: String, request: ResourceRequest) async throws(CookieStoreError) -> [CookieRejection] {
        guard let target = CookieURL(url, customSchemes: customSchemes) else { return [] }
        let context = CookieRules.siteContext(of: request, for: target)
        var refused: [CookieRejection] = []
        for field in fields {
            if case .failure(let why) = try await write(field, at: url, source: .http, context: context) { refused.append(why) }
        }
        return refused
    }

    public func cookieHeader(for url: String, request: ResourceRequest) async throws(CookieStoreError) -> String? {
        guard let target = CookieURL(url, customSchemes: customSchemes) else { return nil }
        return CookieRules.header(try await liveCookies(), for: target, source: .http, context: CookieRules.siteContext(of: request, for: target), now: clock())
    }

    // MARK: Pages

    /// `document.cookie` for a document at `pageURL`: no HttpOnly cookie.
    public func documentCookie(for pageURL: String) async throws(CookieStoreError) -> String {
        guard let target = CookieURL(pageURL, customSchemes: customSchemes) else { return "" }
        return CookieRules.header(try await liveCookies(), for: target, source: .script, now: clock()) ?? ""
    }

    /// A page assigned `text` to `document.cookie`: stored under a script's rules (no HttpOnly).
    @discardableResult
    public func pageWrote(_ text: String, at pageURL: String) async throws(CookieStoreError) -> Result<Cookie, CookieRejection> {
        try await write(text, at: pageURL, source: .script, context: .sameSite)
    }

    // MARK: Ordering

    /// Parses and stores one cookie as one write: the rules see the store as the writes before left it.
    private func write(_ text: String, at url: String, source: CookieRules.Source, context: CookieRules.SiteContext) async throws(CookieStoreError) -> Result<Cookie, CookieRejection> {
        guard let target = CookieURL(url, customSchemes: customSchemes) else { return .failure(.invalidURL(url)) }
        let outcome = Locked<Result<Cookie, CookieRejection>>(.failure(.emptyNameAndValue))
        try await enqueue { [self] () async throws(CookieStoreError) in
            let now = clock()
            // Inside the queue: the writes before this one are in the store (and the copy), later ones wait.
            let existing = try await storeCookies()
            let result = CookieRules.cookie(from: text, at: target, source: source, context: context, existing: existing, now: now)
            outcome.withLock { $0 = result }
            guard case .success(let cookie) = result else { return nil }
            try await put(cookie)
            return .domains([cookie.domain])
        }
        return outcome.withLock { $0 }
    }

    /// Runs `work` after every write enqueued before it, and returns once it is done; observers hear its change. A
    /// write whose store call did not answer throws here, and the next write starts.
    private func enqueue(_ work: @escaping @Sendable () async throws(CookieStoreError) -> Change?) async throws(CookieStoreError) {
        let observers = self.observers
        let failure = Locked<CookieStoreError?>(nil)
        let task = lastWrite.withLock { last -> Task<Void, Never> in
            let previous = last
            let next = Task {
                await previous?.value
                do throws(CookieStoreError) {
                    guard let change = try await work() else { return }
                    for observer in observers.withLock({ $0 }) { observer(change) }
                } catch {
                    failure.withLock { $0 = error }
                }
            }
            last = next
            return next
        }
        await task.value
        if let error = failure.withLock({ $0 }) { throw error }
    }

    /// The store's cookies once every write made before this call is in, expired ones left out.
    private func liveCookies() async throws(CookieStoreError) -> [Cookie] {
        await lastWrite.withLock { $0 }?.value
        let cookies = try await storeCookies()
        let now = clock()
        return cookies.filter { !CookieRules.isExpired($0, now: now) }
    }

    /// Every cookie the store holds (expired ones among them): from the copy when the store tells of changes, else
    /// asked of the store.
    private func storeCookies() async throws(CookieStoreError) -> [Cookie] {
        let read: @Sendable () async throws(CookieStoreError) -> [Cookie] = { [self] () async throws(CookieStoreError) in
            try await bounded("allCookies") { [store] in await store.allCookies() }
        }
        guard let snapshot else { return try await read() }
        return try await snapshot.cookies(reading: read)
    }

    /// Sets `cookie` in the store, then in the copy as the store keeps it (an expired one deletes its namesake there,
    /// as it does in the store).
    private func put(_ cookie: Cookie) async throws(CookieStoreError) {
        try await change("setCookie") { [store] in await store.setCookie(cookie) }
        // A cookie the store cannot hold leaves it, and so the copy, as it was.
        guard let snapshot, let kept = store.kept(cookie) else { return }
        let expired = CookieRules.isExpired(kept, now: clock())
        snapshot.wrote { cookies in
            if expired {
                cookies.removeAll { $0.sameIdentity(as: kept) }
            } else if let index = cookies.firstIndex(where: { $0.sameIdentity(as: kept) }) {
                cookies[index] = kept
            } else {
                cookies.append(kept)
            }
        }
    }

    private func remove(_ cookie: Cookie) async throws(CookieStoreError) {
        try await change("deleteCookie") { [store] in await store.deleteCookie(cookie) }
        snapshot?.wrote { cookies in cookies.removeAll { $0.sameIdentity(as: cookie) } }
    }

    /// A write's call to the store. One that did not answer in time may still land (the platform goes on with it), so
    /// what the store holds is unknown until the next round trip.
    private func change(_ operation: String, _ call: @escaping @Sendable () async -> Void) async throws(CookieStoreError) {
        do throws(CookieStoreError) {
            try await bounded(operation, call)
        } catch {
            snapshot?.storeChanged()
            throw error
        }
    }

    /// `call` to the store, or ``CookieStoreError/noAnswer(operation:limit:)`` (logged) when it did not answer within
    /// ``Configuration/storeTimeout``. The call itself goes on in the background: the platform may still answer it.
    private func bounded<T: Sendable>(_ operation: String, _ call: @escaping @Sendable () async -> T) async throws(CookieStoreError) -> T {
        let limit = configuration.storeTimeout
        let answer: T? = await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
            let resumed = Locked(false)
            let finish: @Sendable (T?) -> Void = { value in
                if resumed.withLock({ done in defer { done = true }; return !done }) { continuation.resume(returning: value) }
            }
            // The call is started first: on a busy pool it is not put behind its own timer.
            let timer = Locked<Task<Void, Never>?>(nil)
            Task {
                let value = await call()
                timer.withLock { $0 }?.cancel()
                finish(value)
            }
            timer.withLock {
                $0 = Task {
                    try? await Task.sleep(for: limit)
                    if !Task.isCancelled { finish(nil) }
                }
            }
            // The call may have answered before the timer existed: then nothing is left for the timer to wait for.
            if resumed.withLock({ $0 }) { timer.withLock { $0 }?.cancel() }
        }
        guard let answer else {
            let error = CookieStoreError.noAnswer(operation: operation, limit: limit)
            configuration.log(error.description)
            throw error
        }
        return answer
    }
}
