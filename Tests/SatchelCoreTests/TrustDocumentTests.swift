import Foundation
import SatchelCore
import Testing

/// Keys and documents the trust tests share: five root keys, three catalog keys, three bundle keys.
struct TrustFixture {
    let roots = (0..<6).map { _ in SigningKey.generate() }
    let catalog = (0..<3).map { _ in SigningKey.generate() }
    let bundles = (0..<3).map { _ in SigningKey.generate() }
    let stranger = SigningKey.generate()
    static let later = Timestamp(secondsSinceEpoch: 2_000_000_000)  // 2033
    static let now = Timestamp(secondsSinceEpoch: 1_800_000_000)  // 2027

    func document(
        version: Int64, expires: Timestamp = TrustFixture.later, roots: [SigningKey], rootThreshold: Int = 1,
        catalog: [SigningKey]? = nil, catalogThreshold: Int = 1, bundles: [SigningKey]? = nil, bundleThreshold: Int = 1,
        signedBy signers: [SigningKey]
    ) throws -> TrustDocument {
        try TrustDocument(version: version, expires: expires, roles: [
            .root: RoleDefinition(keys: roots.map(\.verifyingKey), threshold: rootThreshold),
            .catalog: RoleDefinition(keys: (catalog ?? [self.catalog[0]]).map(\.verifyingKey), threshold: catalogThreshold),
            .bundles: RoleDefinition(keys: (bundles ?? [self.bundles[0]]).map(\.verifyingKey), threshold: bundleThreshold),
        ]).signed(by: signers)
    }

    /// A document's JSON as a mutable tree, edited and written back canonically, so that only the edited rule fails.
    static func edit(_ document: TrustDocument, _ change: (inout [String: CanonicalJSON]) -> Void) throws -> [UInt8] {
        guard case .object(var top) = try JSONDecoder().decode(CanonicalJSON.self, from: Data(document.canonicalBytes)) else {
            throw CancellationError()
        }
        change(&top)
        return CanonicalJSON.object(top).bytes
    }

    static func editSigned(_ document: TrustDocument, _ change: @escaping (inout [String: CanonicalJSON]) -> Void) throws -> [UInt8] {
        try edit(document) { top in
            guard case .object(var signed) = top["signed"] else { return }
            change(&signed)
            top["signed"] = .object(signed)
        }
    }
}

extension Dictionary where Key == String, Value == CanonicalJSON {
    /// The member at `key`, edited.
    mutating func edit(_ key: String, _ change: (inout CanonicalJSON) -> Void) {
        guard var member = self[key] else { return }
        change(&member)
        self[key] = member
    }
}

extension CanonicalJSON {
    /// The member at `key` of an object, edited.
    mutating func edit(_ key: String, _ change: (inout CanonicalJSON) -> Void) {
        guard case .object(var members) = self, var member = members[key] else { return }
        change(&member)
        members[key] = member
        self = .object(members)
    }
}

@Suite("Trust documents: canonical JSON in TUF's shape, key ids, strict reading")
struct TrustDocumentTests {
    let keys = TrustFixture()

    @Test("a document round-trips through its canonical bytes, in the documented shape")
    func roundTrip() throws {
        let document = try keys.document(version: 1, roots: Array(keys.roots[0..<3]), rootThreshold: 2, signedBy: Array(keys.roots[0..<2]))
        let bytes = document.canonicalBytes
        #expect(try TrustDocument.decode(bytes) == document)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix(#"{"signatures":[{"keyid":""#))
        #expect(text.contains(#","signed":{"expires":"2033-05-18T03:33:20Z","keys":{""#))
        #expect(text.contains(#""roles":{"bundles":{"keyids":[""#))
        #expect(text.hasSuffix(#""type":"satchel-trust","version":1}}"#))
        #expect(document.signatures.map(\.keyID) == [keys.roots[0].keyID, keys.roots[1].keyID].sorted())
        #expect(document.root.keyIDs == keys.roots[0..<3].map(\.keyID).sorted())
        // The signed bytes are the `signed` member exactly as it stands in the file.
        #expect(text.contains(String(decoding: document.signedBytes, as: UTF8.self) + "}"))
    }

    @Test("a key id is the lower-case hex SHA-256 of the raw 32-byte public key")
    func keyID() throws {
        let key = keys.roots[0].verifyingKey
        let raw = try #require(Data(base64Encoded: key.base64))
        #expect(raw.count == 32)
        #expect(key.keyID.hex == Digests.sha256Hex(raw))
        #expect(try KeyID(hex: key.keyID.hex) == key.keyID)
    }

    @Test("malformed key ids are refused: upper case, short, long, not hex", arguments: [
        "A" + String(repeating: "0", count: 63), String(repeating: "0", count: 63), String(repeating: "0", count: 65),
        String(repeating: "g", count: 64), "",
    ])
    func malformedKeyIDs(text: String) throws {
        #expect(throws: TrustError.malformedKeyID(text)) { try KeyID(hex: text) }
        let document = try keys.document(version: 1, roots: [keys.roots[0]], signedBy: [keys.roots[0]])
        let inRole = try TrustFixture.editSigned(document) { signed in
            signed.edit("roles") { roles in roles.edit("root") { root in root.edit("keyids") { $0 = .array([.string(text)]) } } }
        }
        #expect(throws: TrustError.malformedKeyID(text)) { try TrustDocument.decode(inRole) }
        let inSignature = try TrustFixture.edit(document) { top in
            top["signatures"] = .array([.object(["keyid": .string(text), "sig": .string(document.signatures[0].signature.base64)])])
        }
        #expect(throws: TrustError.malformedKeyID(text)) { try TrustDocument.decode(inSignature) }
    }

    @Test("a key listed under another key's id, or not an Ed25519 key, is refused")
    func keyMismatch() throws {
        let document = try keys.document(version: 1, roots: [keys.roots[0]], signedBy: [keys.roots[0]])
        let id = keys.roots[0].keyID
        let swapped = try TrustFixture.editSigned(document) { signed in
            signed.edit("keys") { $0.edit(id.hex) { $0 = .string(keys.stranger.verifyingKey.base64) } }
        }
        #expect(throws: TrustError.keyIDMismatch(id)) { try TrustDocument.decode(swapped) }
        let short = try TrustFixture.editSigned(document) { signed in
            signed.edit("keys") { $0.edit(id.hex) { $0 = .string("AAAA") } }
        }
        #expect(throws: TrustError.malformedKey(id)) { try TrustDocument.decode(short) }
    }

    @Test("unknown and missing roles and fields are refused by name")
    func strictFields() throws {
        let document = try keys.document(version: 1, roots: [keys.roots[0]], signedBy: [keys.roots[0]])
        let extraRole = try TrustFixture.editSigned(document) { signed in
            signed.edit("roles") { roles in
                guard case .object(var members) = roles else { return }
                members["admin"] = members["root"]
                roles = .object(members)
            }
        }
        #expect(throws: TrustError.unknownRole("admin")) { try TrustDocument.decode(extraRole) }
        let missingRole = try TrustFixture.editSigned(document) { signed in
            signed.edit("roles") { roles in
                guard case .object(var members) = roles else { return }
                members["bundles"] = nil
                roles = .object(members)
            }
        }
        #expect(throws: TrustError.missingRole(.bundles)) { try TrustDocument.decode(missingRole) }
        let extraTop = try TrustFixture.edit(document) { $0["comment"] = .string("hi") }
        #expect(throws: TrustError.unknownField("comment")) { try TrustDocument.decode(extraTop) }
        let extraSigned = try TrustFixture.editSigned(document) { $0["spec"] = .integer(1) }
        #expect(throws: TrustError.unknownField("signed.spec")) { try TrustDocument.decode(extraSigned) }
        let extraInRole = try TrustFixture.editSigned(document) { signed in
            signed.edit("roles") { roles in
                roles.edit("catalog") { role in
                    guard case .object(var members) = role else { return }
                    members["name"] = .string("ci")
                    role = .object(members)
                }
            }
        }
        #expect(throws: TrustError.unknownField("signed.roles.catalog.name")) { try TrustDocument.decode(extraInRole) }
        let extraInSignature = try TrustFixture.edit(document) { top in
            top["signatures"] = .array([.object(["keyid": .string(keys.roots[0].keyID.hex), "method": .string("ed25519"),
                                                 "sig": .string(document.signatures[0].signature.base64)])])
        }
        #expect(throws: TrustError.unknownField("signatures[0].method")) { try TrustDocument.decode(extraInSignature) }
        let noExpiry = try TrustFixture.editSigned(document) { $0["expires"] = nil }
        #expect(throws: TrustError.missingField("signed.expires")) { try TrustDocument.decode(noExpiry) }
    }

    @Test("thresholds are at least 1 and at most the role's keys; every role key is listed, once; every listed key is used")
    func roleRules() throws {
        let two = [keys.roots[0], keys.roots[1]]
        #expect(throws: TrustError.invalidThreshold(.root, threshold: 3, keys: 2)) {
            try keys.document(version: 1, roots: two, rootThreshold: 3, signedBy: [])
        }
        #expect(throws: TrustError.invalidThreshold(.catalog, threshold: 0, keys: 1)) {
            try keys.document(version: 1, roots: two, catalogThreshold: 0, signedBy: [])
        }
        #expect(throws: TrustError.duplicateKeyID(.root, keys.roots[0].keyID)) {
            try keys.document(version: 1, roots: [keys.roots[0], keys.roots[0]], signedBy: [])
        }
        let document = try keys.document(version: 1, roots: two, signedBy: two)
        let unlisted = try TrustFixture.editSigned(document) { signed in
            signed.edit("keys") { keys in
                guard case .object(var members) = keys else { return }
                members[self.keys.roots[1].keyID.hex] = nil
                keys = .object(members)
            }
        }
        #expect(throws: TrustError.keyNotListed(.root, keys.roots[1].keyID)) { try TrustDocument.decode(unlisted) }
        let unused = try TrustFixture.editSigned(document) { signed in
            signed.edit("keys") { keys in
                guard case .object(var members) = keys else { return }
                members[self.keys.stranger.keyID.hex] = .string(self.keys.stranger.verifyingKey.base64)
                keys = .object(members)
            }
        }
        #expect(throws: TrustError.unusedKey(keys.stranger.keyID)) { try TrustDocument.decode(unused) }
        let negative = try TrustFixture.editSigned(document) { signed in
            signed.edit("roles") { $0.edit("bundles") { $0.edit("threshold") { $0 = .integer(-1) } } }
        }
        #expect(throws: TrustError.invalidThreshold(.bundles, threshold: -1, keys: 1)) { try TrustDocument.decode(negative) }
        let twice = try TrustFixture.editSigned(document) { signed in
            signed.edit("roles") { $0.edit("root") { $0.edit("keyids") { $0 = .array([.string(self.keys.roots[0].keyID.hex), .string(self.keys.roots[0].keyID.hex)]) } } }
        }
        #expect(throws: TrustError.duplicateKeyID(.root, keys.roots[0].keyID)) { try TrustDocument.decode(twice) }
    }

    @Test("type, version and expiry are checked")
    func header() throws {
        let document = try keys.document(version: 1, roots: [keys.roots[0]], signedBy: [keys.roots[0]])
        #expect(throws: TrustError.wrongType("tuf-root")) { try TrustDocument.decode(try TrustFixture.editSigned(document) { $0["type"] = .string("tuf-root") }) }
        #expect(throws: TrustError.invalidVersion(0)) { try TrustDocument.decode(try TrustFixture.editSigned(document) { $0["version"] = .integer(0) }) }
        #expect(throws: TrustError.invalidExpiry("2027-01-01")) { try TrustDocument.decode(try TrustFixture.editSigned(document) { $0["expires"] = .string("2027-01-01") }) }
        #expect(throws: TrustError.malformed("signed.version must be an integer")) {
            try TrustDocument.decode(try TrustFixture.editSigned(document) { $0["version"] = .string("1") })
        }
        #expect(throws: TrustError.invalidVersion(0)) {
            try TrustDocument(version: 0, expires: TrustFixture.later, roles: [
                .root: RoleDefinition(keys: [keys.roots[0].verifyingKey], threshold: 1),
                .catalog: RoleDefinition(keys: [keys.roots[0].verifyingKey], threshold: 1),
                .bundles: RoleDefinition(keys: [keys.roots[0].verifyingKey], threshold: 1),
            ])
        }
    }

    @Test("a document that is not in canonical form is refused, whatever it holds")
    func canonicalOnly() throws {
        let document = try keys.document(version: 1, roots: [keys.roots[0]], signedBy: [keys.roots[0]])
        var text = String(decoding: document.canonicalBytes, as: UTF8.self)
        #expect(throws: TrustError.notCanonical) { try TrustDocument.decode(Array((text + "\n").utf8)) }
        #expect(throws: TrustError.notCanonical) { try TrustDocument.decode(Array(text.replacingOccurrences(of: #","signed":"#, with: #", "signed":"#).utf8)) }
        text = text.replacingOccurrences(of: #""version":1"#, with: #""version":1.0"#)
        #expect(throws: TrustError.notCanonical) { try TrustDocument.decode(Array(text.utf8)) }
        #expect(throws: TrustError.malformed("not JSON that canonical JSON can hold (no null, integers only)")) { try TrustDocument.decode(Array("{".utf8)) }
    }

    @Test("a document above 64 KiB is refused before parsing (endless data)")
    func oversized() throws {
        #expect(TrustDocument.maxBytes == 65_536)
        // Not JSON at all: a parse would say malformed, so tooLarge proves the size came first.
        let garbage = [UInt8](repeating: 0x7B, count: TrustDocument.maxBytes + 1)
        #expect(throws: TrustError.tooLarge(65_537, limit: 65_536)) { try TrustDocument.decode(garbage) }
        #expect(throws: TrustError.malformed("not JSON that canonical JSON can hold (no null, integers only)")) {
            try TrustDocument.decode(Array(garbage.prefix(TrustDocument.maxBytes)))
        }
    }

    @Test("malformed signatures are refused; signing again by a key is idempotent and keeps one signature per key, sorted")
    func signatures() throws {
        let document = try keys.document(version: 1, roots: Array(keys.roots[0..<3]), rootThreshold: 2, signedBy: [keys.roots[2], keys.roots[0]])
        #expect(try document.signed(by: keys.roots[0]) == document)
        #expect(try document.signed(by: [keys.roots[2], keys.roots[0], keys.roots[2]]) == document)
        #expect(document.signatures.count == 2)
        #expect(document.signatures.map(\.keyID) == document.signatures.map(\.keyID).sorted())
        #expect(document.isSigned(by: keys.roots[0].verifyingKey) && !document.isSigned(by: keys.roots[1].verifyingKey))
        let short = try TrustFixture.edit(document) { top in
            top["signatures"] = .array([.object(["keyid": .string(keys.roots[0].keyID.hex), "sig": .string("AAAA")])])
        }
        #expect(throws: TrustError.malformedSignature("signatures[0].sig")) { try TrustDocument.decode(short) }
        // Duplicates and any order are read as written (they count once: TrustSignatureTests); writers never make them.
        let repeated = try TrustFixture.edit(document) { top in
            top["signatures"] = .array((document.signatures + document.signatures).reversed().map(\.canonicalJSON))
        }
        #expect(try TrustDocument.decode(repeated).signatures.count == 4)
    }

    @Test("root tally: own roots and the previous version's, have and need as trust update reports them")
    func rootTally() throws {
        let v1 = try keys.document(version: 1, roots: Array(keys.roots[0..<2]), rootThreshold: 2, signedBy: Array(keys.roots[0..<2]))
        let unsigned = try keys.document(version: 2, roots: Array(keys.roots[1..<3]), rootThreshold: 2, signedBy: [])
        var tally = unsigned.rootTally(previous: v1.signers(.root))
        #expect((tally.have, tally.need, tally.isComplete) == (0, 4, false))
        tally = try unsigned.signed(by: keys.roots[1]).rootTally(previous: v1.signers(.root))
        #expect((tally.have, tally.need, tally.isComplete) == (2, 4, false))  // roots[1] is in both
        tally = try unsigned.signed(by: Array(keys.roots[0..<3])).rootTally(previous: v1.signers(.root))
        #expect((tally.have, tally.need, tally.isComplete) == (4, 4, true))
        tally = v1.rootTally(previous: nil)
        #expect((tally.have, tally.need, tally.isComplete) == (2, 2, true))
    }
}
