import CSatchelGLib
import CWebKitGTK
import SatchelCore
import SatchelEngine
import SatchelWebKit

/// Media from the custom schemes, served to WebKitGTK's media player over loopback HTTP by the same engine.
///
/// WebKitGTK plays media through GStreamer, whose WebKit source element (`webkitwebsrc`) takes only `http`, `https` and
/// `blob` URLs: a `satchel://` media URL never reaches the scheme handler as a media load. ``MediaScript`` therefore
/// hands `<video>` and `<audio>` a URL on this relay instead, `http://127.0.0.1:<port>/<token>/<scheme>/<host>/<path>`,
/// and the relay answers it exactly as the scheme handler would answer `<scheme>://<host>/<path>`: through the same
/// ``SchemeTaskDriver`` (so the same task table, stop on disconnect, one chunk in memory at a time), with Range
/// requests answered by the engine. The player streams and seeks; nothing is read whole into the page.
///
/// - It listens on 127.0.0.1 only, on a port the system picks, and answers only paths under a random 128-bit token made
///   per relay: another process on the machine cannot read the app's packages through it without the token, which
///   only the app's pages see. Only GET and HEAD for the registered custom schemes are answered.
/// - It runs on the GLib main context (libsoup's `SoupServer`), the driver's executor: no thread of its own.
/// - What differs from the scheme handler: the player's requests carry no cookies and `Set-Cookie` from the network is
///   not kept (media responses are not logins); navigation redirects do not apply (the player follows a 3xx itself).
public final class MediaRelay: @unchecked Sendable {
    public let driver: SchemeTaskDriver
    /// `http://127.0.0.1:<port>/<token>/`: a custom-scheme URL `s://h/p` is relayed at `baseURL + "s/h/p"`.
    public let baseURL: String
    /// `SoupServer*`.
    private let server: UnsafeMutablePointer<SoupServer>
    private let token: String
    private let schemes: Set<String>

    public enum StartError: Error, CustomStringConvertible {
        case cannotListen(String)
        public var description: String {
            switch self {
            case .cannotListen(let reason): return "the media relay cannot listen on 127.0.0.1: \(reason)"
            }
        }
    }

    /// Listens at once, on the thread-default main context (create it on the main thread).
    public init(driver: SchemeTaskDriver) throws {
        self.driver = driver
        schemes = driver.loader.engine.configuration.customSchemes
        var generator = SystemRandomNumberGenerator()
        token = (0..<16).map { _ in
            let byte = UInt8.random(in: 0...255, using: &generator)
            return (byte < 16 ? "0" : "") + String(byte, radix: 16)
        }.joined()
        server = satchel_soup_server_new()!
        var error: UnsafeMutablePointer<GError>?
        let address = g_inet_socket_address_new_from_string("127.0.0.1", 0)
        defer { g_object_unref(UnsafeMutableRawPointer(address)) }
        guard soup_server_listen(server, address, SoupServerListenOptions(0), &error) != 0 else {
            let reason = error.map { String(cString: $0.pointee.message) } ?? "unknown error"
            if let error { g_error_free(error) }
            g_object_unref(UnsafeMutableRawPointer(server))
            throw StartError.cannotListen(reason)
        }
        var port = 0
        if let uris = soup_server_get_uris(server) {
            if let first = uris.pointee.data { port = Int(g_uri_get_port(OpaquePointer(first))) }
            g_slist_free_full(uris, { g_uri_unref(OpaquePointer($0)) })
        }
        baseURL = "http://127.0.0.1:\(port)/\(token)/"
        soup_server_add_handler(
            server, nil,
            { _, message, _, _, data in
                guard let message, let data else { return }
                Unmanaged<MediaRelay>.fromOpaque(data).takeUnretainedValue().handle(message)
            }, Unmanaged.passRetained(self).toOpaque(), { Unmanaged<MediaRelay>.fromOpaque($0!).release() })
    }

    /// The relay URL for a custom-scheme URL, or nil when `url` is not one (what ``MediaScript`` computes in the page).
    public func relayURL(for url: String) -> String? {
        guard let colon = url.firstIndex(of: ":"), schemes.contains(url[..<colon].lowercased()),
            url[colon...].hasPrefix("://")
        else { return nil }
        return baseURL + url[..<colon].lowercased() + "/" + url[url.index(colon, offsetBy: 3)...]
    }

    /// The custom-scheme URL a relay request stands for: `/<token>/<scheme>/<host>/<path>` (path and query as sent,
    /// still percent-encoded), or nil for anything else.
    func engineURL(path: String, query: String?) -> String? {
        let parts = path.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
        // "", token, scheme, "host/rest" (or "host")
        guard parts.count >= 4, parts[0].isEmpty, parts[1] == token, schemes.contains(String(parts[2])) else { return nil }
        let hostAndPath = parts[3]
        let host = hostAndPath.prefix { $0 != "/" }
        guard !host.isEmpty else { return nil }
        let rest = hostAndPath.dropFirst(host.count)
        return "\(parts[2])://\(host)\(rest.isEmpty ? "/" : rest)" + (query.map { "?" + $0 } ?? "")
    }

    /// A request from the player (on the main context's thread).
    func handle(_ message: OpaquePointer) {
        let method = soup_server_message_get_method(message).map { String(cString: $0) } ?? ""
        let uri = soup_server_message_get_uri(message)
        let path = uri.flatMap { g_uri_get_path($0) }.map { String(cString: $0) } ?? ""
        let query = uri.flatMap { g_uri_get_query($0) }.map { String(cString: $0) }
        guard let url = engineURL(path: path, query: query) else {
            return Self.answerDirectly(message, status: 404, text: "not found\n")
        }
        guard method == "GET" || method == "HEAD" else {
            return Self.answerDirectly(message, status: 405, text: "the media relay answers GET and HEAD only\n", allow: "GET, HEAD")
        }
        var headers = HTTPHeaders()
        if let soupHeaders = soup_server_message_get_request_headers(message) {
            var iterator = SoupMessageHeadersIter()
            soup_message_headers_iter_init(&iterator, soupHeaders)
            var name: UnsafePointer<CChar>?
            var value: UnsafePointer<CChar>?
            while soup_message_headers_iter_next(&iterator, &name, &value) != 0 {
                guard let name, let value else { continue }
                let field = String(cString: name)
                // The player's Host, cookies and connection handling are the relay's, not the package's.
                if ["host", "cookie", "connection", "keep-alive"].contains(field.lowercased()) { continue }
                headers.add(field, String(cString: value))
            }
        }
        let task = RelayTask(request: ResourceRequest(method: RequestMethod(method), url: url, headers: headers), message: message, driver: driver)
        driver.start(task)
    }

    static func answerDirectly(_ message: OpaquePointer, status: Int, text: String, allow: String? = nil) {
        soup_server_message_set_status(message, guint(status), nil)
        let headers = soup_server_message_get_response_headers(message)
        if let allow { soup_message_headers_append(headers, "Allow", allow) }
        soup_message_headers_append(headers, "Cache-Control", "no-store")
        soup_server_message_set_response(message, "text/plain; charset=utf-8", SOUP_MEMORY_COPY, text, gsize(text.utf8.count))
    }

    /// Stops listening and closes the connections it has. Call on the main context's thread;
    /// the relay holds itself until then, as the web context it serves lives as long as the app.
    public func close() {
        soup_server_remove_handler(server, nil)  // releases the handler's reference to self
        soup_server_disconnect(server)
    }

    deinit {
        g_object_unref(UnsafeMutableRawPointer(server))
    }
}

/// One relayed request as the driver's ``SchemeTask``: the head becomes the message's status and headers, each chunk is
/// appended to its body and taken as written when libsoup says so (`wrote-chunk`: the socket took it), and the message
/// finishing before the body did (the player closed the connection, e.g. on a seek) is the driver's stop. Every method
/// runs on the main context's thread.
final class RelayTask: SchemeTask, @unchecked Sendable {
    let request: ResourceRequest
    private let driver: SchemeTaskDriver
    /// `SoupServerMessage*`, referenced until libsoup is done with it.
    private var message: OpaquePointer?
    private var ready: (@Sendable () -> Void)?
    private var ended = false
    private var handlers: [gulong] = []

    init(request: ResourceRequest, message: OpaquePointer, driver: SchemeTaskDriver) {
        self.request = request
        self.driver = driver
        self.message = message
        g_object_ref(UnsafeMutableRawPointer(message))
        let body = soup_server_message_get_response_body(message)
        soup_message_body_set_accumulate(body, 0)  // written chunks are dropped, not kept for a retry
        soup_server_message_pause(message)  // until the engine's head is known
        let me = Unmanaged.passRetained(self).toOpaque()  // released when the message finishes
        let wroteChunk: @convention(c) (gpointer?, gpointer?) -> Void = { _, data in
            Unmanaged<RelayTask>.fromOpaque(data!).takeUnretainedValue().chunkWritten()
        }
        let finished: @convention(c) (gpointer?, gpointer?) -> Void = { _, data in
            Unmanaged<RelayTask>.fromOpaque(data!).takeRetainedValue().messageFinished()
        }
        handlers.append(satchel_signal_connect(UnsafeMutableRawPointer(message), "wrote-chunk", unsafeBitCast(wroteChunk, to: GCallback.self), me))
        handlers.append(satchel_signal_connect(UnsafeMutableRawPointer(message), "finished", unsafeBitCast(finished, to: GCallback.self), me))
    }

    func didReceive(_ head: ResponseHead) {
        guard let message else { return }
        soup_server_message_set_status(message, guint(head.status), nil)
        let headers = soup_server_message_get_response_headers(message)
        for field in head.headers {
            switch field.name.lowercased() {
            case "content-length", "transfer-encoding", "connection", "keep-alive", "set-cookie": continue
            default: soup_message_headers_append(headers, field.name, field.value)
            }
        }
        if request.method == .head {
            // No body follows; the length is the one a GET would have.
            if let length = head.headers["Content-Length"].flatMap({ goffset($0) }) { soup_message_headers_set_content_length(headers, length) }
        } else if let length = head.bodyLength {
            soup_message_headers_set_content_length(headers, goffset(length))
        } else {
            soup_message_headers_set_encoding(headers, SOUP_ENCODING_CHUNKED)
        }
        soup_server_message_unpause(message)
    }

    func didReceive(_ data: [UInt8], ready: @escaping @Sendable () -> Void) {
        guard let message else { return ready() }
        self.ready = ready
        data.withUnsafeBufferPointer {
            soup_message_body_append(soup_server_message_get_response_body(message), SOUP_MEMORY_COPY, $0.baseAddress, gsize($0.count))
        }
        soup_server_message_unpause(message)
    }

    func didFinish() {
        ended = true
        guard let message else { return }
        soup_message_body_complete(soup_server_message_get_response_body(message))
        soup_server_message_unpause(message)
    }

    func didFail(_ error: any Error) {
        ended = true
        guard let message else { return }
        if soup_server_message_get_status(message) == 0 {
            // No head yet: the failure is the answer.
            MediaRelay.answerDirectly(message, status: 502, text: "\(error)\n")
            soup_server_message_unpause(message)
        } else if let socket = soup_server_message_get_socket(message) {
            // The head is out and the body broke: only a closed connection tells the player the body is cut short.
            g_socket_shutdown(socket, 1, 1, nil)
        }
    }

    private func chunkWritten() {
        let pending = ready
        ready = nil
        pending?()
    }

    /// libsoup is done with the message: the body was written, or the player went away first (a stop).
    private func messageFinished() {
        guard let message else { return }
        for handler in handlers { g_signal_handler_disconnect(UnsafeMutableRawPointer(message), handler) }
        handlers = []
        self.message = nil
        if !ended { driver.stop(ObjectIdentifier(self)) }
        ready = nil
        g_object_unref(UnsafeMutableRawPointer(message))
    }
}
