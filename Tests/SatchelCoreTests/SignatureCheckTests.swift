import SatchelCore
import Testing

@Suite("SignatureCheck: the one rule for signed documents")
struct SignatureCheckTests {
    let document = Array(#"{"schema":1}"#.utf8)
    let signer = SigningKey.generate()
    let stranger = SigningKey.generate()

    @Test("no trusted key: nothing is checked, signed or not")
    func noKeys() throws {
        #expect(try SignatureCheck.verify(document, signature: nil, trustedKeys: []) == false)
        #expect(try SignatureCheck.verify(document, signature: try stranger.signature(for: document), trustedKeys: []) == false)
    }

    @Test("a trusted key and no signature: unsigned")
    func unsigned() {
        #expect(throws: SignatureCheck.Refusal.unsigned) {
            try SignatureCheck.verify(document, signature: nil, trustedKeys: [signer.verifyingKey])
        }
    }

    @Test("signed by a key nobody trusts, or over other bytes: mismatch")
    func mismatch() throws {
        let foreign = try stranger.signature(for: document)
        #expect(throws: SignatureCheck.Refusal.mismatch) {
            try SignatureCheck.verify(document, signature: foreign, trustedKeys: [signer.verifyingKey])
        }
        let own = try signer.signature(for: document)
        #expect(throws: SignatureCheck.Refusal.mismatch) {
            try SignatureCheck.verify(document + [0x20], signature: own, trustedKeys: [signer.verifyingKey])
        }
    }

    @Test("any one of several trusted keys verifies")
    func oneOfSeveral() throws {
        let own = try signer.signature(for: document)
        #expect(try SignatureCheck.verify(document, signature: own, trustedKeys: [stranger.verifyingKey, signer.verifyingKey]))
    }
}
