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

    /// A header value cannot carry line breaks or other control characters (a message may quote a request).
    package static func headerSafe(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : $0 }))
    }
}
