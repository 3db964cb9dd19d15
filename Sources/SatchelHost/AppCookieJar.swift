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
/// Every call to the store is bounded (``Configuration/storeTimeout``): a call that does not answer fails the one
/// operation that made it with ``CookieStoreError`` naming the call (a request that needed cookies gets 504), is
/// logged, and the operations queued behind it go on.
public final class AppCookieJar: CookieProvider, Sendable {
    public let store: any CookieStore
    public let customSchemes: Set<String>
    public let configuration: Configuration
    private let clock: @Sendable () -> Double

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
            try await bounded("setCookie") { [store] in await store.setCookie(cookie) }
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
            for cookie in doomed { try await bounded("deleteCookie") { [store] in await store.deleteCookie(cookie) } }
            return .domains(Set(doomed.map(\.domain)))
        }
        return doomed.count
    }

    public func delete(_ cookie: Cookie) async throws(CookieStoreError) {
        try await enqueue { [self] () async throws(CookieStoreError) in
            try await bounded("deleteCookie") { [store] in await store.deleteCookie(cookie) }
            return .domains([cookie.domain])
        }
    }

    /// Logout: every cookie goes, for pages and native code alike; observers hear ``Change/cleared``.
    public func clear() async throws(CookieStoreError) {
        try await enqueue { [self] () async throws(CookieStoreError) in
            try await bounded("deleteAllCookies") { [store] in await store.deleteAllCookies() }
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
            let existing = try await bounded("allCookies") { [store] in await store.allCookies() }
            let result = CookieRules.cookie(from: text, at: target, source: source, context: context, existing: existing, now: now)
            outcome.withLock { $0 = result }
            guard case .success(let cookie) = result else { return nil }
            try await bounded("setCookie") { [store] in await store.setCookie(cookie) }
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
        let now = clock()
        return try await bounded("allCookies") { [store] in await store.allCookies() }.filter { !CookieRules.isExpired($0, now: now) }
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
