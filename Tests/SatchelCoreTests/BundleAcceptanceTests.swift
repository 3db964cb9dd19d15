import SatchelCore
import Testing

/// The one rule for a bundle's signatures (``TrustState/judgeBundle(_:legacy:keyed:as:)``), for installs, built-ins and
/// `satchel check`, under plain keys and under roots.
@Suite("BundleAcceptance: one rule for a bundle's signatures")
struct BundleAcceptanceTests {
    let keys = TrustFixture()
    let manifest = Array(#"{"schema":1}"#.utf8)

    var plain: TrustState { TrustState(anchor: nil, plainKeys: [keys.bundles[0].verifyingKey]) }

    /// Roots holding version 1 (bundles role: bundles[0] and bundles[1], threshold 2) and version 2, which replaces
    /// bundles[0] by bundles[2] (bundles[0] revoked).
    func roots(upTo version: Int64 = 1) throws -> TrustState {
        let root = keys.roots[0]
        var state = TrustState(anchor: try TrustAnchor(rootKeys: [root.verifyingKey]))
        try state.accept(try keys.document(version: 1, roots: [root], bundles: [keys.bundles[0], keys.bundles[1]], bundleThreshold: 2, signedBy: [root]))
        if version >= 2 {
            try state.accept(try keys.document(version: 2, roots: [root], bundles: [keys.bundles[1], keys.bundles[2]], bundleThreshold: 2, signedBy: [root]))
        }
        return state
    }

    func legacy(_ key: SigningKey) throws -> Signature { try key.signature(for: manifest) }
    func keyed(_ key: SigningKey) throws -> KeyedSignature { try KeyedSignature(signing: manifest, with: key) }

    @Test("plain keys: none trusted, nothing checked; satchel.sig by one of them passes; none is unsigned; another key's fails")
    func plainRule() throws {
        #expect(try TrustState(anchor: nil).judgeBundle(manifest, legacy: nil, keyed: [], as: .install).checked == false)
        #expect(try plain.judgeBundle(manifest, legacy: try legacy(keys.bundles[0]), keyed: [], as: .install).checked)
        #expect { try plain.judgeBundle(manifest, legacy: nil, keyed: [], as: .install) } throws: { ($0 as? TrustRefusal)?.check == "unsigned" }
        #expect { try plain.judgeBundle(manifest, legacy: try legacy(keys.stranger), keyed: [], as: .install) } throws: { ($0 as? TrustRefusal)?.check == "threshold" }
        // Over other bytes: a mismatch, not unsigned.
        #expect { try plain.judgeBundle(manifest + [0x20], legacy: try legacy(keys.bundles[0]), keyed: [], as: .install) } throws: { ($0 as? TrustRefusal)?.check == "threshold" }
        // Keyed signatures mean nothing under plain keys' rule, even by a trusted key.
        #expect { try plain.judgeBundle(manifest, legacy: nil, keyed: [try keyed(keys.bundles[0])], as: .install) } throws: { ($0 as? TrustRefusal)?.check == "unsigned" }
    }

    @Test("roots: a threshold of the bundles role, satchel.sig counting as one; the keyed signatures that counted are kept")
    func threshold() throws {
        let state = try roots()
        #expect { try state.judgeBundle(manifest, legacy: try legacy(keys.bundles[0]), keyed: [], as: .install) } throws: { ($0 as? TrustRefusal)?.check == "threshold" }
        let judged = try state.judgeBundle(manifest, legacy: try legacy(keys.bundles[0]), keyed: [try keyed(keys.bundles[1]), try keyed(keys.stranger)], as: .install)
        #expect(judged.tally?.counted.count == 2 && judged.kept?.signatures.map(\.keyID) == [keys.bundles[1].verifyingKey.keyID])
        // A catalog key alone never makes a bundle installable.
        #expect { try state.judgeBundle(manifest, legacy: try legacy(keys.catalog[0]), keyed: [try keyed(keys.catalog[0])], as: .install) } throws: { ($0 as? TrustRefusal)?.check == "key-not-trusted" }
    }

    @Test("a built-in counts satchel.sig by any key the bundles role has or ever had; roots with nothing known check nothing")
    func builtIn() throws {
        let state = try roots(upTo: 2)
        #expect(try state.judgeBundle(manifest, legacy: try legacy(keys.bundles[0]), keyed: [], as: .builtIn).checked)  // revoked, still counts
        #expect { try state.judgeBundle(manifest, legacy: try legacy(keys.stranger), keyed: [], as: .builtIn) } throws: { _ in true }
        let nothingKnown = TrustState(anchor: try TrustAnchor(rootKeys: [keys.roots[0].verifyingKey]))
        #expect(try nothingKnown.judgeBundle(manifest, legacy: nil, keyed: [], as: .builtIn).checked == false)
    }

    @Test("an installed version needs one current key of the role (the rules of its day), and one only revoked keys vouch for is named so")
    func installed() throws {
        let state = try roots(upTo: 2)
        // Threshold 2 now, one current signature: accepted under the rules of its day.
        #expect(try state.judgeBundle(manifest, legacy: nil, keyed: [try keyed(keys.bundles[1])], as: .installed).checked)
        do {
            try state.judgeBundle(manifest, legacy: try legacy(keys.bundles[0]), keyed: [], as: .installed)
            Issue.record("a version only a revoked key signed passed")
        } catch let error as TrustRefusal {
            #expect(error.check == "revoked-key" && error.tally?.onlyRevoked == true)
        }
        // Roots, no version held, no plain key: nothing to check with.
        #expect(try TrustState(anchor: try TrustAnchor(rootKeys: [keys.roots[0].verifyingKey])).judgeBundle(manifest, legacy: nil, keyed: [], as: .installed).checked == false)
    }
}
