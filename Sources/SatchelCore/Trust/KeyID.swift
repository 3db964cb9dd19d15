import Foundation

/// A key's id in trust documents and signature lists: the lower-case hex SHA-256 of the raw 32-byte Ed25519 public
/// key (docs/formats.md, "Trust documents"). Derived, never chosen, so one key has one id everywhere and a document
/// cannot give a key another's name.
public struct KeyID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let hex: String

    /// Parses a key id as written: exactly 64 lower-case hex digits.
    public init(hex: String) throws(TrustError) {
        guard Digests.isSHA256Hex(hex) else { throw .malformedKeyID(hex) }
        self.hex = hex
    }

    public init(_ key: VerifyingKey) { hex = Digests.sha256Hex(key.key.rawRepresentation) }

    public static func < (lhs: KeyID, rhs: KeyID) -> Bool { lhs.hex.utf8.lexicographicallyPrecedes(rhs.hex.utf8) }

    public var description: String { hex }
}

extension VerifyingKey {
    /// This key's id (SHA-256 of its raw 32 bytes, lower-case hex).
    public var keyID: KeyID { KeyID(self) }
}

extension SigningKey {
    /// The id of this key's public half.
    public var keyID: KeyID { verifyingKey.keyID }
}

/// One signature with the id of the key that made it: `{"keyid":…,"sig":…}`, the element of a trust document's
/// `signatures`, of a signature file (`catalog.json.sigs`, `<bundle>.sigs`) and of a catalog entry's `signatures`.
/// The key id only says which key to try; a signature counts only when that key verifies it.
public struct KeyedSignature: Hashable, Sendable {
    public let keyID: KeyID
    public let signature: Signature

    public init(keyID: KeyID, signature: Signature) {
        self.keyID = keyID
        self.signature = signature
    }

    /// Signs `bytes` with `key`.
    public init(signing bytes: [UInt8], with key: SigningKey) throws {
        keyID = key.keyID
        signature = try key.signature(for: bytes)
    }

    public var canonicalJSON: CanonicalJSON {
        .object(["keyid": .string(keyID.hex), "sig": .string(signature.base64)])
    }

    /// `signatures` as written: one per key (the last given for a key wins), sorted by key id.
    public static func normalised(_ signatures: [KeyedSignature]) -> [KeyedSignature] {
        var byKey: [KeyID: KeyedSignature] = [:]
        for signature in signatures { byKey[signature.keyID] = signature }
        return byKey.values.sorted { $0.keyID < $1.keyID }
    }

    /// `signatures` with `added` in place of any earlier signature by the same key, normalised.
    public static func adding(_ added: KeyedSignature, to signatures: [KeyedSignature]) -> [KeyedSignature] {
        normalised(signatures.filter { $0.keyID != added.keyID } + [added])
    }

    /// Reads one element strictly: exactly the fields `keyid` and `sig`, a well-formed key id, and base64 of 64 bytes.
    static func parse(_ value: CanonicalJSON, at path: String) throws(TrustError) -> KeyedSignature {
        let fields = try StrictJSON.object(value, at: path, fields: ["keyid", "sig"])
        let keyID = try KeyID(hex: try StrictJSON.string(fields["keyid"], at: path + ".keyid"))
        let text = try StrictJSON.string(fields["sig"], at: path + ".sig")
        guard text.utf8.count == 88, let signature = try? Signature(base64: text) else { throw .malformedSignature(path + ".sig") }
        return KeyedSignature(keyID: keyID, signature: signature)
    }

    static func parseList(_ value: CanonicalJSON?, at path: String) throws(TrustError) -> [KeyedSignature] {
        let elements = try StrictJSON.array(value, at: path)
        var signatures: [KeyedSignature] = []
        for (index, element) in elements.enumerated() { signatures.append(try parse(element, at: "\(path)[\(index)]")) }
        return signatures
    }
}

/// A catalog entry's `signatures` is read inside a lenient catalog (docs/formats.md, "Catalog"): the element's own
/// fields are still checked, since a signature that cannot be read cannot count.
extension KeyedSignature: Decodable {
    private enum Field: String, CodingKey { case keyid, sig }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Field.self)
        let text = try container.decode(String.self, forKey: .keyid)
        do { keyID = try KeyID(hex: text) } catch {
            throw FieldError(field: "keyid", value: text, reason: "must be 64 lower-case hex digits")
        }
        let sig = try container.decode(String.self, forKey: .sig)
        do { signature = try Signature(base64: sig) } catch {
            throw FieldError(field: "sig", value: sig, reason: "must be base64 of a 64-byte Ed25519 signature")
        }
    }
}
