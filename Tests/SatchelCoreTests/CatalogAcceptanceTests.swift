import Foundation
import SatchelCore
import Testing

/// A CDN as a table of paths: what a device fetching through ``CatalogAcceptance`` gets for each, and the paths it
/// asked for, in order. A path the table lacks answers 404.
struct FakeCDN {
    var files: [String: FetchedDocument] = [:]
    private(set) var asked: [String] = []

    subscript(path: String) -> FetchedDocument {
        mutating get {
            asked.append(path)
            return files[path] ?? .absent(status: 404)
        }
    }

    /// Drives the machine over the catalog at `catalog.json`, as `CatalogClient` does, without a network.
    mutating func accept(_ trust: TrustState, floor: SerialFloor? = nil, now: Timestamp = TrustFixture.now) -> Result<AcceptedCatalog, CatalogRefusal> {
        do {
            guard let bytes = self["catalog.json"].bytes else { return .failure(.malformed(.malformed("no catalog"))) }
            var acceptance = try CatalogAcceptance(catalog: bytes, trust: trust, floor: floor)
            while true {
                switch acceptance.next {
                case .trustDocument(let version): try acceptance.receiveTrustDocument(self["trust/\(version).json"])
                case .signatures(let keyed): acceptance.receiveSignatures(legacy: self["catalog.json.sig"], keyed: keyed ? self["catalog.json.sigs"] : nil)
                case .decide: return .success(try acceptance.decide(at: now))
                }
            }
        } catch {
            return .failure(error)
        }
    }

    /// Publishes `catalog` with its legacy signature by `legacy` and keyed signatures by `keyed`.
    mutating func publish(_ catalog: Catalog, legacy: SigningKey?, keyed: [SigningKey] = []) throws {
        let bytes = catalog.canonicalBytes
        files["catalog.json"] = .present(bytes)
        files["catalog.json.sig"] = try legacy.map { .present(Array(try $0.signature(for: bytes).base64.utf8)) } ?? .absent(status: 404)
        if keyed.isEmpty {
            files["catalog.json.sigs"] = .absent(status: 404)
        } else {
            var file = SignatureFile(for: bytes)
            for key in keyed { file = try file.adding(key, over: bytes) }
            files["catalog.json.sigs"] = .present(file.canonicalBytes)
        }
    }

    mutating func publish(_ documents: [TrustDocument]) {
        for document in documents { files["trust/\(document.version).json"] = .present(document.canonicalBytes) }
    }
}

/// The one acceptance path, table-driven: every scenario of tools/e2e-trust and the plain-key cases through the pure
/// machine, without a network; then the scenarios where the mode should not matter, in both modes.
@Suite("CatalogAcceptance: one pure path for catalogs in both modes")
struct CatalogAcceptanceTests {
    let keys = TrustFixture()
    var rootKey: SigningKey { keys.roots[0] }
    var catalogKey: SigningKey { keys.catalog[0] }

    func catalog(serial: Int64 = 100, trust: Int64? = 1, expires: Timestamp = TrustFixture.later) throws -> Catalog {
        try Catalog(expires: expires, packages: [], serial: serial, trust: trust)
    }

    func v1() throws -> TrustDocument { try keys.document(version: 1, roots: [rootKey], catalog: [catalogKey], signedBy: [rootKey]) }
    var anchor: TrustAnchor { try! TrustAnchor(rootKeys: [rootKey.verifyingKey]) }
    var roots: TrustState { TrustState(anchor: anchor) }
    var plain: TrustState { TrustState(anchor: nil, plainKeys: [catalogKey.verifyingKey]) }

    /// A device under roots that already holds version 1 (so both modes start from the same keys).
    func holdingV1() throws -> TrustState {
        var state = roots
        try state.accept(try v1())
        return state
    }

    // MARK: tools/e2e-trust, scenario by scenario

    struct Scenario: CustomStringConvertible, Sendable {
        let name: String
        /// Builds the CDN and the device's state; returns the state and its floor.
        let setup: @Sendable (CatalogAcceptanceTests, inout FakeCDN) throws -> (TrustState, SerialFloor?)
        /// nil: accepted; else the check the refusal names (``TrustRefusal/check`` or the ``CatalogRefusal/Kind``).
        let refused: String?
        /// What the device asked for, when the scenario is about it.
        let asked: [String]?
        var description: String { name }
    }

    static let scenarios: [Scenario] = [
        Scenario(name: "a device shipping version 1's roots walks to trust version 1 and accepts the catalog", setup: { t, cdn in
            cdn.publish([try t.v1()])
            try cdn.publish(try t.catalog(), legacy: t.catalogKey)
            return (t.roots, nil)
        }, refused: nil, asked: ["catalog.json", "trust/1.json", "catalog.json.sig", "catalog.json.sigs"]),
        Scenario(name: "a catalog naming an older trust version than held (mix-and-match)", setup: { t, cdn in
            let v2 = try t.keys.document(version: 2, roots: [t.rootKey], catalog: [t.catalogKey], signedBy: [t.rootKey])
            var state = try t.holdingV1()
            try state.accept(v2)
            try cdn.publish(try t.catalog(trust: 1), legacy: t.catalogKey)
            return (state, nil)
        }, refused: "older-trust-version", asked: ["catalog.json"]),
        Scenario(name: "a trust document rolled back (trust/3.json holding version 2)", setup: { t, cdn in
            let v2 = try t.keys.document(version: 2, roots: [t.rootKey], catalog: [t.catalogKey], signedBy: [t.rootKey])
            var state = try t.holdingV1()
            try state.accept(v2)
            cdn.files["trust/3.json"] = .present(v2.canonicalBytes)
            try cdn.publish(try t.catalog(trust: 3), legacy: t.catalogKey)
            return (state, nil)
        }, refused: "rollback", asked: nil),
        Scenario(name: "an expired newest trust document (indefinite freeze)", setup: { t, cdn in
            let v2 = try t.keys.document(version: 2, expires: Timestamp(secondsSinceEpoch: 1_700_000_000), roots: [t.rootKey], catalog: [t.catalogKey], signedBy: [t.rootKey])
            cdn.publish([try t.v1(), v2])
            try cdn.publish(try t.catalog(trust: 2), legacy: t.catalogKey)
            return (t.roots, nil)
        }, refused: "expired", asked: nil),
        Scenario(name: "an endless trust document is refused at 64 KiB before parsing", setup: { t, cdn in
            cdn.files["trust/1.json"] = .present([UInt8](repeating: 0x20, count: TrustDocument.maxBytes + 1))
            try cdn.publish(try t.catalog(), legacy: t.catalogKey)
            return (t.roots, nil)
        }, refused: "document", asked: nil),
        Scenario(name: "a catalog signed by a key no trust version names", setup: { t, cdn in
            cdn.publish([try t.v1()])
            try cdn.publish(try t.catalog(), legacy: nil, keyed: [t.keys.stranger])
            return (t.roots, nil)
        }, refused: "key-not-trusted", asked: nil),
        Scenario(name: "a catalog key a trust version took away (revoked) signs alone", setup: { t, cdn in
            let v2 = try t.keys.document(version: 2, roots: [t.rootKey], catalog: [t.keys.catalog[1]], signedBy: [t.rootKey])
            cdn.publish([try t.v1(), v2])
            try cdn.publish(try t.catalog(trust: 2), legacy: nil, keyed: [t.catalogKey])
            return (t.roots, nil)
        }, refused: "revoked-key", asked: nil),
        Scenario(name: "fast-forward: a leaked catalog key's huge serial sets the floor; honest catalogs are then replays", setup: { t, cdn in
            try cdn.publish(try t.catalog(serial: 400), legacy: t.catalogKey)
            return (try t.holdingV1(), SerialFloor(serial: 1_000_000_000_000, trustVersion: 1))
        }, refused: "replayed", asked: nil),
        Scenario(name: "... until a trust version rotates the leaked key out: the honest catalog is accepted again", setup: { t, cdn in
            let v2 = try t.keys.document(version: 2, roots: [t.rootKey], catalog: [t.keys.catalog[1]], signedBy: [t.rootKey])
            cdn.publish([v2])
            try cdn.publish(try t.catalog(serial: 401, trust: 2), legacy: t.keys.catalog[1])
            return (try t.holdingV1(), SerialFloor(serial: 1_000_000_000_000, trustVersion: 1))
        }, refused: nil, asked: ["catalog.json", "trust/2.json", "catalog.json.sig", "catalog.json.sigs"]),
        Scenario(name: "a root rotation over three versions is walked one at a time (2, 3, 4), never past the one named", setup: { t, cdn in
            var documents = [try t.v1()]
            for version in 2...5 {
                let own = t.keys.roots[version - 1]
                let previous = t.keys.roots[version - 2]
                documents.append(try t.keys.document(version: Int64(version), roots: [own], catalog: [t.catalogKey], signedBy: [previous, own]))
            }
            cdn.publish(documents)
            try cdn.publish(try t.catalog(trust: 4), legacy: t.catalogKey)
            return (try t.holdingV1(), nil)
        }, refused: nil, asked: ["catalog.json", "trust/2.json", "trust/3.json", "trust/4.json", "catalog.json.sig", "catalog.json.sigs"]),
        Scenario(name: "a version signed by its own new roots only (not the previous roots) breaks the chain", setup: { t, cdn in
            let v2 = try t.keys.document(version: 2, roots: [t.keys.roots[1]], catalog: [t.catalogKey], signedBy: [t.keys.roots[1]])
            cdn.publish([v2])
            try cdn.publish(try t.catalog(trust: 2), legacy: t.catalogKey)
            return (try t.holdingV1(), nil)
        }, refused: "key-not-trusted", asked: nil),
        Scenario(name: "the trust version a catalog names is not published", setup: { t, cdn in
            try cdn.publish(try t.catalog(trust: 2), legacy: t.catalogKey)
            return (try t.holdingV1(), nil)
        }, refused: "trust-document-missing", asked: ["catalog.json", "trust/2.json"]),
        Scenario(name: "roots and no plain key: a catalog naming no trust version", setup: { t, cdn in
            try cdn.publish(try t.catalog(trust: nil), legacy: t.catalogKey)
            return (t.roots, nil)
        }, refused: "no-trust-version", asked: ["catalog.json"]),
        Scenario(name: "the migration: roots and the plain key accept a catalog naming none, against the plain key", setup: { t, cdn in
            try cdn.publish(try t.catalog(trust: nil), legacy: t.catalogKey)
            return (TrustState(anchor: t.anchor, plainKeys: [t.catalogKey.verifyingKey]), nil)
        }, refused: nil, asked: ["catalog.json", "catalog.json.sig", "catalog.json.sigs"]),
        Scenario(name: "the migration: plain keys read a release with trust, never asking for trust/ or .sigs", setup: { t, cdn in
            cdn.publish([try t.v1()])
            try cdn.publish(try t.catalog(trust: 1), legacy: t.catalogKey, keyed: [t.catalogKey])
            return (t.plain, nil)
        }, refused: nil, asked: ["catalog.json", "catalog.json.sig"]),
        Scenario(name: "plain keys: keyed signatures alone do not count (their rule is catalog.json.sig)", setup: { t, cdn in
            try cdn.publish(try t.catalog(trust: nil), legacy: nil, keyed: [t.catalogKey])
            return (t.plain, nil)
        }, refused: "unsigned", asked: ["catalog.json", "catalog.json.sig"]),
        Scenario(name: "no key at all: nothing is asked for and nothing checked", setup: { t, cdn in
            try cdn.publish(try t.catalog(trust: nil), legacy: nil)
            return (TrustState(anchor: nil), nil)
        }, refused: nil, asked: ["catalog.json"]),
        Scenario(name: "a .sigs that is not a signature file", setup: { t, cdn in
            cdn.publish([try t.v1()])
            try cdn.publish(try t.catalog(), legacy: nil)
            cdn.files["catalog.json.sigs"] = .present(Array("{}".utf8))
            return (t.roots, nil)
        }, refused: "signature-file", asked: nil),
        Scenario(name: "a catalog that is not one", setup: { t, cdn in
            cdn.files["catalog.json"] = .present(Array("{\"schema\":2}".utf8))
            return (t.roots, nil)
        }, refused: "malformed", asked: ["catalog.json"]),
    ]

    /// The word a result is compared by: nil when accepted.
    static func word(_ result: Result<AcceptedCatalog, CatalogRefusal>) -> String? {
        guard case .failure(let refusal) = result else { return nil }
        switch refusal {
        case .trust(let trust, _): return trust.check
        case .signatures(let trust, _): return trust.check
        default: return refusal.kind.rawValue
        }
    }

    @Test("every scenario of tools/e2e-trust and the plain-key cases, through the pure machine", arguments: scenarios)
    func scenario(_ scenario: Scenario) throws {
        var cdn = FakeCDN()
        let (state, floor) = try scenario.setup(self, &cdn)
        let result = cdn.accept(state, floor: floor)
        #expect(Self.word(result) == scenario.refused, "\(result)")
        if let asked = scenario.asked { #expect(cdn.asked == asked) }
        // Accepted: what is kept chains from what the device held, and the floor is the catalog's serial.
        if case .success(let accepted) = result {
            #expect(accepted.floor.serial == accepted.catalog.serial)
            #expect(accepted.newDocuments.map(\.version) == Array(state.nextVersion..<(accepted.trust.version + 1)).filter { _ in state.anchor != nil })
        }
    }

    @Test("fast-forward: the floor set under the leaked key's version resets once a version drops that key, and the new floor records the version")
    func fastForwardFloor() throws {
        var cdn = FakeCDN()
        let v2 = try keys.document(version: 2, roots: [rootKey], catalog: [keys.catalog[1]], signedBy: [rootKey])
        cdn.publish([v2])
        try cdn.publish(try catalog(serial: 401, trust: 2), legacy: keys.catalog[1])
        let accepted = try cdn.accept(try holdingV1(), floor: SerialFloor(serial: 1_000_000_000_000, trustVersion: 1)).get()
        #expect(accepted.floor == SerialFloor(serial: 401, trustVersion: 2) && accepted.droppedCatalogKey && accepted.newDocuments.map(\.version) == [2])
        // A floor set under the plain key (no trust version), on a device with roots and that key: v2 no longer gives
        // it the catalog role, so that floor resets as well; on a device with no plain key it binds.
        var withPlain = TrustState(anchor: anchor, plainKeys: [catalogKey.verifyingKey])
        try withPlain.accept(try v1())
        #expect((try? cdn.accept(withPlain, floor: SerialFloor(serial: 1_000_000_000_000, trustVersion: nil)).get()) != nil)
        #expect(Self.word(cdn.accept(try holdingV1(), floor: SerialFloor(serial: 1_000_000_000_000, trustVersion: nil))) == "replayed")
        // Under plain keys a floor always binds.
        var plainCDN = FakeCDN()
        try plainCDN.publish(try catalog(serial: 401, trust: nil), legacy: catalogKey)
        #expect(Self.word(plainCDN.accept(plain, floor: SerialFloor(serial: 500, trustVersion: nil))) == "replayed")
    }

    // MARK: Both modes, the same outcome

    /// The two starting states that trust the same catalog key: plain keys, and roots holding version 1 whose catalog
    /// role is that key (threshold 1).
    func modes() throws -> [(name: String, state: TrustState)] { [("plain keys", plain), ("roots", try holdingV1())] }

    struct Equivalence: CustomStringConvertible, Sendable {
        let name: String
        /// Edits the CDN after the honest catalog (serial 100, signed by the catalog key) is published.
        let change: @Sendable (CatalogAcceptanceTests, inout FakeCDN) throws -> Void
        let floor: SerialFloor?
        let now: Timestamp
        /// nil: accepted; else the refusal's kind.
        let kind: CatalogRefusal.Kind?
        /// Whether a refetch may help (a CDN mid-refresh).
        let stale: Bool
        var description: String { name }
    }

    static let equivalences: [Equivalence] = [
        Equivalence(name: "the signature file missing as 403", change: { _, cdn in cdn.files["catalog.json.sig"] = .absent(status: 403) }, floor: nil, now: TrustFixture.now, kind: .signatures, stale: false),
        Equivalence(name: "the signature file missing as 404", change: { _, cdn in cdn.files["catalog.json.sig"] = .absent(status: 404) }, floor: nil, now: TrustFixture.now, kind: .signatures, stale: false),
        Equivalence(name: "the signature file missing as 410", change: { _, cdn in cdn.files["catalog.json.sig"] = .absent(status: 410) }, floor: nil, now: TrustFixture.now, kind: .signatures, stale: false),
        Equivalence(name: "a .sig made for other bytes (a CDN mid-refresh)", change: { t, cdn in
            cdn.files["catalog.json.sig"] = .present(Array(try t.catalogKey.signature(for: try t.catalog(serial: 99).canonicalBytes).base64.utf8))
        }, floor: nil, now: TrustFixture.now, kind: .signatures, stale: true),
        Equivalence(name: "expired", change: { t, cdn in
            try cdn.publish(try t.catalog(serial: 100, trust: 1, expires: Timestamp(secondsSinceEpoch: 1_700_000_000)), legacy: t.catalogKey)
        }, floor: nil, now: TrustFixture.now, kind: .expired, stale: false),
        Equivalence(name: "a replayed serial", change: { _, _ in }, floor: SerialFloor(serial: 101, trustVersion: nil), now: TrustFixture.now, kind: .replayed, stale: false),
        Equivalence(name: "the serial already held (not a replay)", change: { _, _ in }, floor: SerialFloor(serial: 100, trustVersion: nil), now: TrustFixture.now, kind: nil, stale: false),
        Equivalence(name: "an unknown key", change: { t, cdn in
            let bytes = cdn.files["catalog.json"]!.bytes!
            cdn.files["catalog.json.sig"] = .present(Array(try t.keys.stranger.signature(for: bytes).base64.utf8))
        }, floor: nil, now: TrustFixture.now, kind: .signatures, stale: true),
        Equivalence(name: "a .sig that is not a signature", change: { _, cdn in cdn.files["catalog.json.sig"] = .present(Array("not base64".utf8)) }, floor: nil, now: TrustFixture.now, kind: .signatures, stale: true),
        Equivalence(name: "honest", change: { _, _ in }, floor: nil, now: TrustFixture.now, kind: nil, stale: false),
    ]

    @Test("where the mode should not matter, plain keys and roots agree: accepted or refused, the refusal's kind, the state kept", arguments: equivalences)
    func bothModes(_ equivalence: Equivalence) throws {
        var outcomes: [String: (kind: CatalogRefusal.Kind?, stale: Bool, floor: SerialFloor?, kept: [Int64])] = [:]
        for (name, state) in try modes() {
            var cdn = FakeCDN()
            // Both modes name version 1: plain keys ignore it, roots hold it.
            try cdn.publish(try catalog(serial: 100, trust: 1), legacy: catalogKey)
            try equivalence.change(self, &cdn)
            switch cdn.accept(state, floor: equivalence.floor, now: equivalence.now) {
            case .success(let accepted): outcomes[name] = (nil, false, SerialFloor(serial: accepted.floor.serial, trustVersion: nil), accepted.newDocuments.map(\.version))
            case .failure(let refusal): outcomes[name] = (refusal.kind, refusal.mayBeStale, nil, [])
            }
        }
        let plain = try #require(outcomes["plain keys"]), roots = try #require(outcomes["roots"])
        #expect(plain.kind == equivalence.kind && roots.kind == equivalence.kind, "plain \(plain), roots \(roots)")
        #expect(plain.stale == equivalence.stale && roots.stale == equivalence.stale, "plain \(plain), roots \(roots)")
        #expect(plain.floor == roots.floor && plain.kept == roots.kept)
    }

    @Test("a .sig for other bytes, then the right one: the first answer may be stale, the second is accepted, in both modes")
    func staleThenRight() throws {
        for (_, state) in try modes() {
            var cdn = FakeCDN()
            try cdn.publish(try catalog(serial: 100, trust: 1), legacy: catalogKey)
            let right = cdn.files["catalog.json.sig"]
            cdn.files["catalog.json.sig"] = .present(Array(try catalogKey.signature(for: try catalog(serial: 99).canonicalBytes).base64.utf8))
            guard case .failure(let first) = cdn.accept(state) else { Issue.record("accepted a .sig for other bytes"); continue }
            #expect(first.mayBeStale)
            cdn.files["catalog.json.sig"] = right
            #expect(try cdn.accept(state).get().floor.serial == 100)
        }
    }

    @Test("plain keys word a missing signature as unsigned, roots as the threshold: the same kind")
    func wording() throws {
        for (name, state) in try modes() {
            var cdn = FakeCDN()
            try cdn.publish(try catalog(serial: 100, trust: 1), legacy: nil)
            guard case .failure(.signatures(let refusal, _)) = cdn.accept(state) else { Issue.record("\(name): accepted unsigned"); continue }
            #expect(refusal.check == (name == "plain keys" ? "unsigned" : "threshold"))
        }
    }
}
