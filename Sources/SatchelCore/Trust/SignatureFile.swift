/// Threshold signatures kept where older readers never look (docs/formats.md, "Threshold signatures"):
/// `catalog.json.sigs` beside the catalog, over `catalog.json`'s bytes, and `<bundle>.sigs` beside a bundle, over its
/// `satchel.json`'s bytes (which `satchel catalog` copies into the bundle's catalog entry as `signatures`).
///
/// ```
/// {"sha256":"<hex of the signed bytes>","signatures":[{"keyid":…,"sig":…}]}
/// ```
///
/// `sha256` binds the file to the bytes it signs, so a tool adding a signature can tell a file left from an earlier
/// catalog (and start afresh) and a device can tell a signature file a CDN has not yet refreshed from a forged one.
/// `satchel.sig` and `catalog.json.sig` stay one legacy signature each; they count toward the threshold too.
public struct SignatureFile: Equatable, Sendable {
    public static let maxBytes = DocumentLimits.signatureFile
    /// The suffix of a signature file's name: `catalog.json.sigs`, `shop-1.1.0.zip.sigs`.
    public static let suffix = ".sigs"

    /// SHA-256 of the bytes signed, lower-case hex.
    public let sha256: String
    /// As read (order and repetitions kept); writers keep one per key, sorted by key id.
    public let signatures: [KeyedSignature]

    public init(sha256: String, signatures: [KeyedSignature]) throws(TrustError) {
        guard Digests.isSHA256Hex(sha256) else { throw .malformedDigest(sha256) }
        self.sha256 = sha256
        self.signatures = signatures
    }

    /// An empty file for `bytes`.
    public init(for bytes: [UInt8]) {
        sha256 = Digests.sha256Hex(bytes)
        signatures = []
    }

    /// A legacy signature file's signature (`satchel.sig`, `catalog.json.sig`: base64 of 64 bytes, surrounding
    /// whitespace ignored); nil when it is above ``DocumentLimits/legacySignature`` or not one.
    public static func legacySignature(_ bytes: [UInt8]) -> Signature? {
        guard bytes.count <= DocumentLimits.legacySignature else { return nil }
        return try? Signature(base64: String(decoding: bytes, as: UTF8.self))
    }

    /// Whether the file was made for these bytes.
    public func covers(_ bytes: [UInt8]) -> Bool { Digests.sha256Hex(bytes) == sha256 }

    /// The file with `key`'s signature over `bytes`, in place of any earlier one by that key; a file made for other
    /// bytes is started afresh (its signatures cannot verify). Idempotent per key: Ed25519 as Satchel signs is
    /// deterministic on Linux, and one signature per key is kept everywhere.
    public func adding(_ key: SigningKey, over bytes: [UInt8]) throws -> SignatureFile {
        let base = covers(bytes) ? self : SignatureFile(for: bytes)
        let added = try KeyedSignature(signing: bytes, with: key)
        return SignatureFile(checked: base.sha256, KeyedSignature.adding(added, to: base.signatures))
    }

    /// Whether `key` already has a signature here that verifies over `bytes`.
    public func isSigned(by key: VerifyingKey, over bytes: [UInt8]) -> Bool {
        let id = key.keyID
        return covers(bytes) && signatures.contains { $0.keyID == id && key.isValid($0.signature, for: bytes) }
    }

    private init(checked sha256: String, _ signatures: [KeyedSignature]) {
        self.sha256 = sha256
        self.signatures = signatures
    }

    public var canonicalBytes: [UInt8] {
        CanonicalJSON.object(["sha256": .string(sha256), "signatures": .array(signatures.map(\.canonicalJSON))]).bytes
    }

    /// Reads a signature file strictly: at most ``maxBytes`` (checked before parsing), exactly `sha256` and
    /// `signatures`, well-formed key ids and signatures, canonical bytes.
    public static func decode(_ bytes: [UInt8]) throws(TrustError) -> SignatureFile {
        let top = try StrictJSON.object(StrictJSON.parse(bytes, maxBytes: maxBytes), at: "", fields: ["sha256", "signatures"])
        let file = try SignatureFile(
            sha256: try StrictJSON.string(top["sha256"], at: "sha256"), signatures: try KeyedSignature.parseList(top["signatures"], at: "signatures"))
        try StrictJSON.requireCanonical(bytes, file.canonicalBytes)
        return file
    }
}
