import Foundation
import SatchelCore
import Testing

@Suite("Threshold signatures: counting against a role, signature files, plain keys")
struct TrustSignatureTests {
    let keys = TrustFixture()
    let catalogBytes = Array(#"{"expires":"2030-01-01T00:00:00Z","packages":[],"schema":1,"trust":1}"#.utf8)

    /// Version 1: catalog role 2 of 3, bundles 1 of 2.
    func document() throws -> TrustDocument {
        try keys.document(
            version: 1, roots: [keys.roots[0]], catalog: keys.catalog, catalogThreshold: 2, bundles: Array(keys.bundles[0..<2]),
            signedBy: [keys.roots[0]])
    }

    func sign(_ bytes: [UInt8], _ signers: [SigningKey]) throws -> [KeyedSignature] {
        try signers.map { try KeyedSignature(signing: bytes, with: $0) }
    }

    @Test("threshold met, and short by one")
    func thresholdMetAndShort() throws {
        let catalog = try document().signers(.catalog)
        let met = try catalog.verify(catalogBytes, signatures: sign(catalogBytes, Array(keys.catalog[0..<2])))
        #expect(met.counted == keys.catalog[0..<2].map(\.keyID).sorted() && met.isMet)
        let short = catalog.tally(catalogBytes, signatures: try sign(catalogBytes, [keys.catalog[2]]))
        #expect(!short.isMet && short.have == 1 && short.threshold == 2)
        #expect(throws: TrustRefusal.threshold(short)) { try catalog.verify(catalogBytes, signatures: try sign(catalogBytes, [keys.catalog[2]])) }
        #expect(TrustRefusal.threshold(short).check == "threshold")
        #expect("\(TrustRefusal.threshold(short))" == "threshold: catalog role: 1 of 2 signatures")
        let none = catalog.tally(catalogBytes, signatures: [])
        #expect(throws: TrustRefusal.threshold(none)) { try catalog.verify(catalogBytes, signatures: []) }
    }

    @Test("duplicate signatures by one key count once")
    func duplicates() throws {
        let catalog = try document().signers(.catalog)
        let one = try sign(catalogBytes, [keys.catalog[0]])
        let tally = catalog.tally(catalogBytes, signatures: one + one + one)
        #expect(tally.have == 1 && !tally.isMet)
        // The legacy signature (catalog.json.sig) by the same key is the same signer.
        let withLegacy = catalog.tally(catalogBytes, signatures: one, legacy: one[0].signature)
        #expect(withLegacy.have == 1)
        let legacyOther = catalog.tally(catalogBytes, signatures: one, legacy: try keys.catalog[1].signature(for: catalogBytes))
        #expect(legacyOther.have == 2 && legacyOther.isMet)
    }

    @Test("a signature by a key of another role does not count: the catalog keys alone never make a bundle installable")
    func wrongRole() throws {
        let document = try document()
        let manifest = Array(#"{"schema":1}"#.utf8)
        let byCatalogKeys = try sign(manifest, keys.catalog)
        let tally = document.signers(.bundles).tally(manifest, signatures: byCatalogKeys)
        #expect(tally.have == 0 && tally.untrusted == keys.catalog.map(\.keyID).sorted())
        #expect(throws: TrustRefusal.keyNotTrusted(tally.untrusted[0], tally)) {
            try document.signers(.bundles).verify(manifest, signatures: byCatalogKeys)
        }
        // A root key signing a catalog is the wrong role too.
        let byRoot = try sign(catalogBytes, [keys.roots[0]])
        #expect(throws: TrustRefusal.self) { try document.signers(.catalog).verify(catalogBytes, signatures: byRoot) }
        #expect(document.signers(.catalog).tally(catalogBytes, signatures: byRoot).untrusted == [keys.roots[0].keyID])
    }

    @Test("a signature by a key nobody knows does not count, and is named")
    func unknownKey() throws {
        let catalog = try document().signers(.catalog)
        let signatures = try sign(catalogBytes, [keys.catalog[0], keys.stranger])
        let tally = catalog.tally(catalogBytes, signatures: signatures)
        #expect(tally.have == 1 && tally.untrusted == [keys.stranger.keyID])
        #expect(throws: TrustRefusal.keyNotTrusted(keys.stranger.keyID, tally)) { try catalog.verify(catalogBytes, signatures: signatures) }
        #expect(TrustRefusal.keyNotTrusted(keys.stranger.keyID, tally).check == "key-not-trusted")
        // Under a role key's id, a signature by another key (or over other bytes) is a mismatch and does not count.
        let forged = [KeyedSignature(keyID: keys.catalog[1].keyID, signature: try keys.stranger.signature(for: catalogBytes))]
        let forgedTally = catalog.tally(catalogBytes, signatures: try sign(catalogBytes, [keys.catalog[0]]) + forged)
        #expect(forgedTally.have == 1 && forgedTally.invalid == [keys.catalog[1].keyID])
        #expect(throws: TrustRefusal.signatureMismatch(keys.catalog[1].keyID, forgedTally)) {
            try catalog.verify(catalogBytes, signatures: try sign(catalogBytes, [keys.catalog[0]]) + forged)
        }
    }

    @Test("plain trusted keys (today's rule): one legacy signature by any; no keys, nothing checked")
    func plainKeys() throws {
        let plain = SignerSet.plain([keys.catalog[0].verifyingKey, keys.catalog[1].verifyingKey])
        #expect(plain.role == nil && plain.threshold == 1)
        let legacy = try keys.catalog[1].signature(for: catalogBytes)
        #expect(try plain.verify(catalogBytes, signatures: [], legacy: legacy).isMet)
        #expect(throws: TrustRefusal.self) { try plain.verify(catalogBytes, signatures: [], legacy: try keys.stranger.signature(for: catalogBytes)) }
        #expect(throws: TrustRefusal.self) { try plain.verify(catalogBytes, signatures: [], legacy: nil) }
        #expect(SignerSet.plain([]) == .unchecked && !SignerSet.unchecked.isChecked)
        #expect(try SignerSet.unchecked.verify(catalogBytes, signatures: [], legacy: nil).isMet)
    }

    @Test("signature files: canonical, bound to the bytes they sign, one signature per key, strict reading")
    func signatureFile() throws {
        var file = SignatureFile(for: catalogBytes)
        file = try file.adding(keys.catalog[1], over: catalogBytes)
        file = try file.adding(keys.catalog[0], over: catalogBytes)
        #expect(try file.adding(keys.catalog[0], over: catalogBytes) == file)
        #expect(file.signatures.map(\.keyID) == keys.catalog[0..<2].map(\.keyID).sorted())
        #expect(file.sha256 == Digests.sha256Hex(catalogBytes) && file.covers(catalogBytes))
        #expect(file.isSigned(by: keys.catalog[0].verifyingKey, over: catalogBytes))
        let bytes = file.canonicalBytes
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix(#"{"sha256":"\#(file.sha256)","signatures":[{"keyid":""#))
        #expect(try SignatureFile.decode(bytes) == file)
        #expect(try document().signers(.catalog).verify(catalogBytes, signatures: file.signatures).isMet)
        // Other bytes (the catalog was written again): the old signatures go, the new one stays alone.
        let next = catalogBytes + [0x20]
        let fresh = try file.adding(keys.catalog[2], over: next)
        #expect(fresh.signatures.map(\.keyID) == [keys.catalog[2].keyID] && fresh.covers(next))
        #expect(!file.isSigned(by: keys.catalog[0].verifyingKey, over: next))
        // Strict: unknown field, non-canonical, malformed digest, oversized before parsing.
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(throws: TrustError.unknownField("note")) { try SignatureFile.decode(Array(text.replacingOccurrences(of: #"{"sha256""#, with: #"{"note":"x","sha256""#).utf8)) }
        #expect(throws: TrustError.notCanonical) { try SignatureFile.decode(Array((text + " ").utf8)) }
        #expect(throws: TrustError.malformedDigest("ABC")) { try SignatureFile.decode(Array(#"{"sha256":"ABC","signatures":[]}"#.utf8)) }
        #expect(throws: TrustError.tooLarge(SignatureFile.maxBytes + 1, limit: SignatureFile.maxBytes)) {
            try SignatureFile.decode([UInt8](repeating: 0x20, count: SignatureFile.maxBytes + 1))
        }
        #expect(throws: TrustError.missingField("signatures")) { try SignatureFile.decode(Array(#"{"sha256":"\#(file.sha256)"}"#.utf8)) }
    }

    @Test("a catalog entry's signatures decode leniently as a field, but each element is checked")
    func entrySignatures() throws {
        let signature = try KeyedSignature(signing: catalogBytes, with: keys.bundles[0])
        let json = String(decoding: CanonicalJSON.array([signature.canonicalJSON]).bytes, as: UTF8.self)
        #expect(try JSONDecoder().decode([KeyedSignature].self, from: Data(json.utf8)) == [signature])
        #expect(throws: (any Error).self) {
            try JSONDecoder().decode([KeyedSignature].self, from: Data(json.replacingOccurrences(of: signature.keyID.hex, with: signature.keyID.hex.uppercased()).utf8))
        }
        #expect(throws: (any Error).self) {
            try JSONDecoder().decode([KeyedSignature].self, from: Data(#"[{"keyid":"\#(signature.keyID.hex)","sig":"AAAA"}]"#.utf8))
        }
    }
}
