/// Who may sign one kind of document, and how many must: a role of the trust document a device holds (with the keys
/// that role had in older held versions, now revoked), or the plain trusted keys of an app without roots (any one of
/// them, today's rule). The one place signatures are counted, for trust documents, catalogs and bundles alike.
public struct SignerSet: Equatable, Sendable {
    /// The role, or nil for plain trusted keys (`--public-key`).
    public let role: TrustRole?
    public let keys: [KeyID: VerifyingKey]
    /// How many distinct keys must sign; 0 only for ``unchecked`` (no key configured at all: nothing is checked).
    public let threshold: Int
    /// Keys the role had in a trust version the device holds and has no longer: their signatures never count, and
    /// a refusal names them.
    public let revoked: [KeyID: VerifyingKey]
    /// Other keys the device knows (the other roles'), so that a signature by one is named as the wrong role's.
    public let known: [KeyID: VerifyingKey]

    public init(role: TrustRole?, keys: [KeyID: VerifyingKey], threshold: Int, revoked: [KeyID: VerifyingKey] = [:], known: [KeyID: VerifyingKey] = [:]) {
        self.role = role
        self.keys = keys
        self.threshold = threshold
        self.revoked = revoked.filter { keys[$0.key] == nil }
        self.known = known.filter { keys[$0.key] == nil && revoked[$0.key] == nil }
    }

    /// Today's rule for an app configured with plain keys: one signature by any of them; with none, ``unchecked``.
    public static func plain(_ keys: [VerifyingKey]) -> SignerSet {
        SignerSet(role: nil, keys: Dictionary(keys.map { ($0.keyID, $0) }, uniquingKeysWith: { first, _ in first }), threshold: keys.isEmpty ? 0 : 1)
    }

    /// No key configured: signatures are read but not checked (today's behaviour without `--public-key`).
    public static let unchecked = SignerSet(role: nil, keys: [:], threshold: 0)

    public var isChecked: Bool { threshold > 0 }

    /// Counts the distinct keys of the set whose signature verifies over `bytes`.
    ///
    /// - Parameters:
    ///   - signatures: keyed signatures (a trust document's, a signature file's, a catalog entry's); a key's
    ///     signatures count once however often it appears.
    ///   - legacy: a signature without a key id (`satchel.sig`, `catalog.json.sig`), tried against each key of the
    ///     set; it counts like any other, once per key.
    public func tally(_ bytes: [UInt8], signatures: [KeyedSignature], legacy: Signature? = nil) -> SignatureTally {
        var counted = Set<KeyID>()
        var revokedSigners = Set<KeyID>()
        var untrusted = Set<KeyID>()
        var invalid = Set<KeyID>()
        for signature in signatures {
            let id = signature.keyID
            if let key = keys[id] {
                if counted.contains(id) { continue }
                if key.isValid(signature.signature, for: bytes) { counted.insert(id) } else { invalid.insert(id) }
            } else if let key = revoked[id] {
                if key.isValid(signature.signature, for: bytes) { revokedSigners.insert(id) }
            } else if let key = known[id] {
                if key.isValid(signature.signature, for: bytes) { untrusted.insert(id) }
            } else {
                untrusted.insert(id)  // a key this device never saw: it cannot count whatever it signed
            }
        }
        if let legacy {
            if let id = keys.keys.sorted().first(where: { keys[$0]!.isValid(legacy, for: bytes) }) {
                counted.insert(id)
            } else if let id = revoked.keys.sorted().first(where: { revoked[$0]!.isValid(legacy, for: bytes) }) {
                revokedSigners.insert(id)
            } else if let id = known.keys.sorted().first(where: { known[$0]!.isValid(legacy, for: bytes) }) {
                untrusted.insert(id)
            }
        }
        return SignatureTally(
            role: role, threshold: threshold, counted: counted.sorted(), revoked: revokedSigners.sorted(), untrusted: untrusted.sorted(),
            invalid: invalid.subtracting(counted).sorted())
    }

    /// ``tally(_:signatures:legacy:)``, refused when short of the threshold, naming why: under plain keys' rule, with
    /// no signature at all, `unsigned`; else a revoked key first, then a key the role does not hold, then a signature
    /// that does not verify, else the threshold itself.
    ///
    /// - Parameter anyPresent: given only under plain keys' rule (docs/formats.md, "Signature and keys"): whether
    ///   the document came with a signature file, readable or not (a `.sig` that is not base64 of 64 bytes is present
    ///   and counts for nothing). Under roots a missing signature is the threshold's business.
    @discardableResult
    public func verify(_ bytes: [UInt8], signatures: [KeyedSignature], legacy: Signature? = nil, anyPresent: Bool? = nil) throws(TrustRefusal) -> SignatureTally {
        let tally = tally(bytes, signatures: signatures, legacy: legacy)
        if tally.isMet { return tally }
        if anyPresent == false { throw .unsigned(tally) }
        if let id = tally.revoked.first { throw .revokedKey(id, tally) }
        if let id = tally.untrusted.first { throw .keyNotTrusted(id, tally) }
        if let id = tally.invalid.first { throw .signatureMismatch(id, tally) }
        throw .threshold(tally)
    }
}

extension SignerSet {
    /// Whether any key the set knows (its own, revoked or another role's) verifies `signature` over `bytes`: a
    /// legacy signature none of them verifies was made by a key the device never saw, or over other bytes.
    public func anyKnownKeyVerifies(_ signature: Signature, over bytes: [UInt8]) -> Bool {
        for key in keys.values where key.isValid(signature, for: bytes) { return true }
        for key in revoked.values where key.isValid(signature, for: bytes) { return true }
        for key in known.values where key.isValid(signature, for: bytes) { return true }
        return false
    }
}

/// How the signatures over one document stand against a ``SignerSet``.
public struct SignatureTally: Equatable, Sendable {
    public let role: TrustRole?
    public let threshold: Int
    /// The set's keys whose signature verified, each once, sorted.
    public let counted: [KeyID]
    /// Revoked keys whose signature verified: not counted.
    public let revoked: [KeyID]
    /// Keys outside the set (another role's whose signature verified, or ids the device never saw): not counted.
    public let untrusted: [KeyID]
    /// The set's keys whose only signature here does not verify over these bytes.
    public let invalid: [KeyID]

    public var have: Int { counted.count }
    public var isMet: Bool { counted.count >= threshold }
    /// Signed, but only by revoked keys: what `satchel check` reports of an installed version (which keeps serving).
    public var onlyRevoked: Bool { counted.isEmpty && !revoked.isEmpty }

    /// `a key of the catalog role`, `one of the trusted keys`.
    var keyOfRole: String { role.map { "a key of the \($0) role" } ?? "one of the trusted keys" }

    /// `catalog role: 1 of 2 signatures`.
    public var summary: String {
        "\(role.map { "\($0) role" } ?? "trusted keys"): \(have) of \(threshold) signature\(threshold == 1 ? "" : "s")"
    }
}
