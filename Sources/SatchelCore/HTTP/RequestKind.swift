/// What a request says about itself (Fetch's `Sec-Fetch-*` fields and `Accept`), read once into a value, so that
/// every rule that depends on "is this a navigation?" reads what its own specification names, from one place:
///
/// - cookies' SameSite rules need a top-level navigation (RFC 6265bis: mode `navigate`, destination `document`);
/// - the hook goes into a page's documents and frames (destination `document`, `iframe`, `frame`, or none sent);
/// - the offline page and the navigation redirect page answer requests that accept HTML.
public struct RequestKind: Sendable, Equatable {
    /// `Sec-Fetch-Mode`, lower-cased; nil when the request did not say (WebKit omits these fields on some requests).
    public var mode: String?
    /// `Sec-Fetch-Dest`, lower-cased; nil when not sent.
    public var destination: String?
    /// `Sec-Fetch-Site`, lower-cased; nil when not sent.
    public var site: String?
    /// Whether `Accept` names `text/html`.
    public var acceptsHTML: Bool

    public init(_ headers: HTTPHeaders) {
        mode = headers[.secFetchMode]?.lowercased()
        destination = headers[.secFetchDest]?.lowercased()
        site = headers[.secFetchSite]?.lowercased()
        acceptsHTML = headers[.accept]?.contains("text/html") ?? false
    }

    public init(mode: String? = nil, destination: String? = nil, site: String? = nil, acceptsHTML: Bool = false) {
        self.mode = mode
        self.destination = destination
        self.site = site
        self.acceptsHTML = acceptsHTML
    }

    /// RFC 6265bis's top-level navigation: the browsing context's own document is being replaced.
    public var isTopLevelNavigation: Bool { mode == "navigate" && destination == "document" }

    /// A request for a page to show (the loader answers it with the offline page when nothing else can): a
    /// navigation, or a request that accepts HTML (WebKit's scheme handlers see no `Sec-Fetch-*` fields).
    public var wantsPage: Bool { mode == "navigate" || acceptsHTML }

    /// Whether a document or a frame will be made of the answer (or the request did not say): where the hook belongs,
    /// never in HTML a script fetches as data.
    public var loadsDocument: Bool { destination.map { ["document", "iframe", "frame"].contains($0) } ?? true }
}

extension ResourceRequest {
    /// What the request says about itself.
    public var kind: RequestKind { RequestKind(headers) }
}
