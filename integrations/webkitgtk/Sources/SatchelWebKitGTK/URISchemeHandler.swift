import CSatchelGLib
import CWebKitGTK
import SatchelCore
import SatchelEngine
import SatchelHTTP
import SatchelWebKit

/// Answers a `WebKitWebContext`'s custom-scheme requests with the engine: each `WebKitURISchemeRequest` becomes a
/// ``URISchemeTask`` on the shared ``SchemeTaskDriver`` (the same driver the Apple adapter uses), answered with a
/// streaming `GInputStream`.
///
/// Request bodies: native code never calls `webkit_uri_scheme_request_get_http_body`. WebKit gives no way to tell a
/// body made of bytes from one holding a Blob or File before reading it, and reading the latter crashes the
/// process (a SIGSEGV inside WebKit, every time; wails issue 5845), which any script able to send a request to the
/// scheme could trigger. Bodies arrive through the hook's channels instead (header, form-to-query, body store, as on
/// iOS), and a request whose method may carry a body but that no channel claims is refused with 400 and an
/// `X-Satchel-Error` naming the reason: never read, never forwarded empty.
public final class URISchemeHandler: @unchecked Sendable {
    /// The driver, and through it the app's cookie jar (`Set-Cookie` from the network, `document.cookie`).
    public let driver: SchemeTaskDriver

    public init(driver: SchemeTaskDriver) {
        self.driver = driver
    }

    /// Registers `schemes` on `context`, each marked secure (a secure context, so no mixed-content blocking of its
    /// subresources) and CORS-enabled (fetches to it follow CORS like http). Call once per context, before loading.
    public func register(on context: OpaquePointer, schemes: Set<String>) {
        let security = webkit_web_context_get_security_manager(context)
        for scheme in schemes.sorted() {
            let me = Unmanaged.passRetained(self).toOpaque()
            webkit_web_context_register_uri_scheme(
                context, scheme,
                { request, data in
                    guard let request, let data else { return }
                    Unmanaged<URISchemeHandler>.fromOpaque(data).takeUnretainedValue().start(request)
                }, me, { data in Unmanaged<URISchemeHandler>.fromOpaque(data!).release() })
            webkit_security_manager_register_uri_scheme_as_secure(security, scheme)
            webkit_security_manager_register_uri_scheme_as_cors_enabled(security, scheme)
        }
    }

    /// A new request from WebKit (on the main context's thread).
    func start(_ schemeRequest: OpaquePointer) {
        let request = Self.resourceRequest(schemeRequest)
        let task = URISchemeTask(request: request, schemeRequest: schemeRequest, handler: self)
        if let refusal = refusal(for: request) {
            task.answerDirectly(refusal)
            return
        }
        // Grouped by web view, so that a view whose web process died can end all of its tasks at once.
        let view = webkit_uri_scheme_request_get_web_view(schemeRequest)
        driver.start(task, group: view.map { ViewRecovery.group(of: UnsafeMutableRawPointer($0)) })
    }

    /// The 400 for a request whose body no hook channel carries (see the type's documentation), or nil.
    func refusal(for request: ResourceRequest) -> ResourceResponse? {
        let method = RequestMethod(request.method.rawValue.uppercased())
        let channels = driver.loader.engine.configuration.bodyChannels ?? BodyChannels()
        guard !(method.readsRepresentation || method == .options), BodyRestorer(channels: channels).claimedChannels(request).isEmpty else { return nil }
        let reason =
            "request body not read: WebKitGTK cannot say whether this \(method)'s body is safe to read natively (a Blob or File body crashes the process), and no Satchel hook channel carries it; inject the hook (--inject-hook)"
        return .error(400, reason)
    }

    /// Method, URL and headers of a WebKit request (never its body, see above).
    static func resourceRequest(_ schemeRequest: OpaquePointer) -> ResourceRequest {
        let method = webkit_uri_scheme_request_get_http_method(schemeRequest).map { String(cString: $0) } ?? "GET"
        let url = webkit_uri_scheme_request_get_uri(schemeRequest).map { String(cString: $0) } ?? ""
        var headers = HTTPHeaders()
        if let soupHeaders = webkit_uri_scheme_request_get_http_headers(schemeRequest) {
            var iterator = SoupMessageHeadersIter()
            soup_message_headers_iter_init(&iterator, soupHeaders)
            var name: UnsafePointer<CChar>?
            var value: UnsafePointer<CChar>?
            while soup_message_headers_iter_next(&iterator, &name, &value) != 0 {
                if let name, let value { headers.add(String(cString: name), String(cString: value)) }
            }
        }
        return ResourceRequest(method: RequestMethod(method.uppercased()), url: url, headers: headers)
    }
}
