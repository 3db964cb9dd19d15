/// The `Cache-Status` field (RFC 9211) a cache adds to what it answers: whether the answer was a hit, and if the
/// request went forward, why, what came back, and what was kept.
public struct CacheStatus: Sendable, Equatable {
    /// Why a request went forward to the origin (RFC 9211 §2.2).
    public enum Forward: String, Sendable {
        /// Nothing stored for the URL.
        case uriMiss = "uri-miss"
        /// Something stored for the URL, but not for these request fields (`Vary`).
        case varyMiss = "vary-miss"
        /// Stored, but the request asked to go to the origin (`no-cache`, `max-age=0`).
        case request
        /// Stored, but stale: validated with the origin.
        case stale
        /// Not a method the cache answers (it forwards, and invalidates after unsafe ones).
        case method
        /// The cache was told not to answer (a policy, `no-store`).
        case bypass
    }

    public var hit = false
    public var forward: Forward?
    /// The status the origin sent, when it differs from the one answered (a 304 behind a 200).
    public var forwardStatus: Int?
    /// Seconds of freshness left (negative: stale by that much).
    public var ttl: Int?
    public var stored = false
    public var collapsed = false
    public var detail: String?

    public init(hit: Bool = false, forward: Forward? = nil, forwardStatus: Int? = nil, ttl: Int? = nil, stored: Bool = false, collapsed: Bool = false, detail: String? = nil) {
        self.hit = hit
        self.forward = forward
        self.forwardStatus = forwardStatus
        self.ttl = ttl
        self.stored = stored
        self.collapsed = collapsed
        self.detail = detail
    }

    /// The field member for a cache called `name`: `satchel; hit; ttl=120`, `satchel; fwd=stale; fwd-status=304`.
    /// Written into one string as it goes: every answer through the cache carries one, a miss included.
    public func member(cache name: String) -> String {
        var member = name
        member.reserveCapacity(name.utf8.count + 48 + (detail?.utf8.count ?? 0))
        if hit { member += "; hit" }
        if let forward {
            member += "; fwd="
            member += forward.rawValue
        }
        if let forwardStatus {
            member += "; fwd-status="
            member += String(forwardStatus)
        }
        if let ttl {
            member += "; ttl="
            member += String(ttl)
        }
        if stored { member += "; stored" }
        if collapsed { member += "; collapsed" }
        if let detail {
            member += "; detail="
            if Self.token(detail) {
                member += detail
            } else {
                member += "\""
                for character in detail.unicodeScalars {
                    if character == "\\" || character == "\"" { member += "\\" }
                    member.unicodeScalars.append(character)
                }
                member += "\""
            }
        }
        return member
    }

    /// Adds this cache's member after any an upstream cache put there: members run from the origin to the client
    /// (RFC 9211 §2).
    public func add(to headers: inout HTTPHeaders, cache name: String) {
        headers.add("Cache-Status", member(cache: name))
    }

    private static func token(_ text: String) -> Bool {
        guard let first = text.utf8.first, (first >= 0x41 && first <= 0x5A) || (first >= 0x61 && first <= 0x7A) else { return false }
        return text.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || "!#$%&'*+-.^_`|~:/".utf8.contains(byte)
        }
    }
}
