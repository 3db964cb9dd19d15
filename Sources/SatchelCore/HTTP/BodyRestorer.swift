import Foundation

/// The names the page's hook and the native side agree on to carry a request body that WebKit drops when it
/// hands an intercepted request to native code (docs/body-restoration.md; the wire format in docs/formats.md, "Body channels").
public struct BodyChannels: Sendable, Equatable {
    /// Header channel: the body, percent-encoded as `encodeURIComponent` does (or base64, see
    /// ``encodingHeader``). The first name is the one the hook sends; the rest are also accepted.
    public var headerNames: [String]
    /// `base64` for binary bodies; absent or `uri` for `encodeURIComponent` text.
    public var encodingHeader: String
    /// The original method (the page may have sent PUT or PATCH); POST when absent.
    public var methodHeader: String
    /// The original Content-Type, which the header channel cannot keep in the request's own header (WebKit
    /// keeps that header, but the legacy hook does not set it; Satchel's sends it here).
    public var contentTypeHeader: String
    /// Form-to-query channel: the parameter that carries an `application/x-www-form-urlencoded` body,
    /// percent-encoded once more.
    public var queryParameter: String
    /// Body-store channel: the id of a body the page handed over separately, in a header…
    public var bodyIDHeader: String
    /// …or, for form submissions, in a query parameter.
    public var bodyIDParameter: String
    /// The most header-channel bytes accepted (encoded). Larger bodies must use the body store.
    public var maxHeaderValueBytes: Int
    /// The ``BodyProof`` of a request that carries its body in a header or names a stored body in a header…
    public var proofHeader: String
    /// …or, for form submissions (navigations cannot carry headers), a query parameter.
    public var proofParameter: String
    /// Marks a request the page sent with `keepalive` (a beacon): it must reach the network even if the page goes
    /// away at once, so a WebKit adapter does not cancel its upstream request when WebKit stops the task.
    public var keepaliveHeader: String

    public init(
        headerNames: [String] = ["X-Satchel-Body", "BODY"], encodingHeader: String = "X-Satchel-Body-Encoding",
        methodHeader: String = "X-Satchel-Method", contentTypeHeader: String = "X-Satchel-Content-Type",
        queryParameter: String = "POST_DATA", bodyIDHeader: String = "X-Satchel-Body-Id",
        bodyIDParameter: String = "SATCHEL_BODY_ID", maxHeaderValueBytes: Int = 16 << 10, proofHeader: String = "X-Satchel-Token",
        proofParameter: String = "SATCHEL_TOKEN", keepaliveHeader: String = "X-Satchel-Keepalive"
    ) {
        self.headerNames = headerNames
        self.encodingHeader = encodingHeader
        self.methodHeader = methodHeader
        self.contentTypeHeader = contentTypeHeader
        self.queryParameter = queryParameter
        self.bodyIDHeader = bodyIDHeader
        self.bodyIDParameter = bodyIDParameter
        self.maxHeaderValueBytes = maxHeaderValueBytes
        self.proofHeader = proofHeader
        self.proofParameter = proofParameter
        self.keepaliveHeader = keepaliveHeader
    }

    /// Every header a satchel hook may add; all are removed before a request is forwarded.
    public var allHeaders: [String] { headerNames + [encodingHeader, methodHeader, contentTypeHeader, bodyIDHeader, proofHeader, keepaliveHeader] }

    /// Every query parameter a satchel hook may add; all are removed before a request is forwarded, and their
    /// values never reach a log.
    public var allParameters: [String] { [queryParameter, bodyIDParameter, proofParameter] }
}

/// Which channel restored a body.
public enum BodyChannel: String, Sendable, Equatable, Codable {
    case none
    case header
    case formQuery = "form-query"
    case bodyStore = "body-store"
}

/// A body the page handed to native code before sending the request that refers to it.
public struct StoredBody: Sendable, Equatable {
    public var bytes: [UInt8]
    public var contentType: String?
    public var method: String?

    public init(bytes: [UInt8], contentType: String? = nil, method: String? = nil) {
        self.bytes = bytes
        self.contentType = contentType
        self.method = method
    }
}

/// Why a body could not be restored. Strict by design: a request that claims a body is never forwarded
/// without it.
public enum BodyRestorationError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformedEncoding(channel: BodyChannel, reason: String)
    case bodyLost(channel: BodyChannel, id: String)
    case tooLarge(channel: BodyChannel, bytes: Int, limit: Int)
    case conflictingChannels([BodyChannel])
    /// The request claims a body without a valid proof that this launch's hook moved it (``BodyProof``).
    case unproven(channel: BodyChannel, reason: String)
    /// WebKit delivered a body with the request (recent WebKit does for some fetch, XHR and form bodies) and the hook
    /// carried one too, and they differ: neither can be trusted to be the page's.
    case deliveredBodyDiffers(channel: BodyChannel, delivered: Int, carried: Int)

    /// 400 for a malformed or lost body, 413 for one over a limit, 403 for one whose origin is not proven.
    public var status: Int {
        switch self {
        case .tooLarge: 413
        case .unproven: 403
        case .malformedEncoding, .bodyLost, .conflictingChannels, .deliveredBodyDiffers: 400
        }
    }

    public var description: String {
        switch self {
        case .malformedEncoding(let channel, let reason): "malformed body encoding in the \(channel.rawValue) channel: \(reason)"
        case .bodyLost(let channel, let id): "body lost: the \(channel.rawValue) channel names body \(id.debugDescription), which is not (or no longer) stored"
        case .tooLarge(let channel, let bytes, let limit): "body too large for the \(channel.rawValue) channel: \(bytes) bytes, limit \(limit); use the body store"
        case .conflictingChannels(let channels): "one request claims a body through several channels: \(channels.map(\.rawValue).joined(separator: ", "))"
        case .unproven(let channel, let reason): "refused: a body claimed through the \(channel.rawValue) channel without proof that the app's hook sent it: \(reason)"
        case .deliveredBodyDiffers(let channel, let delivered, let carried):
            "the body WebKit delivered (\(delivered) bytes) differs from the one the \(channel.rawValue) channel carried (\(carried) bytes)"
        }
    }
}

/// Restores the body of an intercepted request from whichever channel the hook used, and removes every
/// satchel header and parameter, so the request forwarded to the network is the one the page meant to send.
/// Pure: the body store is reached through the `takeStoredBody` closure.
public struct BodyRestorer: Sendable {
    public var channels: BodyChannels

    public init(channels: BodyChannels = BodyChannels()) { self.channels = channels }

    /// - Parameters:
    ///   - takeStoredBody: takes (removes) a body from the body store.
    ///   - proof: how the request's ``BodyProof`` is checked; nil accepts bodies without one (the legacy
    ///     hooks, which carry none: an explicit, documented choice, since any content could then forge a
    ///     cookie-bearing POST to the app's origins).
    public func restore(
        _ request: ResourceRequest, takeStoredBody: (String) -> StoredBody?, proof: BodyProofCheck?
    ) throws(BodyRestorationError) -> (request: ResourceRequest, channel: BodyChannel) {
        var result = request
        var query = RequestURL(request.url)?.query.map(QueryString.init) ?? QueryString("")
        let headerName = channels.headerNames.first { request.headers.contains($0) }
        let formValues = query.values(channels.queryParameter)
        let idFromHeader = request.headers[channels.bodyIDHeader]
        let idFromQuery = query.values(channels.bodyIDParameter)

        let claimed = claimedChannels(request)
        guard claimed.count <= 1 else { throw .conflictingChannels(claimed) }

        let originalMethod = request.headers[channels.methodHeader]
        let originalType = request.headers[channels.contentTypeHeader]
        let proofFromHeader = request.headers[channels.proofHeader].map { Substring($0) }
        let proofFromQuery = query.values(channels.proofParameter).first
        // Satchel's own fields never go upstream, whatever the request claims: with no body claimed, a proof, a
        // method or a keepalive marker is only a marker.
        for name in channels.allHeaders { result.headers.remove(name) }
        if proofFromQuery != nil {
            query.remove(channels.proofParameter)
            result.url = Self.replacingQuery(of: request.url, with: query)
        }
        guard let channel = claimed.first else { return (result, .none) }

        switch channel {
        case .header:
            let value = request.headers[headerName!]!
            guard value.utf8.count <= channels.maxHeaderValueBytes else {
                throw .tooLarge(channel: .header, bytes: value.utf8.count, limit: channels.maxHeaderValueBytes)
            }
            try Self.verify(proof, proofFromHeader, channel: .header, binding: value)
            let encoding = request.headers[channels.encodingHeader]?.lowercased() ?? "uri"
            switch encoding {
            case "base64":
                guard let data = Data(base64Encoded: value) else { throw .malformedEncoding(channel: .header, reason: "not base64") }
                result.body = Array(data)
            case "uri":
                result.body = try Self.percentDecode(Substring(value), channel: .header, requireUTF8: true)
            default:
                throw .malformedEncoding(channel: .header, reason: "unknown encoding \(encoding.debugDescription)")
            }
            result.method = originalMethod.map { RequestMethod($0) } ?? Self.restoredMethod(request.method)
            if let originalType { result.headers.set("Content-Type", originalType) }
        case .formQuery:
            guard formValues.count == 1 else { throw .malformedEncoding(channel: .formQuery, reason: "\(channels.queryParameter) appears \(formValues.count) times") }
            try Self.verify(proof, proofFromQuery, channel: .formQuery, binding: String(formValues[0]))
            result.body = try Self.percentDecode(formValues[0], channel: .formQuery, requireUTF8: true)
            query.remove(channels.queryParameter)
            result.url = Self.replacingQuery(of: request.url, with: query)
            result.method = .post
            result.headers.set("Content-Type", "application/x-www-form-urlencoded")
        case .bodyStore:
            let ids = (idFromHeader.map { [$0] } ?? []) + idFromQuery.map { String($0) }
            guard Set(ids).count == 1, let id = ids.first else {
                throw .malformedEncoding(channel: .bodyStore, reason: "several body ids")
            }
            // Checked before the body is taken: a forged request must not consume the page's body.
            try Self.verify(proof, idFromHeader != nil ? proofFromHeader : proofFromQuery, channel: .bodyStore, binding: id)
            guard let stored = takeStoredBody(id) else { throw .bodyLost(channel: .bodyStore, id: id) }
            result.body = stored.bytes
            result.method = (originalMethod ?? stored.method).map { RequestMethod($0) } ?? Self.restoredMethod(request.method)
            if let type = originalType ?? stored.contentType { result.headers.set("Content-Type", type) }
            if !idFromQuery.isEmpty || proofFromQuery != nil {
                query.remove(channels.bodyIDParameter)
                result.url = Self.replacingQuery(of: request.url, with: query)
            }
        case .none:
            break
        }
        // A body WebKit delivered and the hook also carried is one body, checked equal, never sent twice or swapped.
        if let delivered = request.body, !delivered.isEmpty, channel != .none, result.body != delivered {
            throw .deliveredBodyDiffers(channel: channel, delivered: delivered.count, carried: result.body?.count ?? 0)
        }
        result.headers.set("Content-Length", String(result.body?.count ?? 0))
        return (result, channel)
    }

    /// The channels through which `request` claims a body (none, one, or several, which ``restore`` refuses).
    /// Satchel's other fields (the proof, the method, the keepalive marker) claim nothing on their own.
    public func claimedChannels(_ request: ResourceRequest) -> [BodyChannel] {
        let query = RequestURL(request.url)?.query.map(QueryString.init) ?? QueryString("")
        var claimed: [BodyChannel] = []
        if channels.headerNames.contains(where: { request.headers.contains($0) }) { claimed.append(.header) }
        if !query.values(channels.queryParameter).isEmpty { claimed.append(.formQuery) }
        if request.headers.contains(channels.bodyIDHeader) || !query.values(channels.bodyIDParameter).isEmpty { claimed.append(.bodyStore) }
        return claimed
    }

    /// WebKit keeps the method of an intercepted POST; a hook that had to turn it into a GET (forms) is
    /// restored to POST.
    static func restoredMethod(_ method: RequestMethod) -> RequestMethod {
        let upper = RequestMethod(method.rawValue.uppercased())
        return upper.readsRepresentation ? .post : upper
    }

    /// `decodeURIComponent`, strictly: every `%` starts two hex digits, and (for text) the result is UTF-8.
    /// The body's proof, when proofs are required.
    private static func verify(_ check: BodyProofCheck?, _ token: Substring?, channel: BodyChannel, binding: String) throws(BodyRestorationError) {
        guard let check, let proofChannel = ProofChannel(rawValue: channel.rawValue) else { return }
        do { try check.verify(token, channel: proofChannel, binding: binding) } catch { throw .unproven(channel: channel, reason: error.reason) }
    }

    static func percentDecode(_ text: Substring, channel: BodyChannel, requireUTF8: Bool) throws(BodyRestorationError) -> [UInt8] {
        let bytes: [UInt8]
        do { bytes = try PercentDecoding.decode(text) } catch {
            throw .malformedEncoding(channel: channel, reason: "a % not followed by two hex digits")
        }
        if requireUTF8, UTF8Text.decode(bytes) == nil {
            throw .malformedEncoding(channel: channel, reason: "the decoded text is not UTF-8")
        }
        return bytes
    }

    /// The URL with its query replaced (or dropped when empty); the fragment is not kept.
    static func replacingQuery(of url: String, with query: QueryString) -> String {
        let base = url.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
        let path = base.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        return query.isEmpty ? String(path) : path + "?" + query.text
    }
}

/// A query string as a list of raw `name=value` pairs, in order, bytes untouched: removing one parameter
/// leaves every other exactly as the page wrote it (order, duplicates and encoding included).
public struct QueryString: Sendable, Equatable {
    private var pairs: [Substring]

    public init(_ text: String) {
        pairs = text.isEmpty ? [] : text.split(separator: "&", omittingEmptySubsequences: false)
    }

    public var isEmpty: Bool { pairs.isEmpty }
    public var text: String { pairs.joined(separator: "&") }

    /// The raw (still percent-encoded) values of parameters whose raw name is exactly `name`.
    public func values(_ name: String) -> [Substring] {
        pairs.compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return parts[0] == name ? (parts.count > 1 ? parts[1] : "") : nil
        }
    }

    public mutating func remove(_ name: String) {
        pairs.removeAll { $0.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)[0] == name }
    }
}
