/// One cookie as a cookie store keeps it (RFC 6265bis §5.7): what a store holds on every platform, converted to and
/// from WebKit's own cookie types by the adapters.
public struct Cookie: Sendable, Hashable {
    public enum SameSite: String, Sendable, Hashable, CaseIterable {
        case strict = "Strict"
        case lax = "Lax"
        case none = "None"
        /// No (valid) `SameSite` attribute: enforced as `Lax`.
        case unspecified = "Default"
    }

    public var name: String
    public var value: String
    /// Lower-cased, without a leading dot.
    public var domain: String
    /// Sent to ``domain`` only, not to its subdomains (the cookie had no `Domain` attribute).
    public var hostOnly: Bool
    public var path: String
    /// Seconds since 1970; nil: a session cookie.
    public var expires: Double?
    public var secure: Bool
    public var httpOnly: Bool
    public var sameSite: SameSite
    /// Seconds since 1970 (orders cookies of equal paths in a `Cookie` header).
    public var created: Double

    public init(
        name: String, value: String, domain: String, hostOnly: Bool = true, path: String = "/", expires: Double? = nil, secure: Bool = false,
        httpOnly: Bool = false, sameSite: SameSite = .unspecified, created: Double = 0
    ) {
        self.name = name
        self.value = value
        self.domain = domain.lowercased()
        self.hostOnly = hostOnly
        self.path = path
        self.expires = expires
        self.secure = secure
        self.httpOnly = httpOnly
        self.sameSite = sameSite
        self.created = created
    }

    /// Two cookies with the same identity replace one another (§5.7 step 23).
    public func sameIdentity(as other: Cookie) -> Bool {
        name == other.name && domain == other.domain && hostOnly == other.hostOnly && path == other.path
    }

    /// `name=value` (or the value alone for an empty name), as a `Cookie` header and `document.cookie` list it.
    public var pair: String { name.isEmpty ? value : name + "=" + value }
}

/// Where a cookie is set or sent: the request's (or document's) host, path and whether it is secure. A custom-scheme
/// URL (`satchel://m.shop.com/…`) counts as `https://m.shop.com/…`: a package page is the app's own secure page, and
/// its network fallback goes to `https://` (RFC 6265bis leaves "secure" to the user agent: here it is the scheme of
/// the URL the engine would fetch).
public struct CookieURL: Sendable, Equatable {
    /// Lower-cased.
    public var host: String
    /// The path, still percent-encoded, without the query; `/` when empty.
    public var path: String
    public var secure: Bool

    public init(host: String, path: String, secure: Bool) {
        self.host = host.lowercased()
        self.path = path.isEmpty ? "/" : path
        self.secure = secure
    }

    /// `url`'s host and path; secure for https, wss and the app's `customSchemes`. Nil for what is not an absolute
    /// URL with a host.
    public init?(_ url: String, customSchemes: Set<String> = ["satchel"]) {
        guard let parsed = RequestURL(url) else { return nil }
        self.init(host: parsed.host, path: parsed.rawPath, secure: ["https", "wss"].contains(parsed.scheme) || customSchemes.contains(parsed.scheme))
    }
}

/// Why a cookie was not stored: the rule of RFC 6265bis it broke.
public enum CookieRejection: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not an absolute URL with a host: no cookie can belong to it.
    case invalidURL(String)
    case controlCharacter
    case emptyNameAndValue
    /// Name and value together longer than 4,096 bytes.
    case tooLong(Int)
    case secureFromInsecureOrigin
    /// The `Domain` attribute does not cover the host that set it.
    case domainMismatch(domain: String, host: String)
    /// The `Domain` attribute is a public suffix (a single label here: no public suffix list is shipped).
    case publicSuffix(String)
    case securePrefixWithoutSecure
    case hostPrefixRules
    /// A page's script (`document.cookie`) cannot set an HttpOnly cookie ...
    case httpOnlyFromScript
    /// ... nor replace one.
    case replacesHttpOnly
    /// An insecure origin cannot replace (shadow) a Secure cookie.
    case replacesSecure
    case sameSiteNoneWithoutSecure
    /// A cross-site request cannot set a SameSite cookie.
    case sameSiteFromCrossSite

    public var description: String {
        switch self {
        case .invalidURL(let url): "\(url) is not an absolute URL with a host"
        case .controlCharacter: "the cookie holds a control character"
        case .emptyNameAndValue: "the cookie has neither name nor value"
        case .tooLong(let bytes): "name and value are \(bytes) bytes, more than 4096"
        case .secureFromInsecureOrigin: "a Secure cookie set from an insecure origin"
        case .domainMismatch(let domain, let host): "Domain=\(domain) does not cover \(host)"
        case .publicSuffix(let domain): "Domain=\(domain) is a public suffix"
        case .securePrefixWithoutSecure: "a __Secure- cookie without Secure"
        case .hostPrefixRules: "a __Host- cookie needs Secure, no Domain and Path=/"
        case .httpOnlyFromScript: "a script cannot set an HttpOnly cookie"
        case .replacesHttpOnly: "a script cannot replace an HttpOnly cookie"
        case .replacesSecure: "an insecure origin cannot replace a Secure cookie"
        case .sameSiteNoneWithoutSecure: "SameSite=None needs Secure"
        case .sameSiteFromCrossSite: "a cross-site request cannot set a SameSite cookie"
        }
    }
}
