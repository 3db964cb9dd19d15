import Foundation
import Testing
@testable import SatchelCore

private func v(_ raw: String) -> SemanticVersion { try! SemanticVersion(raw) }
private let shaA = String(repeating: "a", count: 64)
private let shaB = String(repeating: "b", count: 64)

private func entry(_ version: String, size: Int64 = 1000, minRuntime: String? = nil, deltas: [(String, Int64)] = []) -> CatalogEntry {
    CatalogEntry(
        id: try! PackageID("shop"), version: v(version), url: "shop-\(version).zip", size: size, sha256: shaA,
        minRuntime: minRuntime.map(v),
        deltas: deltas.map { CatalogDelta(from: v($0.0), url: "shop-\($0.0)-\(version).zip", size: $0.1, sha256: shaB) })
}

@Suite struct CatalogTests {
    @Test func canonicalBytesRoundTripAndSortEntries() throws {
        let catalog = try Catalog(
            expires: Timestamp(secondsSinceEpoch: 1_800_000_000),
            packages: [entry("1.1.0", minRuntime: "2.0.0", deltas: [("1.0.0", 10)]), entry("1.0.0")])
        let text = String(decoding: catalog.canonicalBytes, as: UTF8.self)
        #expect(text == #"{"expires":"2027-01-15T08:00:00Z","packages":[{"deltas":[],"id":"shop","sha256":"\#(shaA)","size":1000,"url":"shop-1.0.0.zip","version":"1.0.0"},{"deltas":[{"from":"1.0.0","sha256":"\#(shaB)","size":10,"url":"shop-1.0.0-1.1.0.zip"}],"id":"shop","minRuntime":"2.0.0","sha256":"\#(shaA)","size":1000,"url":"shop-1.1.0.zip","version":"1.1.0"}],"schema":1}"#)
        #expect(try Catalog.decode(catalog.canonicalBytes) == catalog)
        #expect(catalog.isExpired(at: Timestamp(secondsSinceEpoch: 1_800_000_000)))
        #expect(!catalog.isExpired(at: Timestamp(secondsSinceEpoch: 1_799_999_999)))
    }

    @Test("catalog readers ignore fields they do not know, at the top and in entries; another schema is refused")
    func ignoresUnknownCatalogFields() throws {
        let expires = #""expires":"2030-01-01T00:00:00Z""#
        let entry = #"{"id":"shop","version":"1.0.0","url":"a.zip","size":1,"sha256":"\#(shaA)","deltas":[],"rollout":{"percent":10}}"#
        let catalog = try Catalog.decode(Array(#"{"schema":1,\#(expires),"serial":7,"packages":[\#(entry)]}"#.utf8))
        #expect(catalog.packages.map(\.version.description) == ["1.0.0"])
        #expect(throws: CatalogError.unsupportedSchema(2)) {
            try Catalog.decode(Array(#"{"schema":2,"channels":{}}"#.utf8))
        }
    }

    @Test func refusesBadCatalogsNamingTheFault() {
        let expires = #""expires":"2030-01-01T00:00:00Z""#
        let cases: [(String, CatalogError)] = [
            ("[]", .malformed("wrong type at ")),
            (#"{"schema":2,\#(expires),"packages":[]}"#, .unsupportedSchema(2)),
            (#"{"schema":1,"packages":[]}"#, .missingField("expires")),
            (#"{"schema":1,\#(expires),"packages":[{"id":"shop","version":"1.0.0","url":"a.zip","size":1,"sha256":"\#(shaA)","deltas":[]},{"id":"shop","version":"1.0.0","url":"b.zip","size":1,"sha256":"\#(shaA)","deltas":[]}]}"#,
             .duplicateEntry(id: "shop", version: "1.0.0")),
            (#"{"schema":1,\#(expires),"packages":[{"id":"shop","version":"1.0.0","url":"a.zip","size":1,"sha256":"ABC","deltas":[]}]}"#,
             .invalidEntry("shop 1.0.0", reason: "sha256 must be 64 lower-case hex digits")),
            (#"{"schema":1,\#(expires),"packages":[{"id":"shop","version":"1.0.0","url":"a b.zip","size":1,"sha256":"\#(shaA)","deltas":[]}]}"#,
             .invalidEntry("shop 1.0.0", reason: #"url "a b.zip" is empty or has spaces or control characters"#)),
            (#"{"schema":1,\#(expires),"packages":[{"id":"shop","version":"1.0.0","url":"a.zip","size":1,"sha256":"\#(shaA)","deltas":[{"from":"1.0.0","url":"d.zip","size":1,"sha256":"\#(shaA)"}]}]}"#,
             .invalidEntry("shop 1.0.0", reason: "has a delta from itself")),
        ]
        for (text, expected) in cases {
            #expect(throws: expected, "\(text)") { try Catalog.decode(Array(text.utf8)) }
        }
    }
}

@Suite struct UpdatePlanTests {
    let catalog = try! Catalog(
        expires: Timestamp(secondsSinceEpoch: 1_800_000_000),
        packages: [
            entry("1.0.0"), entry("1.1.0", deltas: [("1.0.0", 50), ("0.9.0", 5000)]),
            entry("2.0.0", minRuntime: "3.0.0", deltas: [("1.1.0", 10)]),
        ])
    let shop = try! PackageID("shop")

    func plan(active: String?, versions: [String] = [], runtime: String? = "2.0.0", downgrade: Bool = false) throws -> UpdatePlan {
        try UpdatePlan.decide(
            for: shop, in: catalog,
            installed: .init(active: active.map(v), versions: Set((versions + [active].compactMap { $0 }).map(v))),
            runtime: runtime.map(v), allowDowngrade: downgrade).plan
    }

    @Test func picksNewestCompatibleAndPrefersSmallerDeltaFromAnInstalledBase() throws {
        // The catalog keeps deltas in base-version order, whatever order they were listed in.
        #expect(try plan(active: "1.0.0") == .install(entry("1.1.0", deltas: [("0.9.0", 5000), ("1.0.0", 50)]), delta: CatalogDelta(from: v("1.0.0"), url: "shop-1.0.0-1.1.0.zip", size: 50, sha256: shaB), replacing: v("1.0.0")))
        // The delta from 0.9.0 is larger than the bundle: the full bundle wins.
        if case .install(_, let delta, _) = try plan(active: "0.9.0") { #expect(delta == nil) } else { Issue.record("expected an install") }
        // No base installed: full bundle, nothing replaced.
        if case .install(let target, let delta, let replacing) = try plan(active: nil) {
            #expect(target.version == v("1.1.0") && delta == nil && replacing == nil)
        } else { Issue.record("expected an install") }
        // A newer runtime unlocks 2.0.0 and its delta from 1.1.0.
        if case .install(let target, let delta, _) = try plan(active: "1.1.0", runtime: "3.1.0") {
            #expect(target.version == v("2.0.0") && delta?.from == v("1.1.0"))
        } else { Issue.record("expected an install") }
        // A base that is installed but not active still serves as delta base.
        if case .install(_, let delta, _) = try plan(active: "0.5.0", versions: ["1.0.0"]) { #expect(delta?.from == v("1.0.0")) } else { Issue.record("expected an install") }
    }

    @Test func upToDateDowngradeAndRuntimeRules() throws {
        #expect(try plan(active: "1.1.0") == .upToDate(shop, v("1.1.0")))
        #expect(throws: UpdatePlanError.downgrade(id: "shop", active: "1.2.0", offered: "1.1.0")) { try plan(active: "1.2.0") }
        if case .install(let target, _, let replacing) = try plan(active: "1.2.0", downgrade: true) {
            #expect(target.version == v("1.1.0") && replacing == v("1.2.0"))
        } else { Issue.record("expected an install") }
        let newOnly = try Catalog(expires: catalog.expires, packages: [entry("2.0.0", minRuntime: "3.0.0")])
        #expect(throws: UpdatePlanError.needsNewerRuntime(id: "shop", minRuntime: "3.0.0", runtime: "2.0.0")) {
            try UpdatePlan.decide(for: shop, in: newOnly, installed: .init(active: nil, versions: []), runtime: v("2.0.0"), allowDowngrade: false)
        }
        #expect(throws: UpdatePlanError.notInCatalog("docs")) {
            try UpdatePlan.decide(for: PackageID("docs"), in: catalog, installed: .init(active: nil, versions: []), runtime: nil, allowDowngrade: false)
        }
    }
}

@Suite struct DeltaManifestTests {
    func manifest(_ version: String, _ files: [String: String]) throws -> Manifest {
        try Manifest(
            id: PackageID("shop"), version: SemanticVersion(version), createdAt: Timestamp(secondsSinceEpoch: 1_700_000_000),
            scope: Scope(hosts: [HostPattern("m.shop.com")], pathPrefix: PathPrefix("/")), entry: SafePath(validating: "index.html"),
            files: files.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }.map {
                FileRecord(path: try SafePath(validating: $0.key), size: 1, sha256: String(repeating: $0.value, count: 64), mime: "text/html")
            })
    }

    @Test func checksBaseAndDeletedList() throws {
        let base = try manifest("1.0.0", ["index.html": "a", "old.css": "b", "keep.js": "c"])
        let target = try manifest("1.1.0", ["index.html": "d", "keep.js": "c", "new.js": "e"])
        let delta = try DeltaManifest(from: v("1.0.0"), fromContentHash: base.contentHash, deleted: [SafePath(validating: "old.css")])
        try delta.check(base: base, target: target)
        #expect(try DeltaManifest.decode(delta.canonicalBytes) == delta)
        #expect(String(decoding: delta.canonicalBytes, as: UTF8.self) == #"{"deleted":["old.css"],"from":"1.0.0","fromContentHash":"\#(base.contentHash)"}"#)

        let other = try manifest("1.0.0", ["index.html": "f", "old.css": "b", "keep.js": "c"])
        #expect(throws: DeltaManifestError.baseMismatch(reason: "base contentHash is \(other.contentHash), the delta expects \(base.contentHash)")) {
            try delta.check(base: other, target: target)
        }
        let missing = try DeltaManifest(from: v("1.0.0"), fromContentHash: base.contentHash, deleted: [])
        #expect(throws: DeltaManifestError.deletedListWrong(reason: #""old.css" is gone from the target but not listed as deleted"#)) {
            try missing.check(base: base, target: target)
        }
        let extra = try DeltaManifest(from: v("1.0.0"), fromContentHash: base.contentHash, deleted: [SafePath(validating: "old.css"), SafePath(validating: "keep.js")])
        #expect(throws: DeltaManifestError.deletedListWrong(reason: #""keep.js" is listed as deleted but is not a base-only file"#)) {
            try extra.check(base: base, target: target)
        }
        #expect(throws: DeltaManifestError.self) { try DeltaManifest.decode(Array(#"{"from":"1.0.0","fromContentHash":"\#(base.contentHash)","deleted":["../x"]}"#.utf8)) }
    }
}

@Suite("Manifest patches and the catalog's content field")
struct ManifestPatchTests {
    func record(_ path: String, _ text: String) -> FileRecord {
        let bytes = Array(text.utf8)
        let safe = try! SafePath(validating: path)
        return FileRecord(path: safe, size: Int64(bytes.count), sha256: Digests.sha256Hex(bytes), mime: MIMETable.entry(for: safe).type)
    }

    func manifest(_ version: String, _ files: [FileRecord]) throws -> Manifest {
        try Manifest(
            id: PackageID("shop"), version: SemanticVersion(version), createdAt: Timestamp(secondsSinceEpoch: 1_700_000_000),
            scope: Scope(hosts: [HostPattern("m.shop.com")]), files: files)
    }

    func objects(_ manifests: [Manifest]) -> [String: ContentObject] {
        var map: [String: ContentObject] = [:]
        for file in manifests.flatMap(\.files) { map[file.sha256] = ContentObject(size: file.size / 2 + 1, sha256: String(file.sha256.reversed()), gzip: true) }
        return map
    }

    @Test("a patch rebuilds the target manifest byte for byte from its base, and from nothing")
    func rebuilds() throws {
        let base = try manifest("1.0.0", [record("index.html", "<h1>1</h1>"), record("app.css", "a{}"), record("old.js", "old")])
        let target = try manifest("1.1.0", [record("index.html", "<h1>2</h1>"), record("app.css", "a{}"), record("new.js", "new")])
        let patch = try ManifestPatch.make(from: base, to: target, signature: "c2lnbmF0dXJl", objects: objects([base, target]))
        #expect(patch.removed.map(\.value) == ["old.js"])
        #expect(patch.set.map(\.file.path.value) == ["index.html", "new.js"], "unchanged files are not in the patch")
        let rebuilt = try patch.apply(to: base)
        #expect(rebuilt.bytes == target.canonicalBytes && rebuilt.manifest == target)
        let decoded = try ManifestPatch.decode(patch.canonicalBytes)
        #expect(decoded == patch && decoded.signature == "c2lnbmF0dXJl")
        let whole = try ManifestPatch.make(from: nil, to: target, signature: nil, objects: objects([target]))
        #expect(whole.set.count == 3 && whole.removed.isEmpty)
        #expect(try whole.apply(to: nil).bytes == target.canonicalBytes)
        #expect(try whole.apply(to: base).bytes == target.canonicalBytes, "the patch from nothing ignores a base")
    }

    @Test("a patch refuses another base, builds nothing but a valid manifest, and is read only in canonical form")
    func refusals() throws {
        let base = try manifest("1.0.0", [record("index.html", "<h1>1</h1>")])
        let other = try manifest("1.0.0", [record("index.html", "<h1>other</h1>")])
        let target = try manifest("1.1.0", [record("index.html", "<h1>2</h1>")])
        let patch = try ManifestPatch.make(from: base, to: target, signature: nil, objects: objects([base, target]))
        #expect(throws: ManifestPatchError.self) { try patch.apply(to: other) }
        #expect(throws: ManifestPatchError.self) { try patch.apply(to: nil) }
        var tampered = patch
        tampered.set[0].file.sha256 = String(repeating: "0", count: 64)
        #expect(throws: ManifestPatchError.invalidResult(.contentHashMismatch(claimed: target.contentHash, computed: try manifest("1.1.0", [tampered.set[0].file]).contentHash))) {
            try tampered.apply(to: base)
        }
        var spaced = patch.canonicalBytes
        spaced.insert(UInt8(ascii: " "), at: 1)
        #expect(throws: ManifestPatchError.self) { try ManifestPatch.decode(spaced) }
        #expect(throws: ManifestPatchError.missingObject(target.files[0].sha256)) {
            try ManifestPatch.make(from: base, to: target, signature: nil, objects: [:])
        }
    }

    @Test("a catalog entry's content round-trips, and a reader that does not know the field still reads the entry")
    func catalogContent() throws {
        let content = CatalogContent(
            manifest: String(repeating: "a", count: 64), objects: "objects/",
            patches: [
                CatalogPatch(from: try SemanticVersion("1.0.0"), url: "patches/shop/1.1.0/from-1.0.0.json.gz", size: 900, sha256: String(repeating: "b", count: 64)),
                CatalogPatch(from: nil, url: "patches/shop/1.1.0/full.json.gz", size: 4000, sha256: String(repeating: "c", count: 64)),
            ])
        let catalog = try Catalog(expires: Timestamp(secondsSinceEpoch: 2_000_000_000), packages: [
            CatalogEntry(id: PackageID("shop"), version: SemanticVersion("1.1.0"), url: "shop-1.1.0.zip", size: 100, sha256: String(repeating: "d", count: 64), content: content),
        ])
        let decoded = try Catalog.decode(catalog.canonicalBytes)
        #expect(decoded.packages.first?.content == content && decoded.packages.first?.content?.patch(from: nil)?.size == 4000)
        // What an updater built before the field reads: the same entry, the field ignored (catalog readers ignore
        // fields they do not know).
        struct OldWire: Decodable {
            struct Entry: Decodable { let id: String; let version: String; let url: String; let size: Int64; let sha256: String }
            let schema: Int
            let packages: [Entry]
        }
        let old = try JSONDecoder().decode(OldWire.self, from: Data(catalog.canonicalBytes))
        #expect(old.schema == 1 && old.packages.first?.url == "shop-1.1.0.zip")
        #expect(throws: CatalogError.self) {
            try Catalog(expires: Timestamp(secondsSinceEpoch: 2_000_000_000), packages: [
                CatalogEntry(id: PackageID("shop"), version: SemanticVersion("1.1.0"), url: "x.zip", size: 1, sha256: String(repeating: "d", count: 64),
                             content: CatalogContent(manifest: "nothex", objects: "objects/", patches: [])),
            ])
        }
    }
}
