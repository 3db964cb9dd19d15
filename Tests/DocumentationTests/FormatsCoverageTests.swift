import Foundation
@testable import SatchelCache
import SatchelCore
@testable import SatchelStore
import SatchelUpdate
import Testing

/// docs/formats.md is the normative spec: every field Satchel writes into a document its readers decode must be
/// described there. The documents are built with every optional field present, so a field added to a writer without
/// a word in the spec fails here.
@Suite("docs/formats.md describes every field")
struct FormatsCoverageTests {
    static let sha = String(repeating: "ab", count: 32)

    static func manifest(version: String = "1.4.0", extra: String? = nil, indexSHA256: String = sha) throws -> Manifest {
        let record = { (path: String) in FileRecord(path: try! SafePath(validating: path), size: 6, sha256: sha, mime: "text/html") }
        var files = [FileRecord(path: try SafePath(validating: "index.html"), size: 6, sha256: indexSHA256, mime: "text/html"), record("offline.html")]
        if let extra { files.append(record(extra)) }
        return try Manifest(
            id: PackageID("shop"), version: SemanticVersion(version), createdAt: Timestamp(secondsSinceEpoch: 1_700_000_000),
            scope: Scope(hosts: [HostPattern("m.shop.com")], pathPrefix: PathPrefix("/app/")), spaFallback: true,
            offlinePage: SafePath(validating: "offline.html"),
            routes: [Route(prefix: "/app/api/", strategy: .networkFirst, timeoutMs: 3000)],
            cachePolicies: [CacheRoute(prefix: "/app/api/", policy: .staleWhileRevalidate, maxAge: 600)], minRuntime: SemanticVersion("1.0.0"),
            files: files)
    }

    static func documents() throws -> [(name: String, bytes: [UInt8])] {
        let v = { (text: String) in try! SemanticVersion(text) }
        let (root, signer) = (SigningKey.generate(), SigningKey.generate())
        let keyed = try KeyedSignature(signing: Array("satchel.json".utf8), with: signer)
        let trust = try TrustDocument(version: 2, expires: Timestamp(secondsSinceEpoch: 1_900_000_000), roles: [
            .root: RoleDefinition(keys: [root.verifyingKey], threshold: 1),
            .catalog: RoleDefinition(keys: [signer.verifyingKey], threshold: 1),
            .bundles: RoleDefinition(keys: [signer.verifyingKey], threshold: 1),
        ]).signed(by: root)
        let catalog = try Catalog(expires: Timestamp(secondsSinceEpoch: 1_800_000_000), packages: [
            CatalogEntry(
                id: PackageID("shop"), version: v("1.1.0"), url: "shop-1.1.0.zip", size: 10, sha256: sha, minRuntime: v("1.0.0"),
                deltas: [CatalogDelta(from: v("1.0.0"), url: "shop-1.0.0-1.1.0.zip", size: 5, sha256: sha)],
                content: CatalogContent(manifest: sha, objects: "objects/", patches: [
                    CatalogPatch(from: nil, url: "patches/shop/1.1.0/full.json.gz", size: 9, sha256: sha),
                    CatalogPatch(from: v("1.0.0"), url: "patches/shop/1.1.0/from-1.0.0.json.gz", size: 3, sha256: sha),
                ], diffs: CatalogDiffs(base: "diffs/", url: "patches/shop/1.1.0/diffs.json.gz", size: 7, sha256: sha)), signatures: [keyed]),
        ], serial: 12, reportURL: "/_satchel/reports", rollouts: [
            Rollout(entry: CatalogEntry(id: PackageID("shop"), version: v("1.2.0"), url: "shop-1.2.0.zip", size: 10, sha256: sha),
                    permille: 125, state: .staged, since: Timestamp(secondsSinceEpoch: 1_790_000_000)),
        ], trust: 2)
        let report = DeviceReport(channel: try ReleaseChannel("beta"), items: [
            .init(id: try PackageID("shop"), role: .offered, version: v("1.2.0"), token: "0123456789abcdef", cohort: 437),
            .init(id: try PackageID("shop"), role: .active, version: v("1.1.0"), token: "fedcba9876543210", state: "trial"),
            .init(id: try PackageID("shop"), role: .failed, version: v("1.0.5"), token: "00112233445566aa", why: "trial"),
        ])
        // updater.json as its two writers leave it: the updater's record, then a floor KeptTrust keeps.
        let recordRoot = NSTemporaryDirectory() + "formats-coverage-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: recordRoot) }
        let layout = StoreLayout(root: recordRoot)
        try UpdaterRecord(installID: String(repeating: "ab", count: 32), failures: [:]).save(to: layout.downloads)
        try KeptTrust(layout: layout).keepFloor(SerialFloor(serial: 12, trustVersion: 2), for: "https://cdn.example/catalog.json")
        // Its maps are keyed by catalog URL and by "<id> <version>": names, not fields, so emptied here.
        let file = try #require(FileManager.default.contents(atPath: layout.downloads + "/" + UpdaterRecord.fileName))
        var written = try #require(try JSONSerialization.jsonObject(with: file) as? [String: Any])
        for (key, value) in written where value is [String: Any] { written[key] = [String: Any]() }
        let updaterJSON = try JSONSerialization.data(withJSONObject: written, options: [.sortedKeys])
        let changed = String(repeating: "cd", count: 32)
        let patch = try ManifestPatch.make(
            from: manifest(version: "1.3.0", extra: "old.css"), to: manifest(indexSHA256: changed), signature: "c2ln",
            objects: [changed: ContentObject(size: 4, sha256: sha, gzip: true)])
        let delta = try DeltaManifest(from: v("1.0.0"), fromContentHash: sha, deleted: [SafePath(validating: "old.css")])
        let state = PackageState(
            active: v("1.2.0"), trial: v("1.2.0"), launches: 1, history: [v("1.0.0"), v("1.1.0")], unconfirmed: [v("1.1.0")],
            failed: [v("0.9.0")])
        let cached = StoredResponse(
            status: 200, headers: ["Cache-Control": "max-age=60"], varying: [StoredVaryField(name: "accept-language", value: "en")],
            requestTime: 1, responseTime: 2)
        return [
            ("satchel.json", try manifest().canonicalBytes), ("catalog.json", catalog.canonicalBytes),
            ("satchel-delta.json", delta.canonicalBytes),
            ("Satchel-Report", ReportRecord(at: Timestamp(secondsSinceEpoch: 1_790_000_000), via: "post", report: report).jsonLine),
            ("updater.json", Array(updaterJSON)), ("store.json", Array(#"{"channel":"beta","layout":1}"#.utf8)), ("patches/<id>/<version>/from-<base>.json.gz", patch.canonicalBytes), ("state.json", state.canonicalBytes),
            ("cache.json", Array(#"{"layout":1}"#.utf8)),
            ("patches/<id>/<version>/diffs-<hash>.json.gz", FileDiffIndex(id: try PackageID("shop"), version: v("1.1.0"), diffs: [
                .init(from: sha, to: changed, size: 40, sha256: sha),
            ]).canonicalBytes),
            ("entries/<xx>/<id>.json", try #require(CacheStore.record(key: "https://api.example/x", stored: cached, bodyLength: 5))),
            ("trust/<n>.json", trust.canonicalBytes),
            ("catalog.json.sigs", try SignatureFile(for: Array("catalog".utf8)).adding(signer, over: Array("catalog".utf8)).canonicalBytes),
            ("packages/<id>/signatures/<version>.sigs", try SignatureFile(sha256: sha, signatures: [keyed]).canonicalBytes),
        ]
    }

    /// Every object key in a JSON document, at any depth, but key ids (a trust document's `keys` is keyed by them: names,
    /// not fields).
    static func keys(_ value: Any) -> Set<String> {
        if let object = value as? [String: Any] {
            return Set(object.keys.filter { !Digests.isSHA256Hex($0) }).union(object.values.flatMap { keys($0) })
        }
        if let array = value as? [Any] { return Set(array.flatMap { keys($0) }) }
        return []
    }

    @Test("every field of the manifest, catalog, delta manifest, manifest patch, state.json, the HTTP cache's records, trust documents and signature files is named in docs/formats.md")
    func everyFieldDescribed() throws {
        let spec = try Repository.text("docs/formats.md")
        for (name, bytes) in try Self.documents() {
            let fields = Self.keys(try JSONSerialization.jsonObject(with: Data(bytes)))
            #expect(fields.count >= 1, "\(name): \(fields)")
            for field in fields.sorted() {
                #expect(spec.contains("`\(field)`"), "docs/formats.md does not describe \(name)'s field \(field)")
            }
            #expect(spec.contains("`\(name)`"), "docs/formats.md does not name \(name)")
        }
    }
}
