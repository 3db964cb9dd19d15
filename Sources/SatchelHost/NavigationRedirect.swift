import SatchelCore
import SatchelEngine
import SatchelHTTP

/// WebKit does not follow a redirect answered by a scheme handler (WKURLSchemeHandler and WebKitGTK alike): fetch and
/// XHR see the 3xx itself, and a navigation shows the 3xx's body. For navigations (a request that accepts HTML) the
/// driver answers a network 3xx with a small page that replaces the location with the target instead, so the page
/// lands where the server sent it, with its own URL (relative links resolve against the target) and no history
/// entry for the redirecting URL. Fetch and XHR get the 3xx as it is (their `redirect` mode cannot be known here).
enum NavigationRedirect {
    /// The page replacing `response` for `request`, or nil when `response` is not a redirect of a navigation.
    static func page(for response: ResourceResponse, of request: ResourceRequest) -> ResourceResponse? {
        guard [301, 302, 303, 307, 308].contains(response.status), let location = response.headers["Location"],
            request.kind.acceptsHTML, [.get, .post].contains(RequestMethod(request.method.rawValue.uppercased()))
        else { return nil }
        let target = mappedBack(location, request: request.url)
        let html = "<!doctype html><html><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"0;url=\(HTMLText.escaped(target))\">"
            + "<title>Redirecting</title></head><body><script>location.replace(\(jsString(target)));</script>"
            + "<p>Redirecting to <a href=\"\(HTMLText.escaped(target))\">\(HTMLText.escaped(target))</a>.</p></body></html>\n"
        let body = Array(html.utf8)
        return ResourceResponse(
            status: 200,
            headers: [
                "Content-Type": "text/html; charset=utf-8", "Content-Length": String(body.count), "Cache-Control": "no-store",
                "X-Satchel-Redirect": "\(response.status) \(target)",
            ], body: .bytes(body))
    }

    /// An absolute `Location` on the request's own host under the upstream scheme (`https://m.shop.com/x` for a page
    /// at `satchel://m.shop.com/`) goes back to the request's scheme, so the app stays on its packages; anything else
    /// (relative, another host) is kept.
    static func mappedBack(_ location: String, request: String) -> String {
        guard let target = RequestURL(location), let original = RequestURL(request), target.host == original.host,
            target.scheme == "https" || target.scheme == "http", original.scheme != target.scheme,
            let colon = location.firstIndex(of: ":")
        else { return location }
        return original.scheme + location[colon...]
    }

    /// `text` as a script string literal inside HTML: a JSON string (CanonicalJSON's one writer) with `<` escaped,
    /// so nothing in it can end the script element.
    static func jsString(_ text: String) -> String {
        String(decoding: CanonicalJSON.string(text).bytes, as: UTF8.self).replacingOccurrences(of: "<", with: "\\u003c")
    }
}
