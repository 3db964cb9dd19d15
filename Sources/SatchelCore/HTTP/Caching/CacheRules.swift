/// How an HTTP cache is configured (RFC 9111 §1, §3): shared (a proxy serving many users: `satchel serve`) or
/// private (one user: an app's web view).
public struct CacheMode: Sendable, Equatable {
    public var shared: Bool
    /// The share of the time since `Last-Modified` a response without explicit freshness may be reused for
    /// (§4.2.2: "a typical setting ... might be 10%").
    public var heuristicFraction: Double
    /// The longest heuristic freshness.
    public var heuristicLimit: Double

    public init(shared: Bool, heuristicFraction: Double = 0.1, heuristicLimit: Double = 86_400) {
        self.shared = shared
        self.heuristicFraction = heuristicFraction
        self.heuristicLimit = heuristicLimit
    }

    public static let shared = CacheMode(shared: true)
    public static let `private` = CacheMode(shared: false)
}

/// A response as a cache keeps it: status, the header fields it will replay, the fields of the request it was the
/// answer to that its `Vary` names, and when it was asked for and received (§4.2.3). Times are seconds since 1970.
public struct StoredResponse: Sendable, Equatable {
    public var status: Int
    public var headers: HTTPHeaders {
        didSet { facts = CacheFacts(headers) }
    }
    /// The values (nil: absent) of the request fields named by `Vary`, in its order, lower-cased names.
    public var varying: [StoredVaryField]
    public var requestTime: Double
    public var responseTime: Double
    /// What the rules read from ``headers``, parsed once: a hit must not parse dates and directives again.
    public private(set) var facts: CacheFacts

    public init(status: Int, headers: HTTPHeaders, varying: [StoredVaryField], requestTime: Double, responseTime: Double) {
        self.status = status
        self.headers = headers
        self.varying = varying
        self.requestTime = requestTime
        self.responseTime = responseTime
        facts = CacheFacts(headers)
    }
}

/// The fields of a response the cache rules read, parsed: directives, dates, validators.
public struct CacheFacts: Sendable, Equatable {
    public let control: CacheControl
    /// A valid `CDN-Cache-Control`, which a shared cache reads instead of ``control`` and `Expires` (RFC 9213).
    public let targeted: CacheControl?
    /// `Date`, when it is one valid date.
    public let date: Double?
    /// `Age` (§5.1).
    public let age: Double
    /// `Expires`: absent (nil), or its instant (an invalid one, or several, is already expired: `-infinity`).
    public let expires: Double?
    public let lastModified: Timestamp?
    public let etag: String?

    public init(_ headers: HTTPHeaders) {
        control = CacheControl(headers)
        targeted = CacheControl.targeted(headers)
        date = CacheRules.dateValue(headers)
        age = CacheRules.ageValue(headers)
        let expiresValues = headers.values("Expires")
        if expiresValues.isEmpty {
            expires = nil
        } else if expiresValues.count == 1, let instant = Timestamp(httpDate: expiresValues[0]) {
            expires = Double(instant.secondsSinceEpoch)
        } else {
            expires = -.infinity
        }
        lastModified = headers["Last-Modified"].flatMap { Timestamp(httpDate: $0) }
        etag = headers["ETag"]
    }

    /// The directives a cache in `mode` reads (``CacheControl/ofResponse(_:mode:)``).
    public func control(_ mode: CacheMode) -> (control: CacheControl, targeted: Bool) {
        if mode.shared, let targeted { return (targeted, true) }
        return (control, false)
    }
}

public struct StoredVaryField: Sendable, Equatable {
    public var name: String
    public var value: String?

    public init(name: String, value: String?) {
        self.name = name
        self.value = value
    }
}

/// The rules of RFC 9111 for one cache, pure: the caller owns the store, the clock and the network (as
/// `http-cache-semantics` does). Each function names the section it implements.
public enum CacheRules {
    /// Statuses a cache may reuse with heuristic freshness (RFC 9110 §15.1).
    public static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]
    /// Statuses this cache understands well enough to store (§3: `must-understand` depends on it). Partial content
    /// (206) is not stored: a range is answered from a stored complete response instead.
    public static let understood: Set<Int> = [200, 203, 204, 300, 301, 302, 303, 307, 308, 404, 405, 410, 414, 501]

    // MARK: Storing (§3)

    public enum StoreDecision: Equatable, Sendable {
        case store
        case dontStore(String)
    }

    /// Whether a response to `request` may be stored (§3), and if not why.
    public static func storability(request: ResourceRequest, status: Int, headers: HTTPHeaders, mode: CacheMode) -> StoreDecision {
        guard request.method == .get else { return .dontStore("method \(request.method)") }
        guard status >= 200 else { return .dontStore("interim status") }
        let requestCC = CacheControl(request.headers)
        if requestCC.has("no-store") { return .dontStore("request no-store") }
        let (cc, targeted) = CacheControl.ofResponse(headers, mode: mode)
        // must-understand stands in for no-store when the cache knows the status; a partial or a 304 is stored
        // only by a cache that understands it, which this one does not (it answers ranges from whole responses).
        if cc.has("must-understand") {
            guard understood.contains(status) else { return .dontStore("must-understand status \(status)") }
        } else if cc.has("no-store") {
            return .dontStore("no-store")
        }
        if status == 206 || status == 304 { return .dontStore("status \(status)") }
        if mode.shared, cc.fieldNames("private") == [] { return .dontStore("private") }
        // One user's cookie must not reach another's browser through a shared cache: a response that sets one is
        // stored only when the origin says it is for everyone (RFC 9111 §7.3 leaves this to the cache; nginx and
        // Varnish decide the same way).
        if mode.shared, headers.contains("Set-Cookie"), !(cc.has("public") || cc.has("s-maxage")) { return .dontStore("Set-Cookie") }
        if mode.shared, request.headers.contains("Authorization"),
            !(cc.has("must-revalidate") || cc.has("public") || cc.has("s-maxage"))
        {
            return .dontStore("authorization")
        }
        let explicit = cc.has("public") || (!mode.shared && cc.has("private")) || (!targeted && headers.contains("Expires")) || cc.has("max-age")
            || (mode.shared && cc.has("s-maxage"))
        guard explicit || heuristicallyCacheable.contains(status) else { return .dontStore("no freshness information") }
        // A response nothing could ever reuse is not worth its disk: no freshness, no validator, no stale window.
        let lifetime = freshnessLifetime(status: status, headers: headers, responseTime: 0, mode: mode).seconds
        if lifetime <= 0, !cc.has("stale-while-revalidate"), !cc.has("stale-if-error"), headers["ETag"] == nil, headers["Last-Modified"] == nil {
            return .dontStore("never reusable (no freshness, no validator)")
        }
        return .store
    }

    /// The fields a stored response keeps (§3.1): not the hop-by-hop fields and those `Connection` names, and, for a
    /// shared cache, not those a qualified `private` names.
    public static func storedHeaders(_ headers: HTTPHeaders, mode: CacheMode) -> HTTPHeaders {
        var named: [String] = []
        for field in headers where HTTPHeaders.equalNames(field.name, "Connection") {
            named += field.value.split(separator: ",").map { $0.trimmingSpaces.lowercased() }
        }
        let privateFields = mode.shared ? (CacheControl.ofResponse(headers, mode: mode).control.fieldNames("private") ?? []) : []
        var kept = HTTPHeaders(capacity: headers.count)
        for field in headers {
            let lower = field.name.lowercased()
            if hopByHop.contains(lower) || named.contains(lower) || privateFields.contains(lower) { continue }
            kept.add(field.name, field.value)
        }
        return kept
    }

    static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te", "trailer",
        "transfer-encoding", "upgrade",
    ]

    /// The request fields `Vary` names, with their values in `request` (§4.1); nil when `Vary` has `*`, which
    /// no later request matches.
    public static func varyingFields(of headers: HTTPHeaders, request: ResourceRequest) -> [StoredVaryField]? {
        var fields: [StoredVaryField] = []
        for value in headers.values("Vary") {
            for name in value.split(separator: ",").map({ $0.trimmingSpaces.lowercased() }) where !name.isEmpty {
                if name == "*" { return nil }
                if fields.contains(where: { $0.name == name }) { continue }
                fields.append(StoredVaryField(name: name, value: combined(request.headers, name)))
            }
        }
        return fields
    }

    /// Whether `request` selects `stored` (§4.1): every field its `Vary` named has the same value, after
    /// combining repeated lines and folding whitespace.
    public static func varyMatches(_ stored: StoredResponse, request: ResourceRequest) -> Bool {
        stored.varying.allSatisfy { normalized($0.value) == normalized(combined(request.headers, $0.name)) }
    }

    private static func combined(_ headers: HTTPHeaders, _ name: String) -> String? {
        let values = headers.values(name)
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }

    private static func normalized(_ value: String?) -> String? {
        value.map { $0.split(separator: ",").map { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ") }.joined(separator: ",") }
    }

    // MARK: Freshness (§4.2)

    /// The freshness lifetime (§4.2.1): `s-maxage` in a shared cache, else `max-age`, else `Expires` minus `Date`,
    /// else heuristic (§4.2.2) where allowed.
    public static func freshnessLifetime(status: Int, headers: HTTPHeaders, responseTime: Double, mode: CacheMode) -> (seconds: Double, heuristic: Bool) {
        freshnessLifetime(status: status, facts: CacheFacts(headers), responseTime: responseTime, mode: mode)
    }

    public static func freshnessLifetime(_ stored: StoredResponse, mode: CacheMode) -> (seconds: Double, heuristic: Bool) {
        freshnessLifetime(status: stored.status, facts: stored.facts, responseTime: stored.responseTime, mode: mode)
    }

    static func freshnessLifetime(status: Int, facts: CacheFacts, responseTime: Double, mode: CacheMode) -> (seconds: Double, heuristic: Bool) {
        let (cc, targeted) = facts.control(mode)
        if mode.shared, let sMaxAge = cc.seconds("s-maxage") {
            if case .value(let seconds) = sMaxAge { return (Double(seconds), false) }
            return (0, false)
        }
        if let maxAge = cc.seconds("max-age") {
            if case .value(let seconds) = maxAge { return (Double(seconds), false) }
            return (0, false)
        }
        if !targeted, let expires = facts.expires {
            // An invalid date, "0" above all, or several of them, means already expired (§5.3).
            guard expires.isFinite else { return (0, false) }
            return (max(0, expires - (facts.date ?? responseTime)), false)
        }
        guard heuristicallyCacheable.contains(status) || cc.has("public"), let lastModified = facts.lastModified else { return (0, false) }
        let since = (facts.date ?? responseTime) - Double(lastModified.secondsSinceEpoch)
        guard since > 0 else { return (0, true) }
        return (min(since * mode.heuristicFraction, mode.heuristicLimit), true)
    }

    /// The `Date` field's instant; nil when absent or not one valid date.
    public static func dateValue(_ headers: HTTPHeaders) -> Double? {
        let values = headers.values("Date")
        guard values.count == 1, let date = Timestamp(httpDate: values[0]) else { return nil }
        return Double(date.secondsSinceEpoch)
    }

    /// The `Age` field's seconds (§5.1): of a list (repeated lines, or commas), the first member counts; a member
    /// that is not a non-negative integer is ignored.
    public static func ageValue(_ headers: HTTPHeaders) -> Double {
        guard let first = headers["Age"]?.split(separator: ",", omittingEmptySubsequences: false).first else { return 0 }
        let text = first.trimmingSpaces
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return 0 }
        let digits = text.drop { $0 == "0" }
        return digits.utf8.count > 10 ? Double(CacheControl.maxDelta) : min(Double(Int64(digits) ?? 0), Double(CacheControl.maxDelta))
    }

    /// The current age (§4.2.3).
    public static func currentAge(_ stored: StoredResponse, now: Double) -> Double {
        let date = stored.facts.date ?? stored.responseTime
        let apparentAge = max(0, stored.responseTime - date)
        let responseDelay = max(0, stored.responseTime - stored.requestTime)
        let correctedAgeValue = stored.facts.age + responseDelay
        let correctedInitialAge = max(apparentAge, correctedAgeValue)
        return correctedInitialAge + max(0, now - stored.responseTime)
    }

    // MARK: Reuse (§4)

    /// What a cache may do with a stored response for a request.
    public enum Reuse: Equatable, Sendable {
        /// Fresh enough for this request: answer from the cache (`ttl`: seconds of freshness left).
        case fresh(ttl: Double)
        /// Stale, but the request accepts it (`max-stale`): answer from the cache.
        case staleAccepted(ttl: Double)
        /// Stale within `stale-while-revalidate`: answer from the cache and revalidate behind.
        case staleWhileRevalidate(ttl: Double)
        /// Ask the origin first (a conditional request when the response has a validator); `stale-if-error`
        /// and disconnection may still allow the stored response if that fails (``staleOnError(_:now:mode:failure:)``).
        case validate(reason: ValidationReason)
    }

    /// Why a stored response must be validated before it answers, as `Cache-Status`'s `detail` words it.
    public enum ValidationReason: String, Equatable, Sendable {
        /// The request said `no-cache` (or `Pragma: no-cache`): the request forwards, not the stored response's age.
        case requestNoCache = "request no-cache"
        /// The stored response says `no-cache`.
        case noCache = "no-cache"
        /// Stale, and a directive forbids serving it stale (`must-revalidate`, `proxy-revalidate`, `s-maxage`).
        case staleMustRevalidate = "stale, must revalidate"
        case stale

        /// `Cache-Status`'s `fwd`: `request` when the request asked for it, else `stale`.
        public var forward: CacheStatus.Forward { self == .requestNoCache ? .request : .stale }

        /// What `Cache-Status` says besides `fwd` (nothing for plain staleness, which `fwd=stale` already says).
        public var detail: String? { self == .stale ? nil : rawValue }
    }

    /// §4 for a stored response that matches the request's key and `Vary`.
    public static func reuse(_ stored: StoredResponse, request: ResourceRequest, now: Double, mode: CacheMode) -> Reuse {
        reuse(stored, request: request, requestControl: CacheControl(request.headers), now: now, mode: mode)
    }

    /// The same with the request's `Cache-Control` parsed already.
    public static func reuse(_ stored: StoredResponse, request: ResourceRequest, requestControl requestCC: CacheControl, now: Double, mode: CacheMode) -> Reuse {
        let cc = stored.facts.control(mode).control
        // Request no-cache (and Pragma: no-cache when the request has no Cache-Control, §5.4).
        if requestCC.has("no-cache") || (requestCC.isEmpty && request.headers.values("Pragma").contains { $0.lowercased().contains("no-cache") }) {
            return .validate(reason: .requestNoCache)
        }
        if let noCache = cc.fieldNames("no-cache"), noCache.isEmpty { return .validate(reason: .noCache) }
        let lifetime = freshnessLifetime(stored, mode: mode).seconds
        let age = currentAge(stored, now: now)
        var effectiveLifetime = lifetime
        if case .value(let maxAge)? = requestCC.seconds("max-age") { effectiveLifetime = min(effectiveLifetime, Double(maxAge)) }
        if case .invalid? = requestCC.seconds("max-age") { effectiveLifetime = 0 }
        var needed = age
        if case .value(let minFresh)? = requestCC.seconds("min-fresh") { needed += Double(minFresh) }
        if effectiveLifetime > needed { return .fresh(ttl: lifetime - age) }
        let ttl = lifetime - age
        // Stale from here on; §4.2.4: never where a directive forbids it.
        if forbidsStale(cc, mode: mode) { return .validate(reason: .staleMustRevalidate) }
        if requestCC.has("max-stale") {
            // Without an argument, any staleness; a max-age the request set stays its ceiling.
            let allowed: Double = if case .value(let seconds)? = requestCC.seconds("max-stale") { Double(seconds) } else { .infinity }
            let withinMaxAge: Bool = if case .value(let maxAge)? = requestCC.seconds("max-age") { age <= Double(maxAge) } else { true }
            if age - lifetime <= allowed, withinMaxAge { return .staleAccepted(ttl: ttl) }
        }
        if case .value(let window)? = cc.seconds("stale-while-revalidate"), age - lifetime <= Double(window), effectiveLifetime == lifetime {
            return .staleWhileRevalidate(ttl: ttl)
        }
        return .validate(reason: .stale)
    }

    /// Whether a directive forbids serving this response stale (§4.2.4, §5.2.2.2, §5.2.2.8, §5.2.2.10).
    public static func forbidsStale(_ cc: CacheControl, mode: CacheMode) -> Bool {
        cc.has("must-revalidate") || (cc.fieldNames("no-cache") == []) || (mode.shared && (cc.has("proxy-revalidate") || cc.has("s-maxage")))
    }

    /// Whether a stored response may answer when the origin cannot (`failure`: the status of a 5xx answer, or nil
    /// when the origin was unreachable): within `stale-if-error` (RFC 5861), or, disconnected, whenever no
    /// directive forbids stale answers (§4.2.4).
    public static func staleOnError(_ stored: StoredResponse, now: Double, mode: CacheMode, failure status: Int?) -> Bool {
        let cc = stored.facts.control(mode).control
        if forbidsStale(cc, mode: mode) { return false }
        if let status, !(500...599).contains(status) { return false }
        let lifetime = freshnessLifetime(stored, mode: mode).seconds
        let staleness = currentAge(stored, now: now) - lifetime
        if case .value(let window)? = cc.seconds("stale-if-error") { return staleness <= Double(window) }
        return status == nil
    }

    // MARK: Validation (§4.3)

    /// The validators a conditional request for `stored` carries (§4.3.1): its entity tag, else (or also) its
    /// `Last-Modified`.
    public static func conditionalFields(for stored: StoredResponse) -> [(String, String)] {
        var fields: [(String, String)] = []
        if let etag = stored.facts.etag { fields.append(("If-None-Match", etag)) }
        if stored.facts.lastModified != nil, let lastModified = stored.headers["Last-Modified"] {
            fields.append(("If-Modified-Since", lastModified))
        }
        return fields
    }

    /// The stored response freshened by a 304 (§4.3.4, §3.2): the 304's fields replace the stored ones of the same
    /// name, except those that describe the stored content's framing; the times become the validation's.
    public static func freshened(_ stored: StoredResponse, with notModified: HTTPHeaders, requestTime: Double, responseTime: Double, mode: CacheMode) -> StoredResponse {
        let update = storedHeaders(notModified, mode: mode)
        var headers = stored.headers
        var replaced: Set<String> = []
        for field in update {
            let lower = field.name.lowercased()
            if keptOnUpdate.contains(lower) { continue }
            if !replaced.contains(lower) {
                headers.remove(field.name)
                replaced.insert(lower)
            }
            headers.add(field.name, field.value)
        }
        var freshened = stored
        freshened.headers = headers
        freshened.requestTime = requestTime
        freshened.responseTime = responseTime
        return freshened
    }

    /// Fields a 304 never updates: they describe the stored body, which the 304 did not send (§3.2).
    static let keptOnUpdate: Set<String> = ["content-length", "content-encoding", "content-range", "transfer-encoding"]

    // MARK: Invalidation (§4.4)

    /// The URLs an answer to an unsafe request invalidates (§4.4): the target, and the `Location` and
    /// `Content-Location` URLs on its host, when the answer is not an error.
    public static func invalidatedURLs(method: RequestMethod, url: String, status: Int, headers: HTTPHeaders) -> [String] {
        guard !method.isSafe, (200...399).contains(status) else { return [] }
        var urls = [url]
        guard let target = RequestURL(url) else { return urls }
        for name in ["Location", "Content-Location"] {
            guard let value = headers[name], let resolved = resolve(value, against: url), let other = RequestURL(resolved),
                other.host == target.host, other.scheme == target.scheme
            else { continue }
            if !urls.contains(resolved) { urls.append(resolved) }
        }
        return urls
    }

    /// A URL reference resolved against an absolute URL: absolute, scheme-relative, absolute-path or relative-path.
    static func resolve(_ reference: String, against base: String) -> String? {
        if RequestURL(reference) != nil { return reference }
        guard let parsed = RequestURL(base) else { return nil }
        let origin = parsed.scheme + "://" + base.dropFirst(parsed.scheme.utf8.count + 3).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if reference.hasPrefix("//") { return parsed.scheme + ":" + reference }
        if reference.hasPrefix("/") { return origin + reference }
        let directory = parsed.rawPath.hasSuffix("/") ? parsed.rawPath : String(parsed.rawPath[..<(parsed.rawPath.lastIndex(of: "/") ?? parsed.rawPath.startIndex)]) + "/"
        return origin + directory + reference
    }
}
