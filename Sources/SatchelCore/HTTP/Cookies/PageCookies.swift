/// How a custom-scheme page's `document.cookie` reaches the app's cookie jar (WebKit keeps no cookies for a custom
/// scheme, so the hook provides `document.cookie` itself): a synchronous request from the hook to a reserved path of
/// the page's own origin, answered by the scheme task driver, never by a package or the network.
///
/// `GET <scheme>://<host>/.satchel/cookies?path=<document path, percent-encoded>`, with the hook's proof in the
/// proof header (channel `cookie`, bound to ``binding(path:write:)``) and, for a write, what the page assigned in
/// ``writeHeader`` (percent-encoded). The answer: 200 with the document's cookie string after the write
/// (`text/plain`, `no-store`), and ``refusedHeader`` naming the rule when the write was refused; 403 without a valid
/// proof. The full description is in docs/formats.md ("Page cookies").
public enum PageCookies {
    public static let path = "/.satchel/cookies"
    public static let writeHeader = "X-Satchel-Cookie"
    public static let refusedHeader = "X-Satchel-Cookie-Refused"

    /// What a proof of a read or a write is bound to.
    public static func binding(path: String, write: String?) -> String {
        write.map { "write\n\(path)\n\($0)" } ?? "read\n\(path)"
    }

    /// A page's cookie request, recognised from what the scheme handler received.
    public struct Request: Sendable, Equatable {
        /// The document's URL (its origin and the `path` parameter): what its cookies are chosen for.
        public var documentURL: String
        public var documentPath: String
        /// What the page assigned to `document.cookie`; nil for a read.
        public var write: String?
        public var proof: String?
    }

    /// The cookie request `request` is, or nil when it is not one (another path, or not a GET).
    public static func request(_ request: ResourceRequest, proofHeader: String) -> Request? {
        guard request.method == .get, let url = RequestURL(request.url), url.rawPath == path else { return nil }
        func decoded(_ text: Substring) -> String? { (try? PercentDecoding.decode(text)).map { String(decoding: $0, as: UTF8.self) } }
        // The path as location.pathname gives it (still percent-encoded), sent through encodeURIComponent.
        let documentPath = url.query.map(QueryString.init)?.values("path").first.flatMap(decoded) ?? "/"
        guard documentPath.hasPrefix("/") else { return nil }
        let origin = "\(url.scheme)://\(url.host)" + (url.port.map { ":\($0)" } ?? "")
        var write: String?
        if let value = request.headers[writeHeader] {
            guard let text = decoded(Substring(value)) else { return nil }
            write = text
        }
        return Request(documentURL: origin + documentPath, documentPath: documentPath, write: write, proof: request.headers[proofHeader])
    }
}
