import CSatchelGLib
import Foundation
import CWebKitGTK
import SatchelCore
import SatchelWebKit

/// WebKit's cookie store (a `WebKitNetworkSession`'s `WebKitCookieManager`, libsoup's cookies) as the
/// ``CookieStore`` of the app's ``AppCookieJar``: the one place cookies are kept, so the web view's own http(s) loads
/// see what the jar stored. Every call goes to the main context's thread (WebKit's), and completes when WebKit's
/// network process has done it.
///
/// libsoup has no "SameSite not given": such a cookie is kept as `Lax`, which is how it is enforced anyway. It keeps
/// no creation time either: cookies read back have `created` 0 (a `Cookie` header then orders equal paths as the
/// store lists them).
///
/// It tells the jar of every change (the manager's `changed` signal), so that the jar reads the store once per change
/// rather than on every request and `document.cookie` read (issue 48).
public final class WebKitCookieStore: CookieStore, @unchecked Sendable {
    /// `WebKitCookieManager*`; touched on the main context's thread only.
    let manager: OpaquePointer
    let executor: GLibMainContextExecutor

    public init(manager: OpaquePointer, executor: GLibMainContextExecutor = GLibMainContextExecutor()) {
        self.manager = manager
        self.executor = executor
    }

    public func allCookies() async -> [Cookie] {
        await onMainContext { [self] done in
            webkit_cookie_manager_get_all_cookies(manager, nil, { source, result, data in
                let list = webkit_cookie_manager_get_all_cookies_finish(OpaquePointer(source), result, nil)
                var cookies: [Cookie] = []
                var node = list
                while let current = node {
                    if let pointer = current.pointee.data { cookies.append(WebKitCookieStore.cookie(from: OpaquePointer(pointer))) }
                    node = current.pointee.next
                }
                g_list_free_full(list) { soup_cookie_free(OpaquePointer($0)) }
                Completion<[Cookie]>.finish(data, cookies)
            }, Completion<[Cookie]>.retained(done))
        }
    }

    public func setCookie(_ cookie: Cookie) async {
        if let expires = cookie.expires, expires <= Date.nowSeconds { return await deleteCookie(cookie) }
        await onMainContext { [self] (done: @escaping @Sendable (Bool) -> Void) in
            let soup = Self.soupCookie(cookie)
            webkit_cookie_manager_add_cookie(manager, soup, nil, { source, result, data in
                webkit_cookie_manager_add_cookie_finish(OpaquePointer(source), result, nil)
                Completion<Bool>.finish(data, true)
            }, Completion<Bool>.retained(done))
            soup_cookie_free(soup)
        }
    }

    public func deleteCookie(_ cookie: Cookie) async {
        await onMainContext { [self] (done: @escaping @Sendable (Bool) -> Void) in
            let soup = Self.soupCookie(cookie)
            webkit_cookie_manager_delete_cookie(manager, soup, nil, { source, result, data in
                webkit_cookie_manager_delete_cookie_finish(OpaquePointer(source), result, nil)
                Completion<Bool>.finish(data, true)
            }, Completion<Bool>.retained(done))
            soup_cookie_free(soup)
        }
    }

    /// Each cookie deleted in turn (`webkit_cookie_manager_replace_cookies` with an empty list never calls back).
    public func deleteAllCookies() async {
        for cookie in await allCookies() { await deleteCookie(cookie) }
    }

    /// Connects `changed` to the manager's `changed` signal, which WebKit emits on the main context's thread after any
    /// change (the web view's own loads and the jar's writes alike). The connection is made on that thread, later than
    /// this call, so `changed` is also called once it is made: a change before it went untold.
    public func observeChanges(_ changed: @escaping @Sendable () -> Void) -> Bool {
        executor.execute { [self] in
            let handler: @convention(c) (UnsafeMutableRawPointer?, gpointer?) -> Void = { _, data in
                Unmanaged<ChangeHandler>.fromOpaque(data!).takeUnretainedValue().changed()
            }
            // The handler lives as long as the connection: GLib releases it when the manager (the session's) goes.
            g_signal_connect_data(
                UnsafeMutableRawPointer(manager), "changed", unsafeBitCast(handler, to: GCallback.self),
                Unmanaged.passRetained(ChangeHandler(changed)).toOpaque(), { data, _ in Unmanaged<ChangeHandler>.fromOpaque(data!).release() },
                GConnectFlags(0))
            changed()
        }
        return true
    }

    /// The cookie as libsoup keeps it and ``allCookies()`` gives it back: SameSite not given as Lax, expiry in whole
    /// seconds, creation time 0.
    public func kept(_ cookie: Cookie) -> Cookie? {
        let soup = Self.soupCookie(cookie)
        defer { soup_cookie_free(soup) }
        return Self.cookie(from: soup)
    }

    private final class ChangeHandler {
        let changed: @Sendable () -> Void
        init(_ changed: @escaping @Sendable () -> Void) { self.changed = changed }
    }

    // MARK: Conversions

    static func cookie(from soup: OpaquePointer) -> Cookie {
        let domain = String(cString: soup_cookie_get_domain(soup))
        let sameSite: Cookie.SameSite =
            switch soup_cookie_get_same_site_policy(soup) {
            case SOUP_SAME_SITE_POLICY_STRICT: .strict
            case SOUP_SAME_SITE_POLICY_NONE: .none
            default: .lax
            }
        return Cookie(
            name: String(cString: soup_cookie_get_name(soup)), value: String(cString: soup_cookie_get_value(soup)),
            domain: domain.hasPrefix(".") ? String(domain.dropFirst()) : domain, hostOnly: !domain.hasPrefix("."),
            path: String(cString: soup_cookie_get_path(soup)), expires: soup_cookie_get_expires(soup).map { Double(g_date_time_to_unix($0)) },
            secure: soup_cookie_get_secure(soup) != 0, httpOnly: soup_cookie_get_http_only(soup) != 0, sameSite: sameSite)
    }

    /// A new `SoupCookie*` for `cookie`; the caller frees it.
    static func soupCookie(_ cookie: Cookie) -> OpaquePointer {
        let soup = soup_cookie_new(cookie.name, cookie.value, cookie.hostOnly ? cookie.domain : "." + cookie.domain, cookie.path, -1)!
        if let expires = cookie.expires {
            let date = g_date_time_new_from_unix_utc(gint64(expires))
            soup_cookie_set_expires(soup, date)
            g_date_time_unref(date)
        }
        soup_cookie_set_secure(soup, cookie.secure ? 1 : 0)
        soup_cookie_set_http_only(soup, cookie.httpOnly ? 1 : 0)
        soup_cookie_set_same_site_policy(
            soup, cookie.sameSite == .strict ? SOUP_SAME_SITE_POLICY_STRICT : cookie.sameSite == .none ? SOUP_SAME_SITE_POLICY_NONE : SOUP_SAME_SITE_POLICY_LAX)
        return soup
    }

    // MARK: Plumbing

    /// Runs `start` on the main context's thread and waits for the value it passes to `done`.
    private func onMainContext<T: Sendable>(_ start: @escaping @Sendable (@escaping @Sendable (T) -> Void) -> Void) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            executor.execute { start { continuation.resume(returning: $0) } }
        }
    }

    /// A completion handed through a C callback's user data.
    private final class Completion<T: Sendable> {
        let done: @Sendable (T) -> Void
        init(_ done: @escaping @Sendable (T) -> Void) { self.done = done }

        static func retained(_ done: @escaping @Sendable (T) -> Void) -> UnsafeMutableRawPointer {
            Unmanaged.passRetained(Completion(done)).toOpaque()
        }

        static func finish(_ data: UnsafeMutableRawPointer?, _ value: T) {
            Unmanaged<Completion<T>>.fromOpaque(data!).takeRetainedValue().done(value)
        }
    }
}

extension Date {
    fileprivate static var nowSeconds: Double { Date().timeIntervalSince1970 }
}
