/// The cookie rules of RFC 6265bis (draft 15), pure: parsing `Set-Cookie` and `document.cookie` writes into a
/// ``Cookie`` (§5.6, the storage model of §5.7), and choosing what a request or a script sees (§5.8.3). The store is
/// the platform's (WebKit's cookie manager, `WKHTTPCookieStore`); these rules decide what goes in and comes out, the
/// same on every platform. Section numbers are the draft's.
public enum CookieRules {
    /// Name and value together (§5.6 step 6).
    public static let maxNameValueBytes = 4096
    /// One attribute's value (§5.6.1).
    public static let maxAttributeBytes = 1024
    /// Expiry is capped at 400 days from now (§5.6.1, §5.6.2).
    public static let maxLifetime: Double = 400 * 86_400

    /// Who sets or reads: the network (`Set-Cookie`, a request's `Cookie`) or a page's script (`document.cookie`, the
    /// "non-HTTP API"), which never sees or touches HttpOnly cookies.
    public enum Source: Sendable, Equatable {
        case http
        case script
    }

    /// The request's relation to the page that caused it (§5.2): same-site, or cross-site, where only a top-level
    /// navigation with a safe method still carries `Lax` cookies.
    public enum SiteContext: Sendable, Equatable {
        case sameSite
        case crossSite(topLevelSafeNavigation: Bool)
    }

    // MARK: Storing (§5.6, §5.7)

    /// The cookie `text` (a `Set-Cookie` value, or what a script assigned to `document.cookie`) sets at `url`, or why it
    /// sets none. `existing`: the store's cookies (a script cannot replace an HttpOnly one, an insecure origin a Secure
    /// one). A cookie whose expiry has passed is returned as such: storing it deletes its namesake.
    public static func cookie(
        from text: String, at url: CookieURL, source: Source, context: SiteContext = .sameSite, existing: [Cookie] = [], now: Double
    ) -> Result<Cookie, CookieRejection> {
        // §5.6 steps 1-6.
        if text.utf8.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) { return .failure(.controlCharacter) }
        let parts = text.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)
        let pair = parts[0]
        let (name, value): (String, String) =
            if let equals = pair.firstIndex(of: "=") {
                (trimmed(pair[..<equals]), trimmed(pair[pair.index(after: equals)...]))
            } else {
                ("", trimmed(pair))
            }
        if name.isEmpty, value.isEmpty { return .failure(.emptyNameAndValue) }
        let length = name.utf8.count + value.utf8.count
        if length > maxNameValueBytes { return .failure(.tooLong(length)) }
        let lowerName = name.lowercased()
        if name.isEmpty, value.lowercased().hasPrefix("__secure-") || value.lowercased().hasPrefix("__host-") {
            return .failure(.hostPrefixRules)
        }

        // §5.6.1 attributes; the last of each kind counts.
        var expires: Double?
        var maxAge: Double?
        var domainAttribute: String?
        var pathAttribute: String?
        var secure = false
        var httpOnly = false
        var sameSite = Cookie.SameSite.unspecified
        if parts.count > 1 {
            for attribute in parts[1].split(separator: ";", omittingEmptySubsequences: false) {
                let (key, argument): (String, String) =
                    if let equals = attribute.firstIndex(of: "=") {
                        (trimmed(attribute[..<equals]).lowercased(), trimmed(attribute[attribute.index(after: equals)...]))
                    } else {
                        (trimmed(attribute).lowercased(), "")
                    }
                if argument.utf8.count > maxAttributeBytes { continue }
                switch key {
                case "expires":
                    if let date = cookieDate(argument) { expires = Double(date) }
                case "max-age":
                    guard let first = argument.utf8.first, first == UInt8(ascii: "-") || (0x30...0x39).contains(first),
                        argument.utf8.dropFirst().allSatisfy({ (0x30...0x39).contains($0) }), argument != "-"
                    else { continue }
                    let seconds = Double(argument) ?? (argument.hasPrefix("-") ? -.infinity : .infinity)
                    maxAge = seconds <= 0 ? -.infinity : now + min(seconds, maxLifetime)
                case "domain":
                    if argument.isEmpty { continue }
                    domainAttribute = String(argument.drop { $0 == "." }).lowercased()
                case "path":
                    pathAttribute = argument.hasPrefix("/") ? argument : nil
                case "secure": secure = true
                case "httponly": httpOnly = true
                case "samesite":
                    sameSite =
                        switch argument.lowercased() {
                        case "strict": .strict
                        case "lax": .lax
                        case "none": .none
                        default: .unspecified
                        }
                default: continue
                }
            }
        }

        // §5.7.
        var expiry = maxAge ?? expires
        if let value = expiry, value != -.infinity { expiry = min(value, now + maxLifetime) }
        var domain = url.host
        var hostOnly = true
        if let attribute = domainAttribute {
            if !attribute.contains(".") {
                // No public suffix list ships with Satchel: a single label (`com`, `localhost`) is treated as one.
                guard attribute == url.host else { return .failure(.publicSuffix(attribute)) }
            } else {
                guard domainMatches(url.host, attribute) else { return .failure(.domainMismatch(domain: attribute, host: url.host)) }
                domain = attribute
                hostOnly = false
            }
        }
        let path = pathAttribute ?? defaultPath(url.path)
        if secure, !url.secure { return .failure(.secureFromInsecureOrigin) }
        if httpOnly, source == .script { return .failure(.httpOnlyFromScript) }
        if !secure, !url.secure, existing.contains(where: {
            $0.name == name && $0.secure && (domainMatches($0.domain, domain) || domainMatches(domain, $0.domain)) && pathMatches(path, $0.path)
        }) {
            return .failure(.replacesSecure)
        }
        if sameSite != .none, case .crossSite = context, source == .http { return .failure(.sameSiteFromCrossSite) }
        if sameSite == .none, !secure { return .failure(.sameSiteNoneWithoutSecure) }
        if lowerName.hasPrefix("__secure-"), !secure { return .failure(.securePrefixWithoutSecure) }
        if lowerName.hasPrefix("__host-"), !(secure && hostOnly && path == "/") { return .failure(.hostPrefixRules) }
        var cookie = Cookie(
            name: name, value: value, domain: domain, hostOnly: hostOnly, path: path, expires: expiry.map { $0 == -.infinity ? 0 : $0 },
            secure: secure, httpOnly: httpOnly, sameSite: sameSite, created: now)
        if let old = existing.first(where: { $0.sameIdentity(as: cookie) }) {
            if old.httpOnly, source == .script { return .failure(.replacesHttpOnly) }
            cookie.created = old.created
        }
        return .success(cookie)
    }

    // MARK: Reading (§5.8.3)

    /// Whether `cookie` goes with a request to `url` (or shows in `document.cookie` for a script at `url`).
    public static func applies(_ cookie: Cookie, to url: CookieURL, source: Source, context: SiteContext = .sameSite, now: Double) -> Bool {
        if isExpired(cookie, now: now) { return false }
        if cookie.hostOnly ? url.host != cookie.domain : !domainMatches(url.host, cookie.domain) { return false }
        if !pathMatches(url.path, cookie.path) { return false }
        if cookie.secure, !url.secure { return false }
        if cookie.httpOnly, source == .script { return false }
        if case .crossSite(let topLevelSafeNavigation) = context {
            switch cookie.sameSite {
            case .none: break
            case .strict: return false
            case .lax, .unspecified: if !topLevelSafeNavigation { return false }
            }
        }
        return true
    }

    /// The `Cookie` header (or `document.cookie` string) for `url` from `cookies`: longer paths first, then older
    /// first (§5.8.3 step 2); nil when none applies.
    public static func header(_ cookies: [Cookie], for url: CookieURL, source: Source, context: SiteContext = .sameSite, now: Double) -> String? {
        let chosen = cookies.filter { applies($0, to: url, source: source, context: context, now: now) }
            .sorted { $0.path.utf8.count != $1.path.utf8.count ? $0.path.utf8.count > $1.path.utf8.count : $0.created < $1.created }
        return chosen.isEmpty ? nil : chosen.map(\.pair).joined(separator: "; ")
    }

    public static func isExpired(_ cookie: Cookie, now: Double) -> Bool {
        cookie.expires.map { $0 <= now } ?? false
    }

    /// The site context of `request` (a page's request, as the scheme handler received it) for cookies of `url`:
    /// `Sec-Fetch-Site` when WebKit sent it; otherwise an `Origin` of another site marks a cross-site request (WebKit
    /// sends `Origin` with cross-origin fetches and with non-GET requests, never with a GET navigation). Sites are
    /// compared by ``site(of:)``.
    public static func siteContext(of request: ResourceRequest, for url: CookieURL) -> SiteContext {
        let safe = request.method.readsRepresentation
        let kind = request.kind
        if let fetchSite = kind.site {
            guard fetchSite == "cross-site" else { return .sameSite }
            return .crossSite(topLevelSafeNavigation: kind.isTopLevelNavigation && safe)
        }
        guard let origin = request.headers[.origin], origin != "null", let originURL = RequestURL(origin) else { return .sameSite }
        return site(of: originURL.host) == site(of: url.host) ? .sameSite : .crossSite(topLevelSafeNavigation: false)
    }

    /// The site of `host`, approximated without a public suffix list: its last two labels (`m.shop.com` -> `shop.com`),
    /// or the host itself for an IP address or a single label. Hosts under a multi-label suffix (`co.uk`) are
    /// over-grouped: `a.co.uk` and `b.co.uk` count as one site, which only ever makes SameSite more permissive than a
    /// browser between such hosts.
    public static func site(of host: String) -> String {
        let labels = host.lowercased().split(separator: ".")
        if host.hasPrefix("[") || labels.allSatisfy({ $0.allSatisfy(\.isNumber) }) || labels.count <= 2 { return host.lowercased() }
        return labels.suffix(2).joined(separator: ".")
    }

    // MARK: Matching (§5.1)

    /// §5.1.3: `host` is `domain`, or a name below it (never for an IP address).
    public static func domainMatches(_ host: String, _ domain: String) -> Bool {
        if host == domain { return true }
        guard host.hasSuffix("." + domain) else { return false }
        let isIPv4 = host.split(separator: ".").allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) }
        return !isIPv4 && !host.hasPrefix("[")
    }

    /// §5.1.4.
    public static func pathMatches(_ requestPath: String, _ cookiePath: String) -> Bool {
        if requestPath == cookiePath { return true }
        guard requestPath.hasPrefix(cookiePath) else { return false }
        return cookiePath.hasSuffix("/") || requestPath.utf8.dropFirst(cookiePath.utf8.count).first == UInt8(ascii: "/")
    }

    /// §5.1.4: the directory of the request's path.
    public static func defaultPath(_ path: String) -> String {
        guard path.hasPrefix("/"), let last = path.lastIndex(of: "/"), last != path.startIndex else { return "/" }
        return String(path[..<last])
    }

    /// §5.1.1: a cookie date (the loose format browsers accept: any order of time, day, month and year among
    /// delimiters), as seconds since 1970; nil when a part is missing or out of range.
    public static func cookieDate(_ text: String) -> Int64? {
        func isDelimiter(_ byte: UInt8) -> Bool {
            byte == 0x09 || (0x20...0x2F).contains(byte) || (0x3B...0x40).contains(byte) || (0x5B...0x60).contains(byte) || (0x7B...0x7E).contains(byte)
        }
        let tokens = text.utf8.split(whereSeparator: isDelimiter).map { Array($0) }
        var time: (Int64, Int64, Int64)?
        var day: Int64?
        var month: Int64?
        var year: Int64?
        func digits(_ token: [UInt8], _ range: ClosedRange<Int>) -> (Int64, Int)? {
            let count = token.prefix { (0x30...0x39).contains($0) }.count
            guard range.contains(count) else { return nil }
            return (token.prefix(count).reduce(Int64(0)) { $0 * 10 + Int64($1 - 0x30) }, count)
        }
        for token in tokens {
            if time == nil {
                let fields = token.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false).map { Array($0) }
                if fields.count == 3, let h = digits(fields[0], 1...2), h.1 == fields[0].count, let m = digits(fields[1], 1...2), m.1 == fields[1].count,
                    let s = digits(fields[2], 1...2)
                {
                    time = (h.0, m.0, s.0)
                    continue
                }
            }
            if day == nil, let d = digits(token, 1...2) {
                day = d.0
                continue
            }
            if month == nil, token.count >= 3 {
                let prefix = String(decoding: token.prefix(3), as: UTF8.self).lowercased()
                if let index = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"].firstIndex(of: prefix) {
                    month = Int64(index + 1)
                    continue
                }
            }
            if year == nil, let y = digits(token, 2...4) {
                year = y.0
                continue
            }
        }
        guard let time, let day, let month, var year else { return nil }
        if (70...99).contains(year) { year += 1900 } else if (0...69).contains(year) { year += 2000 }
        let daysInMonth: [Int64] = [31, (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard (1...daysInMonth[Int(month - 1)]).contains(day), year >= 1601, time.0 <= 23, time.1 <= 59, time.2 <= 59 else { return nil }
        return Timestamp.daysFromCivil(year: year, month: month, day: day) * 86_400 + time.0 * 3600 + time.1 * 60 + time.2
    }

    /// Splits a `Set-Cookie` value that an HTTP client folded from several fields (Foundation joins them with ", "):
    /// a comma starts a new cookie only when `name=` follows before any `;` or `,` (an `Expires` date's comma is
    /// followed by a day number, not `name=`).
    public static func splitFolded(_ value: String) -> [String] {
        var cookies: [String] = []
        var current = ""
        var index = value.startIndex
        while index < value.endIndex {
            let character = value[index]
            if character == "," {
                let rest = value[value.index(after: index)...].drop { $0 == " " || $0 == "\t" }
                let token = rest.prefix { $0 != "=" && $0 != ";" && $0 != "," }
                if !token.isEmpty, token.count < rest.count, rest[rest.index(rest.startIndex, offsetBy: token.count)] == "=", !token.contains(" ") {
                    cookies.append(trimmed(Substring(current)))
                    current = ""
                    index = value.index(after: index)
                    continue
                }
            }
            current.append(character)
            index = value.index(after: index)
        }
        let last = trimmed(Substring(current))
        if !last.isEmpty { cookies.append(last) }
        return cookies.filter { !$0.isEmpty }
    }

    private static func trimmed(_ text: Substring) -> String {
        String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
