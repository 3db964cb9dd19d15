import Foundation
import Testing
@testable import SatchelCore

/// The catalog's fields for trust documents (docs/formats.md, "Catalog" and "Trust"): `trust`, the trust version the
/// catalog was signed under, and each entry's `signatures`, the bundle's keyed signatures over its `satchel.json`.
@Suite("Catalog: the trust version and entries' bundle signatures")
struct CatalogTrustTests {
    static let sha = String(repeating: "a", count: 64)
    let keys = (0..<3).map { _ in SigningKey.generate() }

    func entry(_ signatures: [KeyedSignature] = []) throws -> CatalogEntry {
        CatalogEntry(
            id: try PackageID("shop"), version: try SemanticVersion("1.0.0"), url: "shop-1.0.0.zip", size: 10, sha256: Self.sha,
            signatures: signatures)
    }

    @Test("trust and signatures are written canonically (signatures one per key, sorted by key id) and read back")
    func roundTrip() throws {
        let manifest = Array("satchel.json bytes".utf8)
        let signed = try keys.map { try KeyedSignature(signing: manifest, with: $0) }
        // Given twice and out of order: written once per key, sorted by key id.
        let catalog = try Catalog(
            expires: Timestamp(secondsSinceEpoch: 1_800_000_000), packages: [try entry(signed.reversed() + [signed[1]])], trust: 3)
        let sorted = signed.sorted { $0.keyID < $1.keyID }
        #expect(catalog.trust == 3)
        #expect(catalog.packages[0].signatures == sorted)
        let text = String(decoding: catalog.canonicalBytes, as: UTF8.self)
        let list = sorted.map { #"{"keyid":"\#($0.keyID.hex)","sig":"\#($0.signature.base64)"}"# }.joined(separator: ",")
        #expect(text.contains(#""signatures":[\#(list)]"#), "\(text)")
        #expect(text.hasSuffix(#""schema":1,"trust":3}"#), "\(text)")
        let decoded = try Catalog.decode(catalog.canonicalBytes)
        #expect(decoded == catalog && decoded.canonicalBytes == catalog.canonicalBytes)
        // A rollout's entry keeps its signatures too.
        let staged = try catalog.with(packages: [], rollouts: [
            Rollout(entry: catalog.packages[0], permille: 100, state: .staged, since: Timestamp(secondsSinceEpoch: 1_700_000_000)),
        ])
        #expect(try Catalog.decode(staged.canonicalBytes).rollouts[0].entry.signatures == sorted)
        #expect(staged.trust == 3)
    }

    @Test("without them, nothing is written: catalogs from before trust keep their bytes")
    func absentFields() throws {
        let catalog = try Catalog(expires: Timestamp(secondsSinceEpoch: 1_800_000_000), packages: [try entry()])
        let text = String(decoding: catalog.canonicalBytes, as: UTF8.self)
        #expect(!text.contains("trust") && !text.contains("signatures"))
        #expect(try catalog.trust == nil && Catalog.decode(catalog.canonicalBytes).packages[0].signatures.isEmpty)
    }

    @Test("with(trust:) names another version and keeps the rest; with() alone keeps the version")
    func withTrust() throws {
        let catalog = try Catalog(expires: Timestamp(secondsSinceEpoch: 1_800_000_000), packages: [try entry()], trust: 2)
        #expect(try catalog.with(serial: 9).trust == 2)
        #expect(try catalog.with(trust: 5).trust == 5 && catalog.with(trust: 5).serial == catalog.serial)
    }

    @Test("a trust version below 1, or a signature that cannot be read, is refused by name")
    func refusals() throws {
        let expires = #""expires":"2030-01-01T00:00:00Z""#
        let entry = { (signatures: String) in
            #"{"id":"shop","version":"1.0.0","url":"a.zip","size":1,"sha256":"\#(Self.sha)","deltas":[],"signatures":\#(signatures)}"#
        }
        #expect(throws: CatalogError.invalidEntry("trust", reason: "0 must be 1 or more")) {
            try Catalog.decode(Array(#"{"schema":1,\#(expires),"trust":0,"packages":[]}"#.utf8))
        }
        #expect(throws: CatalogError.invalidEntry("trust", reason: "0 must be 1 or more")) {
            try Catalog(expires: Timestamp(secondsSinceEpoch: 1_800_000_000), packages: [], trust: 0)
        }
        let badID = entry(#"[{"keyid":"ABC","sig":"\#(String(repeating: "A", count: 86))=="}]"#)
        #expect(throws: CatalogError.self) { try Catalog.decode(Array(#"{"schema":1,\#(expires),"packages":[\#(badID)]}"#.utf8)) }
        let badSig = entry(#"[{"keyid":"\#(Self.sha)","sig":"c2ln"}]"#)
        #expect(throws: CatalogError.self) { try Catalog.decode(Array(#"{"schema":1,\#(expires),"packages":[\#(badSig)]}"#.utf8)) }
    }

    @Test("an updater from before trust reads the same entries, ignoring both fields")
    func olderReaders() throws {
        let signature = try KeyedSignature(signing: [1, 2, 3], with: keys[0])
        let catalog = try Catalog(expires: Timestamp(secondsSinceEpoch: 1_800_000_000), packages: [try entry([signature])], serial: 4, trust: 7)
        struct OldWire: Decodable {
            struct Entry: Decodable { let id: String; let version: String; let url: String; let size: Int64; let sha256: String }
            let schema: Int
            let serial: Int64?
            let packages: [Entry]
        }
        let old = try JSONDecoder().decode(OldWire.self, from: Data(catalog.canonicalBytes))
        #expect(old.schema == 1 && old.serial == 4 && old.packages.map(\.url) == ["shop-1.0.0.zip"])
    }

    @Test("a CDN may keep trust versions for ever (they never change once published); catalog.json.sigs as briefly as the catalog")
    func caching() {
        let forever = "public, max-age=31536000, immutable, no-transform"
        #expect(ReleaseCaching.cacheControl(forPublished: "/trust/3.json") == forever)
        #expect(ReleaseCaching.cacheControl(forPublished: "app/trust/12.json") == forever)
        #expect(ReleaseCaching.cacheControl(forPublished: "catalog.json.sigs") == "public, max-age=60, no-transform")
        #expect(ReleaseCaching.cacheControl(forPublished: "channels/beta/catalog.json.sigs") == "public, max-age=60, no-transform")
        for other in ["trust/notes.json", "trust/1.json.bak", "shop-1.0.0.zip.sigs", "trust/01x.json"] {
            #expect(ReleaseCaching.cacheControl(forPublished: other) == "no-cache", "\(other)")
        }
    }
}
