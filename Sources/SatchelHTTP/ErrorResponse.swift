import SatchelCore

extension ResourceResponse {
    /// Every error answer Satchel makes, from the engine, the network fallback or the server: plain text that no
    /// browser sniffs into HTML or script (`nosniff`), never cached, the reason also in `X-Satchel-Error` for
    /// scripts and tests. One place, so no error answer can be rendered as a page.
    public static func error(_ status: Int, _ message: String) -> ResourceResponse {
        let body = Array((message + "\n").utf8)
        return ResourceResponse(
            status: status,
            headers: [
                "Content-Type": "text/plain; charset=utf-8", "Content-Length": String(body.count), "Cache-Control": "no-store",
                "X-Content-Type-Options": "nosniff", "X-Satchel-Error": Self.headerSafe(message),
            ],
            body: .bytes(body))
    }

    /// A 200 answer of Satchel's own (an endpoint's text, JSON or page): never cached.
    public static func text(_ text: String, type: String = "text/plain; charset=utf-8") -> ResourceResponse {
        let body = Array(text.utf8)
        return ResourceResponse(
            status: HTTPStatus.ok, headers: [ResponseField.contentType.rawValue: type, ResponseField.contentLength.rawValue: String(body.count), ResponseField.cacheControl.rawValue: "no-store"],
            body: .bytes(body))
    }

    /// 204 of Satchel's own (a body or report taken): no body, never cached.
    public static var noContent: ResourceResponse {
        ResourceResponse(status: HTTPStatus.noContent, headers: [ResponseField.contentLength.rawValue: "0", ResponseField.cacheControl.rawValue: "no-store"])
    }

    /// A header value cannot carry line breaks or other control characters (a message may quote a request).
    package static func headerSafe(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : $0 }))
    }
}

/// The statuses Satchel's own answers use, by name: the request layer and the hosts write these, never a number.
public enum HTTPStatus {
    public static let ok = 200
    public static let noContent = 204
    public static let badRequest = 400
    public static let forbidden = 403
    public static let notFound = 404
    public static let requestTimeout = 408
    public static let contentTooLarge = 413
    public static let fieldsTooLarge = 431
    public static let internalError = 500
    public static let gatewayTimeout = 504
}
