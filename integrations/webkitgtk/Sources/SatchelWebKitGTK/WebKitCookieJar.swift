import CSatchelGLib
import CWebKitGTK
import SatchelEngine
import SatchelHTTP

/// WebKit's cookie store (a `WebKitNetworkSession`'s `WebKitCookieManager`) as the engine's ``CookieProvider``, and
/// the place `Set-Cookie` from network responses goes.
///
/// WebKit does not store cookies from a custom-scheme handler's response (it is not an HTTP load, so its
/// `Set-Cookie` is never processed), and a `satchel://` page has no cookies of its own. So the adapter stores each
/// `Set-Cookie` the network sent for a request under the URL the engine fetched (`https://host/path`), and sends the
/// cookies WebKit holds for that URL with every upstream request: a login through the engine is seen by the next
/// request through the engine, and by any http(s) page of the same site in the web view.
public final class WebKitCookieJar: CookieProvider, @unchecked Sendable {
    /// `WebKitCookieManager*`; touched on the main context's thread only.
    let manager: OpaquePointer
    let executor: GLibMainContextExecutor
    /// Cookie additions still in flight, and the reads waiting for them (main thread only).
    private var pendingAdditions = 0
    private var waiting: [@Sendable () -> Void] = []

    public init(manager: OpaquePointer, executor: GLibMainContextExecutor = GLibMainContextExecutor()) {
        self.manager = manager
        self.executor = executor
    }

    /// Stores `Set-Cookie` values received for `url`. Call on the main context's thread.
    public func store(_ setCookies: [String], from url: String) {
        guard let uri = g_uri_parse(url, G_URI_FLAGS_NONE, nil) else { return }
        defer { g_uri_unref(uri) }
        for header in setCookies.flatMap(Self.unfolded) {
            guard let cookie = soup_cookie_parse(header, uri) else { continue }
            pendingAdditions += 1
            webkit_cookie_manager_add_cookie(manager, cookie, nil, { source, result, data in
                let jar = Unmanaged<WebKitCookieJar>.fromOpaque(data!).takeRetainedValue()
                webkit_cookie_manager_add_cookie_finish(OpaquePointer(source), result, nil)
                jar.additionFinished()
            }, Unmanaged.passRetained(self).toOpaque())
            soup_cookie_free(cookie)
        }
    }

    /// Splits a `Set-Cookie` value that an HTTP client folded from several headers (FoundationNetworking joins them
    /// with ", "): a comma starts a new cookie only when `name=` follows before any `;` or `,` (an `Expires` date's
    /// comma is followed by a day number, not `name=`).
    static func unfolded(_ value: String) -> [String] {
        var cookies: [String] = []
        var current = ""
        var index = value.startIndex
        while index < value.endIndex {
            let character = value[index]
            if character == "," {
                let rest = value[value.index(after: index)...].drop { $0 == " " || $0 == "\t" }
                let token = rest.prefix { $0 != "=" && $0 != ";" && $0 != "," }
                if !token.isEmpty, token.count < rest.count, rest[rest.index(rest.startIndex, offsetBy: token.count)] == "=",
                    !token.contains(" ")
                {
                    cookies.append(current.trimmingCharacters())
                    current = ""
                    index = value.index(after: index)
                    continue
                }
            }
            current.append(character)
            index = value.index(after: index)
        }
        if !current.trimmingCharacters().isEmpty { cookies.append(current.trimmingCharacters()) }
        return cookies
    }

    private func additionFinished() {
        pendingAdditions -= 1
        guard pendingAdditions == 0 else { return }
        let resume = waiting
        waiting = []
        for waiter in resume { waiter() }
    }

    /// The `Cookie` header WebKit would send to `url`, once every cookie stored before the call is in.
    public func cookieHeader(for url: String) async -> String? {
        await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
            executor.execute { [self] in
                let read: @Sendable () -> Void = { [self] in
                    let request = CookieRead(continuation)
                    webkit_cookie_manager_get_cookies(manager, url, nil, { source, result, data in
                        let request = Unmanaged<CookieRead>.fromOpaque(data!).takeRetainedValue()
                        let list = webkit_cookie_manager_get_cookies_finish(OpaquePointer(source), result, nil)
                        var pairs: [String] = []
                        var node = list
                        while let current = node {
                            if let data = current.pointee.data {
                                let cookie = OpaquePointer(data)
                                pairs.append(String(cString: soup_cookie_get_name(cookie)) + "=" + String(cString: soup_cookie_get_value(cookie)))
                            }
                            node = current.pointee.next
                        }
                        g_list_free_full(list) { soup_cookie_free(OpaquePointer($0)) }
                        request.continuation.resume(returning: pairs.isEmpty ? nil : pairs.joined(separator: "; "))
                    }, Unmanaged.passRetained(request).toOpaque())
                }
                if pendingAdditions == 0 { read() } else { waiting.append(read) }
            }
        }
    }

    private final class CookieRead {
        let continuation: CheckedContinuation<String?, Never>
        init(_ continuation: CheckedContinuation<String?, Never>) { self.continuation = continuation }
    }
}

extension String {
    fileprivate func trimmingCharacters() -> String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
