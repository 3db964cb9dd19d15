import CSatchelGLib
import CWebKitGTK
import SatchelCore
import SatchelEngine
import SatchelHTTP
import SatchelWebKit

/// One `WebKitURISchemeRequest` as the driver's ``SchemeTask``. Every method runs on the GLib main context's thread
/// (the driver's executor), which is what makes the unsynchronised state below safe.
///
/// How WebKit's side works (WebKitURISchemeRequest.cpp, 2.50): `finish_with_response` makes a `GCancellable` and reads
/// the response's stream with `read_async` in 8 KiB reads until a read returns 0; the status and headers go to the page
/// when the first read completes; a stop cancels that `GCancellable`. Before `finish_with_response` there is no
/// cancellable at all, but WebKit holds the only reference to the request and drops it when the page stops the load,
/// so a weak reference tells the task it was stopped before its response (upstream still connecting).
final class URISchemeTask: SchemeTask, @unchecked Sendable {
    let request: ResourceRequest
    private unowned let handler: URISchemeHandler
    /// WebKit's request until it is answered; nil once answered or dropped by WebKit.
    private var schemeRequest: OpaquePointer?
    /// Keeps this object alive for the weak-reference notify until it fires or is removed.
    private var weakReferenceToken: Unmanaged<URISchemeTask>?
    /// The response's body; nil before the response.
    private var body: ResponseStream?
    private var finished = false

    /// Stream reads drain one chunk before the driver sends the next; the driver is told a little early (a quarter
    /// chunk left) so WebKit's next read rarely waits.
    static let lowWater = 64 << 10
    /// How far a response may run ahead of the web process that receives it, and how often the stream asks where the
    /// web process is (`satchel_stream_pace_with_web_view`). Measured with a 1 GiB file: the UI process then grew by
    /// 7-12 MiB instead of 0.6-0.9 GiB, in the same time (1, 4 and 16 MiB windows were indistinguishable in speed).
    static let pacingWindow = 4 << 20
    static let pacingInterval = 512 << 10

    init(request: ResourceRequest, schemeRequest: OpaquePointer, handler: URISchemeHandler) {
        self.request = request
        self.schemeRequest = schemeRequest
        self.handler = handler
        let token = Unmanaged.passRetained(self)
        weakReferenceToken = token
        satchel_weak_ref(UnsafeMutableRawPointer(schemeRequest), requestDroppedNotify, token.toOpaque())
    }

    private var id: ObjectIdentifier { ObjectIdentifier(self) }

    /// WebKit finalized the request before it was answered: the page stopped it.
    fileprivate func requestDropped() {
        schemeRequest = nil
        let token = weakReferenceToken
        weakReferenceToken = nil
        if !finished { handler.driver.stop(id) }
        token?.release()
    }

    /// Takes the request to answer it: stops watching it (before WebKit may drop it once answered).
    private func takeRequest() -> OpaquePointer? {
        guard let schemeRequest, let token = weakReferenceToken else { return nil }
        satchel_weak_unref(UnsafeMutableRawPointer(schemeRequest), requestDroppedNotify, token.toOpaque())
        self.schemeRequest = nil
        weakReferenceToken = nil
        token.release()
        return schemeRequest
    }

    func didReceive(_ head: ResponseHead) {
        guard let schemeRequest = takeRequest() else { return }
        let body = ResponseStream(onAbandoned: { [driver = handler.driver, id] in driver.stop(id) })
        self.body = body
        let stream = body.makeStream(lowWater: Self.lowWater)
        satchel_stream_pace_with_web_view(stream, webkit_uri_scheme_request_get_web_view(schemeRequest), gsize(Self.pacingWindow), gsize(Self.pacingInterval))
        // The driver took Set-Cookie out and into the app's jar: WebKit ignores it on a scheme handler's response.
        let headers = head.headers
        let response = webkit_uri_scheme_response_new(stream, gint64(head.bodyLength ?? -1))
        webkit_uri_scheme_response_set_status(response, guint(head.status), nil)
        if let type = headers["Content-Type"] { webkit_uri_scheme_response_set_content_type(response, type) }
        let soupHeaders = soup_message_headers_new(SOUP_MESSAGE_HEADERS_RESPONSE)
        for field in headers { soup_message_headers_append(soupHeaders, field.name, field.value) }
        webkit_uri_scheme_response_set_http_headers(response, soupHeaders)
        webkit_uri_scheme_request_finish_with_response(schemeRequest, response)
        g_object_unref(UnsafeMutableRawPointer(response))
        g_object_unref(UnsafeMutableRawPointer(stream))  // the response holds it now
    }

    func didReceive(_ data: [UInt8], ready: @escaping @Sendable () -> Void) {
        guard let body else { return ready() }
        body.push(data, ready: ready)
    }

    func didFinish() {
        finished = true
        body?.end()
    }

    func didFail(_ error: any Error) {
        finished = true
        if let body {
            body.fail("\(error)")
        } else if let schemeRequest = takeRequest() {
            let gerror = satchel_io_error_new("\(error)")
            webkit_uri_scheme_request_finish_error(schemeRequest, gerror)
            g_error_free(gerror)
        }
    }

    /// Answers without the driver (a refusal decided before any work).
    func answerDirectly(_ response: ResourceResponse) {
        guard case .bytes(let bytes) = response.body else { return }
        didReceive(ResponseHead(status: response.status, headers: response.headers, bodyLength: Int64(bytes.count)))
        didReceive(bytes) {}
        didFinish()
    }
}

/// One notify function for adding and removing the weak reference (GLib matches the pair).
private let requestDroppedNotify: GWeakNotify = { data, _ in
    Unmanaged<URISchemeTask>.fromOpaque(data!).takeUnretainedValue().requestDropped()
}
