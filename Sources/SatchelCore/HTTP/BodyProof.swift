import Crypto
import Foundation

/// The secret of one launch, from which the hook makes a ``BodyProof`` for every request whose body it moves. It
/// is made when an engine starts and handed to the hook through the hook's configuration only, so content that
/// does not run the hook (an `<img src>`, a link, a third-party frame, another site) cannot prove anything.
public struct BodyProofSecret: Sendable, Equatable {
    let key: [UInt8]

    /// 32 bytes from the system's random source.
    public static func random() -> BodyProofSecret {
        var generator = SystemRandomNumberGenerator()
        return BodyProofSecret(key: (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    init(key: [UInt8]) { self.key = key }

    /// From its text form (tests, and an app that hands the engine and its own hook one secret).
    public init(text: String) throws(BodyRestorationError) {
        guard let key = Base64URL.decode(text), key.count >= 16 else {
            throw .unproven(channel: .none, reason: "a body-proof secret must be base64url of at least 16 bytes")
        }
        self.key = key
    }

    /// base64url, as the hook's configuration carries it.
    public var text: String { Base64URL.encode(key) }
}

/// The proof a hook attaches to a request whose body it moved into a channel: `<time>.<nonce>.<mac>`, where
/// `time` is milliseconds since 1970, `nonce` a random base64url string, and `mac` the base64url HMAC-SHA256,
/// under the launch's secret, of
///
///     satchel-body-proof/1 LF <channel> LF <time> LF <nonce> LF <binding>
///
/// with `binding` what the channel carries: the header channel's encoded body, the form-to-query channel's
/// `POST_DATA` value, the body-store channel's id. So a proof says "this launch's hook moved exactly this body,
/// just now", and the secret itself never travels in a URL: a form's proof rides on the action URL (where a
/// browser's history keeps it), but it is bound to that one body, expires, and is accepted once.
public struct BodyProof: Sendable, Equatable {
    public static let version = "satchel-body-proof/1"

    public let time: Int64
    public let nonce: String
    public let mac: [UInt8]

    /// Parses `<time>.<nonce>.<mac>`; nil when it has another shape.
    public init?(parsing text: Substring) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let time = Int64(parts[0]), time >= 0, (8...64).contains(parts[1].utf8.count),
            parts[1].utf8.allSatisfy(Base64URL.isAlphabet), let mac = Base64URL.decode(String(parts[2])), mac.count == 32
        else { return nil }
        self.time = time
        nonce = String(parts[1])
        self.mac = mac
    }

    /// The proof text the hook would make (the hook does this in JavaScript; native code and tests here).
    public static func make(secret: BodyProofSecret, channel: ProofChannel, binding: String, time: Int64, nonce: String) -> String {
        "\(time).\(nonce).\(Base64URL.encode(authenticationCode(secret: secret, channel: channel, binding: binding, time: time, nonce: nonce)))"
    }

    static func authenticationCode(secret: BodyProofSecret, channel: ProofChannel, binding: String, time: Int64, nonce: String) -> [UInt8] {
        let message = Array("\(version)\n\(channel.rawValue)\n\(time)\n\(nonce)\n\(binding)".utf8)
        return Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: secret.key)))
    }

    /// Whether the code is right for `binding` under `secret`, compared in constant time.
    func isValid(secret: BodyProofSecret, channel: ProofChannel, binding: String) -> Bool {
        let message = Array("\(Self.version)\n\(channel.rawValue)\n\(time)\n\(nonce)\n\(binding)".utf8)
        return HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: message, using: SymmetricKey(data: secret.key))
    }
}

/// How the engine checks proofs. Pure: the clock and the ledger of nonces already used come in as closures.
public struct BodyProofCheck: Sendable {
    public var secret: BodyProofSecret
    /// How old a proof may be (and how far ahead of the engine's clock): a page sends the request right after
    /// making the proof, so minutes are generous.
    public var maxAge: Duration
    /// Milliseconds since 1970.
    public var now: @Sendable () -> Int64
    /// Records a nonce; false when it was used before (a replayed proof).
    public var claimNonce: @Sendable (String) -> Bool

    public init(secret: BodyProofSecret, maxAge: Duration = .seconds(120), now: @escaping @Sendable () -> Int64, claimNonce: @escaping @Sendable (String) -> Bool) {
        self.secret = secret
        self.maxAge = maxAge
        self.now = now
        self.claimNonce = claimNonce
    }

    /// Checks `token` for a message of `channel` carrying `binding`.
    public func verify(_ token: Substring?, channel: ProofChannel, binding: String) throws(ProofFailure) {
        guard let token else { throw ProofFailure("no proof of origin (the hook's token is missing)") }
        guard let proof = BodyProof(parsing: token) else { throw ProofFailure("the proof of origin is malformed") }
        guard proof.isValid(secret: secret, channel: channel, binding: binding) else {
            throw ProofFailure("the proof of origin does not match (another launch's secret, or not made for this \(channel.subject))")
        }
        let age = now() - proof.time
        let limit = maxAge.components.seconds * 1000
        guard age <= limit, age >= -limit else { throw ProofFailure("the proof of origin is stale (\(age / 1000) s old)") }
        guard claimNonce(proof.nonce) else { throw ProofFailure("the proof of origin was used before (a replay)") }
    }
}

/// What a proof vouches for: a body moved through one of the hook's channels, a page's `document.cookie` read or
/// write, a bridge message. The name is part of the proven message, so a proof made for one cannot serve another.
public enum ProofChannel: String, Sendable, Equatable {
    case header
    case formQuery = "form-query"
    case bodyStore = "body-store"
    case cookie
    case bridge
    /// A page's health signal to the judge of a release on trial (``TrialFailure``).
    case trial

    var subject: String {
        switch self {
        case .header, .formQuery, .bodyStore: "this body"
        case .cookie: "this cookie"
        case .bridge, .trial: "this message"
        }
    }
}

/// Why a proof of origin was refused.
public struct ProofFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

/// base64url without padding (RFC 4648 §5), as the hook writes it.
enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ text: String) -> [UInt8]? {
        guard text.utf8.allSatisfy(isAlphabet) else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map(Array.init)
    }

    static func isAlphabet(_ byte: UInt8) -> Bool {
        (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D || byte == 0x5F
    }
}

extension BodyProof {
    /// `request` with the proof the hook would attach for the channel it claims (a header for the header and
    /// body-id-header channels, `SATCHEL_TOKEN` on the URL for the query channels); unchanged when it claims none.
    /// What the hook does in JavaScript, for native callers and tests.
    public static func attaching(to request: ResourceRequest, secret: BodyProofSecret, channels: BodyChannels = BodyChannels(), time: Int64? = nil) -> ResourceRequest {
        var result = request
        let now = time ?? Int64((Date().timeIntervalSince1970 * 1000).rounded())
        var generator = SystemRandomNumberGenerator()
        let nonce = Base64URL.encode((0..<12).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let query = RequestURL(request.url)?.query.map(QueryString.init) ?? QueryString("")
        if let name = channels.headerNames.first(where: { request.headers.contains($0) }), let value = request.headers[name] {
            result.headers.set(channels.proofHeader, make(secret: secret, channel: .header, binding: value, time: now, nonce: nonce))
        } else if let id = request.headers[channels.bodyIDHeader] {
            result.headers.set(channels.proofHeader, make(secret: secret, channel: .bodyStore, binding: id, time: now, nonce: nonce))
        } else if let value = query.values(channels.queryParameter).first {
            result.url += "&\(channels.proofParameter)=" + make(secret: secret, channel: .formQuery, binding: String(value), time: now, nonce: nonce)
        } else if let id = query.values(channels.bodyIDParameter).first {
            result.url += "&\(channels.proofParameter)=" + make(secret: secret, channel: .bodyStore, binding: String(id), time: now, nonce: nonce)
        }
        return result
    }
}
