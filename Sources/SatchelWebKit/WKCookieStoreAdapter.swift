#if canImport(WebKit)
import Foundation
import SatchelCore
import SatchelHost
import WebKit

/// `WKHTTPCookieStore` (a `WKWebsiteDataStore`'s) as the ``CookieStore`` of the app's ``AppCookieJar``: the cookies
/// the web view's own http(s) loads see are the jar's. Every call is made on the main actor, where WebKit wants it.
///
/// `HTTPCookie` keeps no creation time: cookies read back have `created` 0. SameSite maps both ways as Apple documents
/// it (``FoundationSameSite``): no policy is None, sent cross-site.
///
/// It tells the jar of every change to the store (``observeChanges(_:)``), through a `WKHTTPCookieStoreObserver`, so
/// that the jar reads the store once per change rather than on every request and `document.cookie` read (issue 48).
public final class WKCookieStoreAdapter: CookieStore, @unchecked Sendable {
    public let store: WKHTTPCookieStore
    /// The observers registered with the store, kept here: the store holds them weakly.
    private let observers = Locked<[ChangeObserver]>([])

    public init(store: WKHTTPCookieStore) {
        self.store = store
    }

    deinit {
        // The store does not retain its observers, and WebKit's header leaves removing them to their owner.
        let observers = self.observers.withLock { $0 }
        guard !observers.isEmpty else { return }
        Task { @MainActor [store] in
            for observer in observers { store.remove(observer) }
        }
    }

    /// Registers a `WKHTTPCookieStoreObserver` whose callback (on the main thread, after any change: the web view's own
    /// loads, the jar's writes) calls `changed`. Registration waits for the main actor, so `changed` is also called
    /// once it is done: a change before it went untold, and whatever the jar read by then may be stale.
    public func observeChanges(_ changed: @escaping @Sendable () -> Void) -> Bool {
        Task { @MainActor [weak self] in
            guard let self else { return }
            let observer = ChangeObserver(changed)
            store.add(observer)
            observers.withLock { $0.append(observer) }
            changed()
        }
        return true
    }

    /// The cookie as `HTTPCookie` keeps it and `allCookies()` gives it back: creation time 0, SameSite as Foundation
    /// holds it (None and no attribute come back as None and Lax), nil if `HTTPCookie` refuses it (then `setCookie`
    /// stores nothing).
    public func kept(_ cookie: Cookie) -> Cookie? {
        Self.httpCookie(cookie).map(Self.cookie(from:))
    }

    public func allCookies() async -> [Cookie] {
        await withCheckedContinuation { (continuation: CheckedContinuation<[Cookie], Never>) in
            Task { @MainActor [store] in
                store.getAllCookies { cookies in continuation.resume(returning: cookies.map(Self.cookie(from:))) }
            }
        }
    }

    public func setCookie(_ cookie: Cookie) async {
        guard let converted = Self.httpCookie(cookie) else { return }
        if let expires = cookie.expires, expires <= Date().timeIntervalSince1970 { return await deleteCookie(cookie) }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Task { @MainActor [store] in
                store.setCookie(converted) { continuation.resume() }
            }
        }
    }

    public func deleteCookie(_ cookie: Cookie) async {
        guard let converted = Self.httpCookie(cookie) else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Task { @MainActor [store] in
                store.delete(converted) { continuation.resume() }
            }
        }
    }

    public func deleteAllCookies() async {
        for cookie in await allCookies() { await deleteCookie(cookie) }
    }

    /// The store's callback, handed to the jar. WebKit calls it on the main thread and says only which store changed.
    @MainActor
    private final class ChangeObserver: NSObject, WKHTTPCookieStoreObserver {
        let changed: @Sendable () -> Void

        init(_ changed: @escaping @Sendable () -> Void) {
            self.changed = changed
        }

        func cookiesDidChange(in cookieStore: WKHTTPCookieStore) {
            changed()
        }
    }

    static func cookie(from cookie: HTTPCookie) -> Cookie {
        let policy: FoundationSameSite.Policy =
            switch cookie.sameSitePolicy {
            case HTTPCookieStringPolicy.sameSiteStrict?: .strict
            case HTTPCookieStringPolicy.sameSiteLax?: .lax
            default: .absent
            }
        let sameSite = FoundationSameSite.sameSite(for: policy)
        return Cookie(
            name: cookie.name, value: cookie.value, domain: cookie.domain.hasPrefix(".") ? String(cookie.domain.dropFirst()) : cookie.domain,
            hostOnly: !cookie.domain.hasPrefix("."), path: cookie.path, expires: cookie.expiresDate?.timeIntervalSince1970, secure: cookie.isSecure,
            httpOnly: cookie.isHTTPOnly, sameSite: sameSite)
    }

    /// Foundation has no SameSite=None policy value: such a cookie is stored without one, which Apple documents as
    /// sent cross-site.
    static func httpCookie(_ cookie: Cookie) -> HTTPCookie? {
        var properties: [HTTPCookiePropertyKey: Any] = [
            .name: cookie.name, .value: cookie.value, .domain: cookie.hostOnly ? cookie.domain : "." + cookie.domain, .path: cookie.path,
        ]
        if let expires = cookie.expires { properties[.expires] = Date(timeIntervalSince1970: expires) }
        if cookie.secure { properties[.secure] = "TRUE" }
        if cookie.httpOnly { properties[HTTPCookiePropertyKey("HttpOnly")] = "TRUE" }
        switch FoundationSameSite.policy(for: cookie.sameSite) {
        case .strict: properties[.sameSitePolicy] = HTTPCookieStringPolicy.sameSiteStrict
        case .lax: properties[.sameSitePolicy] = HTTPCookieStringPolicy.sameSiteLax
        case .absent: break
        }
        return HTTPCookie(properties: properties)
    }
}
#endif
