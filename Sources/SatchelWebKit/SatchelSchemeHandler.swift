#if canImport(WebKit)
import Foundation
import SatchelCore
import SatchelHost
import SatchelPlatform
import SatchelEngine
import WebKit

/// The WebKit side: a `WKURLSchemeHandler` for the app's custom scheme, which hands every task to a
/// ``SchemeTaskDriver``. All logic (the contract, cancellation, streaming) lives in the driver; this class
/// only converts between WebKit's types and Satchel's.
///
/// Redirects: WebKit does not follow a redirect returned by a scheme handler. The driver answers a 3xx to a
/// navigation with a page that replaces the location (``NavigationRedirect``); fetch and XHR see the 3xx itself
/// (status and `Location`).
@MainActor
public final class SatchelSchemeHandler: NSObject, WKURLSchemeHandler {
    public let driver: SchemeTaskDriver

    public init(driver: SchemeTaskDriver) {
        self.driver = driver
    }

    // No table here: the driver knows each task by the identity of the WKURLSchemeTask, from start until it
    // finishes, fails or is stopped, and forgets it then.
    public func webView(_ webView: WKWebView, start urlSchemeTask: any WKURLSchemeTask) {
        // Grouped by web view, so that a view whose web content process died ends all of its tasks at once.
        driver.start(TaskAdapter(urlSchemeTask), id: ObjectIdentifier(urlSchemeTask), group: ObjectIdentifier(webView))
    }

    public func webView(_ webView: WKWebView, stop urlSchemeTask: any WKURLSchemeTask) {
        driver.stop(ObjectIdentifier(urlSchemeTask))
    }

    /// Wraps a `WKURLSchemeTask`. The protocol is not main-actor (WKURLSchemeTask.h carries no UI-actor annotation:
    /// its methods may be called from any thread, WebKit hops to the main run loop inside), so the driver calls it on
    /// its own executor, whichever queue the app gave it, with nothing to assert.
    final class TaskAdapter: SchemeTask, @unchecked Sendable {
        let task: any WKURLSchemeTask
        /// The request without its body: this initializer runs in `webView(_:start:)`, on the main thread.
        let request: ResourceRequest
        /// The body as WebKit delivered it, if it did (httpBody or httpBodyStream), taken at start and read only in
        /// ``readRequest()``, which the driver calls off the main thread (issue 48).
        private let body: Data?
        private let stream: InputStream?

        /// The stream, handed to the one thread that reads it (InputStream is not Sendable; nothing else touches it).
        struct UncheckedStream: @unchecked Sendable { let stream: InputStream }

        init(_ task: any WKURLSchemeTask) {
            self.task = task
            let sent = task.request
            var headers = HTTPHeaders()
            for (name, value) in sent.allHTTPHeaderFields ?? [:] { headers.add(name, value) }
            request = ResourceRequest(
                method: sent.httpMethod.map { RequestMethod($0) } ?? .get, url: sent.url?.absoluteString ?? "", headers: headers)
            body = sent.httpBody
            stream = sent.httpBodyStream
        }

        func readRequest() async -> ResourceRequest {
            // What WebKit dropped comes through the hook. A body it delivered that cannot be read (past the limit, a
            // failing stream) goes as none: the engine then asks the hook's channels for it. A stream is read on a
            // thread of its own: its reads block, for as long as WebKit takes to fill it.
            var whole = request
            let (body, stream) = (body, stream.map(UncheckedStream.init))
            whole.body = stream == nil
                ? (try? DeliveredBody.read(body: body, stream: nil)) ?? nil
                : await onOwnThread { (try? DeliveredBody.read(body: body, stream: stream?.stream)) ?? nil }
            return whole
        }

        func didReceive(_ head: ResponseHead) {
            // HTTPURLResponse holds one value per name: repeated fields are joined with ", " (the driver has
            // already taken Set-Cookie out, into the app's cookie jar).
            var fields: [String: String] = [:]
            for field in head.headers { fields[field.name] = fields[field.name].map { $0 + ", " + field.value } ?? field.value }
            let url = task.request.url ?? URL(string: "about:blank")!
            let response = HTTPURLResponse(url: url, statusCode: head.status, httpVersion: "HTTP/1.1", headerFields: fields)!
            task.didReceive(response)
        }

        // WebKit copies the bytes at once: ready for the next chunk straight away.
        func didReceive(_ data: [UInt8], ready: @escaping @Sendable () -> Void) {
            task.didReceive(Data(data))
            ready()
        }
        func didFinish() { task.didFinish() }
        func didFail(_ error: any Error) { task.didFailWithError(error) }
    }
}

/// Receives bodies from the hook's body-store channel (`window.webkit.messageHandlers.satchelBody`) and
/// replies once the body is stored, so the page sends the request only when its body is waiting for it.
@MainActor
public final class SatchelBodyMessageHandler: NSObject, WKScriptMessageHandlerWithReply {
    /// Stores what the page sends (``RequestLayer/storeBody(message:)``: the same rules as WebKitGTK's handler).
    public let layer: RequestLayer

    public init(layer: RequestLayer) {
        self.layer = layer
    }

    public func userContentController(
        _ userContentController: WKUserContentController, didReceive message: WKScriptMessage,
        replyHandler: @escaping @MainActor (Any?, String?) -> Void
    ) {
        let object = message.body as? [String: Any]
        let received = BodyMessage(
            id: object?["id"] as? String, base64: object?["base64"] as? String, contentType: object?["contentType"] as? String,
            method: object?["method"] as? String)
        do {
            try layer.storeBody(message: received, from: FrameOrigin(message.frameInfo.securityOrigin))
            replyHandler(true, nil)
        } catch {
            replyHandler(nil, error.description)
        }
    }
}
extension FrameOrigin {
    /// The sending frame's origin, as WebKit reports it.
    @MainActor
    init(_ origin: WKSecurityOrigin) {
        self.init(scheme: origin.protocol, host: origin.host, port: origin.port)
    }
}
#endif
