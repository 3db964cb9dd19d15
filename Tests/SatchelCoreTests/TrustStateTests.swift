import Foundation
import SatchelCore
import Testing

@Suite("The device's trust state: the rotation walk, rollback, mix-and-match, expiry, revocation, fast-forward")
struct TrustStateTests {
    let keys = TrustFixture()

    /// Four versions whose root keys are replaced one at a time, each root role 2 of 3:
    /// v1 {r0 r1 r2}, v2 {r1 r2 r3}, v3 {r2 r3 r4}, v4 {r3 r4 r5}; each signed by two of the previous roots and two of
    /// its own. The catalog key c0 is replaced by c1 in v3.
    func chain() throws -> [TrustDocument] {
        var documents: [TrustDocument] = []
        for version in 1...4 {
            let roots = Array(keys.roots[(version - 1)..<(version + 2)])
            let previous = version == 1 ? roots : Array(keys.roots[(version - 2)..<(version + 1)])
            let signers = Array(Set(previous.prefix(2).map(\.keyID) + roots.suffix(2).map(\.keyID)))
            let all = keys.roots.filter { signers.contains($0.keyID) }
            documents.append(try keys.document(
                version: Int64(version), roots: roots, rootThreshold: 2, catalog: [keys.catalog[version >= 3 ? 1 : 0]], signedBy: all))
        }
        return documents
    }

    func anchor() throws -> TrustAnchor { try TrustAnchor(rootKeys: keys.roots[0..<3].map(\.verifyingKey), threshold: 2) }

    /// Drives a walk to `named` with `documents` as the CDN, recording what was fetched.
    func drive(_ state: TrustState, to named: Int64?, cdn: [TrustDocument], now: Timestamp = TrustFixture.now) throws -> (TrustState, [Int64], TrustWalk) {
        var walk = try state.walk(toCatalogNaming: named)
        var fetched: [Int64] = []
        while case .fetch(let version) = walk.next {
            fetched.append(version)
            guard let document = cdn.first(where: { $0.version == version }) else { throw CancellationError() }  // a 404
            try walk.receive(document.canonicalBytes)
        }
        return (try walk.finish(at: now), fetched, walk)
    }

    @Test("a device shipping version 1's roots walks to the version a catalog names, one at a time, and never past it")
    func rotationOverThreeVersions() throws {
        let documents = try chain()
        let state = TrustState(anchor: try anchor())
        #expect(try state.versionsToFetch(forCatalogNaming: 4) == 1...4)
        let (reached, fetched, walk) = try drive(state, to: 4, cdn: documents)
        #expect(fetched == [1, 2, 3, 4])
        #expect(reached.version == 4 && walk.accepted == documents)
        #expect(walk.next == .complete)
        // The roots now are r3 r4 r5: none of version 1's.
        #expect(Set(reached.signers(for: .root).keys.keys) == Set(keys.roots[3..<6].map(\.keyID)))
        // A catalog naming 2 on a CDN that also has 3 and 4: the walk stops at 2.
        let (partial, probed, _) = try drive(state, to: 2, cdn: documents)
        #expect(probed == [1, 2] && partial.version == 2)
        // Then naming 4: from 3 on.
        let (rest, more, _) = try drive(partial, to: 4, cdn: documents)
        #expect(more == [3, 4] && rest.version == 4)
        #expect(try rest.versionsToFetch(forCatalogNaming: 4) == nil)
    }

    @Test("a version signed by its own roots only, or by the previous roots only, is refused (threshold)")
    func bothThresholds() throws {
        let documents = try chain()
        var state = TrustState(anchor: try anchor())
        try state.accept(documents[0])
        // v2 {r1 r2 r3} signed by r3 alone and then by r1 r2 r3: r3 is not a v1 root, so v1's threshold needs r1 and r2.
        let ownOnly = try keys.document(version: 2, roots: Array(keys.roots[1..<4]), rootThreshold: 2, signedBy: [keys.roots[3], keys.roots[2]])
        #expect(throws: TrustRefusal.self) { try state.accept(ownOnly) }
        // Short of v1's threshold; the refusal names the signer v1 does not know, and the count.
        do { try state.accept(ownOnly) } catch {
            #expect(error.check == "key-not-trusted" && "\(error)".hasPrefix("key not trusted: \(keys.roots[3].keyID) is not a key of the root role; root role: 1 of 2"), "\(error)")
        }
        // Signed by two v1 roots, of which only one is a v2 root.
        let previousOnly = try keys.document(version: 2, roots: Array(keys.roots[3..<6]), rootThreshold: 2, signedBy: [keys.roots[0], keys.roots[1], keys.roots[3]])
        do {
            try state.accept(previousOnly)
            Issue.record("accepted a version short of its own threshold")
        } catch {
            #expect(error.check == "threshold" || error.check == "key-not-trusted")
        }
        #expect(state.version == 1)
        try state.accept(documents[1])
        #expect(state.version == 2)
    }

    @Test("rollback: a document not newer than the one held is refused, and a skipped version too")
    func rollback() throws {
        let documents = try chain()
        var state = TrustState(anchor: try anchor())
        for document in documents.prefix(3) { try state.accept(document) }
        #expect(throws: TrustRefusal.rollback(version: 2, held: 3)) { try state.accept(documents[1]) }
        #expect(throws: TrustRefusal.rollback(version: 3, held: 3)) { try state.accept(documents[2]) }
        // The CDN answers trust/4.json with version 2: refused as a rollback, nothing changes.
        var walk = try state.walk(toCatalogNaming: 4)
        #expect(walk.next == .fetch(4))
        #expect(throws: TrustRefusal.rollback(version: 2, held: 3)) { try walk.receive(documents[1].canonicalBytes) }
        #expect(walk.state.version == 3 && walk.accepted.isEmpty)
        // A version past the next one is refused (versions come one at a time).
        var fresh = TrustState(anchor: try anchor())
        #expect(throws: TrustRefusal.unexpectedVersion(expected: 1, found: 2)) { try fresh.accept(documents[1]) }
    }

    @Test("mix-and-match: a catalog naming an older trust version than held, or none once one is held, is refused")
    func mixAndMatch() throws {
        let documents = try chain()
        var state = TrustState(anchor: try anchor())
        for document in documents.prefix(3) { try state.accept(document) }
        #expect(throws: TrustRefusal.olderTrustVersion(named: 2, held: 3)) { try state.walk(toCatalogNaming: 2) }
        #expect(throws: TrustRefusal.noTrustVersion(held: 3)) { try state.walk(toCatalogNaming: nil) }
        #expect(TrustRefusal.olderTrustVersion(named: 2, held: 3).check == "older-trust-version")
        #expect(try state.versionsToFetch(forCatalogNaming: 3) == nil)
    }

    @Test("expiry is checked only on the newest version reached: an expired version 1 shipped in an app is fine")
    func expiryOnlyOnNewest() throws {
        let long = Timestamp(secondsSinceEpoch: 1_600_000_000)  // 2020: long before now
        let v1 = try keys.document(version: 1, expires: long, roots: Array(keys.roots[0..<3]), rootThreshold: 2, signedBy: Array(keys.roots[0..<2]))
        let v2 = try keys.document(version: 2, expires: long, roots: Array(keys.roots[0..<3]), rootThreshold: 2, signedBy: Array(keys.roots[0..<2]))
        let v3 = try keys.document(version: 3, roots: Array(keys.roots[0..<3]), rootThreshold: 2, signedBy: Array(keys.roots[0..<2]))
        // The app ships v1 (expired) and its roots.
        let shipped = TrustState.restore(anchor: TrustAnchor(document: v1), documents: [v1.canonicalBytes])
        #expect(shipped.refused.isEmpty && shipped.state.version == 1)
        // Reaching v3 (fresh) over an expired v2: accepted.
        let (reached, fetched, _) = try drive(shipped.state, to: 3, cdn: [v2, v3])
        #expect(fetched == [2, 3] && reached.version == 3)
        // A catalog naming 2: v2 is then the newest reached, and it has expired (indefinite freeze refused).
        #expect(throws: TrustRefusal.expired(version: 2, expires: long, now: TrustFixture.now)) { try drive(shipped.state, to: 2, cdn: [v2, v3]) }
        // Naming 1, which the device holds: the newest held has expired.
        #expect(throws: TrustRefusal.expired(version: 1, expires: long, now: TrustFixture.now)) { try drive(shipped.state, to: 1, cdn: []) }
        #expect(TrustRefusal.expired(version: 1, expires: long, now: TrustFixture.now).check == "expired")
    }

    @Test("revocation: a key seen in a held version and absent from the newest is revoked, and its signatures are refused by name")
    func revocation() throws {
        let documents = try chain()
        var state = TrustState(anchor: try anchor())
        try state.accept(documents[0])
        try state.accept(documents[1])
        let c0 = keys.catalog[0]
        #expect(!state.isRevoked(c0.keyID) && !state.isRevoked(keys.stranger.keyID))
        try state.accept(documents[2])  // c0 replaced by c1
        #expect(state.isRevoked(c0.keyID) && !state.isRevoked(keys.catalog[1].keyID))
        #expect(!state.isRevoked(keys.stranger.keyID))  // never trusted: not revoked, just unknown
        #expect(state.isRevoked(keys.roots[0].keyID) && state.isRevoked(keys.roots[1].keyID) && !state.isRevoked(keys.roots[2].keyID))
        let catalog = state.signers(for: .catalog)
        #expect(Array(catalog.keys.keys) == [keys.catalog[1].keyID] && Array(catalog.revoked.keys) == [c0.keyID])
        let bytes = Array(#"{"schema":1,"trust":3}"#.utf8)
        let byLeaked = [try KeyedSignature(signing: bytes, with: c0)]
        let tally = catalog.tally(bytes, signatures: byLeaked)
        #expect(throws: TrustRefusal.revokedKey(c0.keyID, tally)) { try catalog.verify(bytes, signatures: byLeaked) }
        // The legacy catalog.json.sig by the leaked key is refused the same way.
        #expect(throws: TrustRefusal.revokedKey(c0.keyID, tally)) { try catalog.verify(bytes, signatures: [], legacy: try c0.signature(for: bytes)) }
        #expect(TrustRefusal.revokedKey(c0.keyID, tally).check == "revoked-key")
        // What satchel check reports of an installed version: signed only by revoked keys.
        #expect(tally.onlyRevoked)
        #expect(try catalog.verify(bytes, signatures: [try KeyedSignature(signing: bytes, with: keys.catalog[1])]).isMet)
    }

    @Test("fast-forward: a version that drops a catalog key says so, and a serial floor set under that key no longer binds")
    func fastForward() throws {
        let documents = try chain()
        let state = TrustState(anchor: try anchor())
        let (atTwo, _, first) = try drive(state, to: 2, cdn: documents)
        #expect(!first.droppedCatalogKey && first.steps.allSatisfy { $0.droppedCatalogKeys.isEmpty })
        let (atThree, _, second) = try drive(atTwo, to: 3, cdn: documents)
        #expect(second.droppedCatalogKey && second.steps.map(\.droppedCatalogKeys) == [[keys.catalog[0].keyID]])
        #expect(second.steps[0].dropped[.root] == [keys.roots[1].keyID])
        // The same answer without the walk's flag (a crash between keeping the trust version and resetting the floor):
        #expect(atThree.catalogKeysDropped(since: 2) && atThree.catalogKeysDropped(since: 1))
        #expect(!atThree.catalogKeysDropped(since: 3))
        let (atFour, _, third) = try drive(atThree, to: 4, cdn: documents)
        #expect(!third.droppedCatalogKey && !atFour.catalogKeysDropped(since: 3) && atFour.catalogKeysDropped(since: 2))
    }

    @Test("plain keys and roots coexist: without roots today's rule; with roots, plain keys until a version is held")
    func plainKeysCoexist() throws {
        let documents = try chain()
        let legacy = keys.catalog[0].verifyingKey
        // No roots: the catalog's trust version means nothing; any plain key signs.
        let plain = TrustState(anchor: nil, plainKeys: [legacy])
        #expect(try plain.versionsToFetch(forCatalogNaming: 3) == nil)
        #expect(plain.signers(for: .catalog) == .plain([legacy]) && plain.signers(for: .bundles) == .plain([legacy]))
        #expect(TrustState(anchor: nil).signers(for: .bundles) == .unchecked)
        var noRoots = TrustState(anchor: nil)
        #expect(throws: TrustRefusal.self) { try noRoots.accept(documents[0]) }
        // Roots and a plain key: a catalog naming no trust version is checked against the plain key...
        let both = TrustState(anchor: try anchor(), plainKeys: [legacy])
        #expect(try both.versionsToFetch(forCatalogNaming: nil) == nil)
        #expect(both.signers(for: .catalog) == .plain([legacy]))
        // ...roots and no plain key: refused, never unchecked.
        let rootsOnly = TrustState(anchor: try anchor())
        #expect(throws: TrustRefusal.noTrustVersion(held: 0)) { try rootsOnly.walk(toCatalogNaming: nil) }
        #expect(rootsOnly.signers(for: .catalog).isChecked && rootsOnly.signers(for: .bundles).keys.isEmpty)
        // Once version 1 is held, only its roles count; the plain key stays trusted where a role holds it (c0 here).
        let (held, _, walk) = try drive(both, to: 1, cdn: documents)
        #expect(held.signers(for: .catalog).keys.keys.contains(legacy.keyID) && !walk.droppedCatalogKey)
        #expect(!held.catalogKeysDropped(since: nil))
        // A first version without the plain key revokes it and resets a floor set under it.
        let stranger = keys.stranger.verifyingKey
        let migrating = TrustState(anchor: try anchor(), plainKeys: [stranger])
        let (moved, _, movedWalk) = try drive(migrating, to: 1, cdn: documents)
        #expect(movedWalk.droppedCatalogKey && moved.catalogKeysDropped(since: nil))
        #expect(moved.isRevoked(stranger.keyID) && moved.signers(for: .bundles).revoked[stranger.keyID] != nil)
    }

    @Test("an oversized trust document is refused before parsing; a damaged one names its version")
    func oversizedAndDamaged() throws {
        var walk = try TrustState(anchor: try anchor()).walk(toCatalogNaming: 1)
        let endless = [UInt8](repeating: 0x20, count: 1 << 20)
        #expect(throws: TrustRefusal.document(version: 1, .tooLarge(1 << 20, limit: TrustDocument.maxBytes))) { try walk.receive(endless) }
        #expect(throws: TrustRefusal.document(version: 1, .malformed("not JSON that canonical JSON can hold (no null, integers only)"))) {
            try walk.receive(Array("<html>404</html>".utf8))
        }
        #expect(walk.next == .fetch(1))
        #expect(throws: TrustRefusal.self) { try walk.finish(at: TrustFixture.now) }
    }

    @Test("restore re-walks stored documents from the anchor, keeps the longest valid chain and says what it left")
    func restore() throws {
        let documents = try chain()
        let all = TrustState.restore(anchor: try anchor(), documents: documents.reversed().map(\.canonicalBytes) + [documents[0].canonicalBytes])
        #expect(all.state.version == 4 && all.refused.isEmpty)
        // v3 with its expiry moved: it reads, and no signature verifies any more.
        let damaged = Array(String(decoding: documents[2].canonicalBytes, as: UTF8.self)
            .replacingOccurrences(of: #""expires":"2033"#, with: #""expires":"2034"#).utf8)
        let broken = TrustState.restore(anchor: try anchor(), documents: [documents[0], documents[1], documents[3]].map(\.canonicalBytes) + [damaged])
        #expect(broken.state.version == 2 && broken.refused.count == 2)
        // A version signed by other roots (a forged v2) stops the chain at v1.
        let forged = try keys.document(version: 2, roots: [keys.stranger], signedBy: [keys.stranger])
        let stopped = TrustState.restore(anchor: try anchor(), documents: [documents[0].canonicalBytes, forged.canonicalBytes])
        #expect(stopped.state.version == 1 && stopped.refused.first?.check == "key-not-trusted")
    }

    @Test("an anchor for a later version: the chain starts there; anchor thresholds are checked")
    func laterAnchor() throws {
        let documents = try chain()
        let anchor = try TrustAnchor(rootKeys: keys.roots[2..<5].map(\.verifyingKey), threshold: 2, version: 3)
        let state = TrustState(anchor: anchor)
        #expect(try state.versionsToFetch(forCatalogNaming: 4) == 3...4)
        #expect(throws: TrustRefusal.olderTrustVersion(named: 2, held: 3)) { try state.walk(toCatalogNaming: 2) }
        let (reached, fetched, _) = try drive(state, to: 4, cdn: documents)
        #expect(fetched == [3, 4] && reached.version == 4)
        #expect(throws: TrustError.invalidThreshold(.root, threshold: 3, keys: 2)) { try TrustAnchor(rootKeys: keys.roots[0..<2].map(\.verifyingKey), threshold: 3) }
        #expect(throws: TrustError.invalidThreshold(.root, threshold: 1, keys: 0)) { try TrustAnchor(rootKeys: [], threshold: 1) }
    }
}
