import Foundation
import SatchelArchive
import SatchelBundle
import SatchelCore
import SatchelDiff
import SatchelHTTP
import SatchelPublishing
import SatchelStore
import SatchelTestSupport
import Testing
@testable import SatchelUpdate

/// Two versions of one app as a bundler makes them: 1.1.0 edits three of 1.0.0's 40 chunks a little, changes
/// index.html, adds a small module and `assets/shared.js`, an edit of a library another package ("admin") holds.
/// Published as `satchel catalog` publishes them (bundles, objects, manifest patches) plus per-file diffs for 1.1.0
/// (each made by `FileDiffEncoder` from the content's predecessor, listed in a gzip index the entry's `content.diffs`
/// names), on the fake CDN, under two catalogs: `catalog.json` lists the diffs, `plain.json` does not.
struct DiffRelease {
    let key = SigningKey.generate()
    let origin = FakeOrigin()
    let base = "https://cdn.example/releases/"
    let folder: String
    var bundles: [String: String] = [:]
    var admin = ""
    /// Every content of both versions and of admin, by SHA-256.
    var contents: [String: [UInt8]] = [:]
    var manifests: [String: Manifest] = [:]
    var entries: [CatalogEntry] = []
    var diffs: [FileDiffIndex.Diff] = []
    static let indexPath = "diffs/shop-1.1.0.json.gz"

    /// - Parameter twins: two more files that 1.1.0 edits the same way at the same place, so that their two diffs are
    ///   the very same bytes.
    init(folder: String, twins: Bool = false) throws {
        self.folder = folder
        func chunk(_ index: Int) -> String { "export const chunk\(index) = \"" + hexText(seed: "chunk-\(index)", count: 30_000) + "\";" }
        func edited(_ text: String, _ mark: String) -> String {
            var characters = Array(text)
            characters.replaceSubrange(10_000..<10_000 + mark.count, with: mark)
            return String(characters)
        }
        let library = "export const shared = \"" + hexText(seed: "shared", count: 15_000) + "\";"
        var files = (0..<40).reduce(into: [String: String]()) { $0["assets/chunk-\($1).js"] = chunk($1) }
        files["index.html"] = "<h1>1.0.0</h1>"
        let twinNames = twins ? ["assets/twin-a.js", "assets/twin-b.js"] : []
        for name in twinNames { files[name] = hexText(seed: name, count: 20_000) }
        bundles["1.0.0"] = try pack("shop", "1.0.0", files)
        for name in twinNames { files[name] = edited(files[name]!, "TWIN-EDIT") }
        for index in 0..<3 { files["assets/chunk-\(index).js"] = edited(chunk(index), "EDITED-1.1-\(index)") }
        files["index.html"] = "<h1>1.1.0</h1>"
        files["assets/new.js"] = "export default 1;"
        files["assets/shared.js"] = edited(library, "EDITED-SHARED")
        bundles["1.1.0"] = try pack("shop", "1.1.0", files)
        // Another package, outside the release folder: not in the catalog, only on some devices.
        admin = try pack("admin", "1.0.0", ["index.html": "<h1>admin</h1>", "lib/shared.js": library], host: "admin.shop.example", into: "admin")
        for (name, path) in [("1.0.0", bundles["1.0.0"]!), ("1.1.0", bundles["1.1.0"]!), ("admin", admin)] {
            let manifest = try BundleReader(path: path).manifest
            manifests[name] = manifest
            for file in manifest.files { contents[file.sha256] = Array(try String(contentsOfFile: folder + "/src-\(manifest.id)-\(manifest.version)/" + file.path.value, encoding: .utf8).utf8) }
        }

        // The publisher's own diffs are left out: these tests list theirs (admin's library among them) by hand.
        entries = try ReleaseFolder.read(folder + "/release", baseURL: "", steps: false).entries.map { entry in
            var plain = entry
            plain.content?.diffs = nil
            return plain
        }
        try origin.putFiles(of: folder + "/release", at: base)

        // The diffs: each new content from its predecessor in 1.0.0 (ContentPairing), and shared.js from admin's library.
        let old = manifests["1.0.0"]!, new = manifests["1.1.0"]!
        var pairs = ContentPairing.predecessors(of: new.files, in: old.files).map { ($0.base.sha256, $0.target.sha256) }
        let shared = try #require(new.files.first { $0.path.value == "assets/shared.js" })
        pairs.append((manifests["admin"]!.files.first { $0.path.value == "lib/shared.js" }!.sha256, shared.sha256))
        for (from, to) in pairs {
            guard let bytes = FileDiffEncoder.encode(source: contents[from]!, target: contents[to]!) else { continue }
            origin.put(base + "diffs/" + FileDiffIndex.path(from: from, to: to), bytes)
            diffs.append(FileDiffIndex.Diff(from: from, to: to, size: Int64(bytes.count), sha256: Digests.sha256Hex(bytes)))
        }
        try publishIndex()
    }

    func pack(_ id: String, _ version: String, _ files: [String: String], host: String = "m.shop.example", into output: String = "release") throws -> String {
        let source = folder + "/src-\(id)-\(version)"
        try makeTree(source, files)
        let options = PackOptions(
            id: try PackageID(id), version: try SemanticVersion(version), scope: try Scope(hosts: [HostPattern(host)]),
            signingKey: key, sourceDateEpoch: 1_700_000_000)
        return try Packer.pack(source: source, options: options, outputFolder: folder + "/" + output).bundle
    }

    /// Writes the index of `diffs` (gzip of its canonical bytes, or `indexBytes` as given) and both catalogs.
    func publishIndex(_ indexBytes: [UInt8]? = nil, declaredSize: Int64? = nil) throws {
        let index = FileDiffIndex(id: try PackageID("shop"), version: try SemanticVersion("1.1.0"), diffs: diffs)
        let bytes = try indexBytes ?? gzip(index.canonicalBytes)
        origin.put(base + Self.indexPath, bytes)
        var listed = entries
        let newest = try #require(listed.firstIndex { $0.version.description == "1.1.0" })
        listed[newest].content?.diffs = CatalogDiffs(
            base: "diffs/", url: Self.indexPath, size: declaredSize ?? Int64(bytes.count), sha256: Digests.sha256Hex(bytes))
        try publish("catalog.json", listed)
        try publish("plain.json", entries)
    }

    /// 1.1.0's entry as `plain.json` lists it.
    var newest: CatalogEntry { entries.first { $0.version.description == "1.1.0" }! }

    func publish(_ name: String, _ entries: [CatalogEntry]) throws {
        let bytes = try Catalog(expires: Timestamp(secondsSinceEpoch: 4_000_000_000), packages: entries).canonicalBytes
        origin.put(base + name, bytes)
        origin.put(base + name + ".sig", Array(try key.signature(for: bytes).base64.utf8))
    }

    /// The listed diff that makes 1.1.0's `path`.
    func diff(to path: String) throws -> FileDiffIndex.Diff {
        let file = try #require(manifests["1.1.0"]!.files.first { $0.path.value == path })
        return try #require(diffs.first { $0.to == file.sha256 })
    }

    func diffURL(to path: String) throws -> String { base + "diffs/" + (try diff(to: path)).path }

    /// Publishes `bytes` as the diff to `path` and lists them in the index (size and SHA-256): a diff the publisher
    /// stands behind, so only what it says can refuse it.
    mutating func list(_ bytes: [UInt8], to path: String) throws {
        let old = try diff(to: path)
        diffs.removeAll { $0 == old }
        diffs.append(FileDiffIndex.Diff(from: old.from, to: old.to, size: Int64(bytes.count), sha256: Digests.sha256Hex(bytes)))
        origin.put(base + "diffs/" + old.path, bytes)
        try publishIndex()
    }

    func store(_ name: String, builtIn: String? = nil) throws -> PackageStore {
        try PackageStore(root: folder + "/" + name, configuration: StoreConfiguration(trustedKeys: [key.verifyingKey], builtIns: builtIn.map { [$0] } ?? []))
    }

    func updater(_ store: PackageStore, catalog: String = "catalog.json") -> Updater {
        Updater(store: store, fetcher: origin, options: UpdaterOptions(
            catalogURL: base + catalog, trustedKeys: [key.verifyingKey],
            retry: RetryPolicy(attempts: 3, initialDelay: .milliseconds(1), maxDelay: .milliseconds(5))))
    }

    /// Updates `store` and returns its one outcome, checking the version installed is 1.1.0 byte for byte.
    func update(_ store: PackageStore, catalog: String = "catalog.json") async throws -> UpdateOutcome {
        let report = try await updater(store, catalog: catalog).run()
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.error.description })")
        let outcome = try #require(report.outcomes.first)
        #expect(try store.installedManifest(PackageID("shop"), SemanticVersion("1.1.0")) == manifests["1.1.0"])
        #expect(try store.check().isEmpty)
        return outcome
    }
}

func gzip(_ bytes: [UInt8]) throws -> [UInt8] {
    var compressed: [UInt8] = []
    let writer = try GzipWriter(level: 9) { compressed.append(contentsOf: $0) }
    try bytes.withUnsafeBytes { try writer.write($0) }
    try writer.finish()
    return compressed
}

/// `diff` with its header's source size (`field` 0) or target size (1) declared as `value` instead: the magic and
/// version (5 bytes) are followed by the two sizes as LEB128 varints (docs/formats.md#diffs).
func declaring(_ diff: [UInt8], field: Int, as value: Int) -> [UInt8] {
    var position = 5
    var spans: [Range<Int>] = []
    for _ in 0..<2 {
        let start = position
        while diff[position] & 0x80 != 0 { position += 1 }
        position += 1
        spans.append(start..<position)
    }
    var varint: [UInt8] = []
    var rest = value
    while rest >= 0x80 {
        varint.append(UInt8(rest & 0x7F) | 0x80)
        rest >>= 7
    }
    varint.append(UInt8(rest))
    var rewritten = diff
    rewritten.replaceSubrange(spans[field], with: varint)
    return rewritten
}

private func snapshot(_ root: String) throws -> [String: [UInt8]] {
    try treeSnapshot(root) { $0 == "lock" || $0.hasPrefix("downloads") }
}

@Suite("Updates through per-file diffs")
struct DiffUpdateTests {

    @Test("two files edited the same way share one diff's bytes: it is fetched once and makes both")
    func sharedDiff() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try DiffRelease(folder: folder, twins: true)
            let a = try release.diff(to: "assets/twin-a.js"), b = try release.diff(to: "assets/twin-b.js")
            #expect(a.sha256 == b.sha256 && a.from != b.from, "the fixture's twins must share their diff's bytes")
            let store = try release.store("store")
            try store.install(bundle: release.bundles["1.0.0"]!)
            let outcome = try await release.update(store)
            #expect(outcome.diffs == 5 && outcome.diffsFallback == 0, "\(outcome)")
            let fetched = release.origin.requests.map(\.url).filter { $0.hasSuffix(a.path) || $0.hasSuffix(b.path) }
            #expect(fetched.count == 1, "\(fetched)")
            #expect(listing(folder + "/store/downloads/objects").isEmpty)
        }
    }
    @Test("from an installed version: the three edited chunks come as diffs, the rest as objects, byte for byte, in fewer bytes than objects alone")
    func fromInstalled() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try DiffRelease(folder: folder)
            let store = try release.store("store")
            try store.install(bundle: release.bundles["1.0.0"]!)
            let outcome = try await release.update(store)
            #expect(outcome.via == .objects && outcome.patchFrom == "1.0.0", "\(outcome)")
            // index.html (its diff is no smaller than its 14-byte object), new.js and shared.js (admin is not here).
            #expect(outcome.diffs == 3 && outcome.objects == 3 && outcome.diffsFallback == 0, "\(outcome)")
            #expect(outcome.diffRefusals == nil && outcome.diffIndexFallback == nil)
            let patch = try #require(release.newest.content?.patch(from: try SemanticVersion("1.0.0")))
            #expect(outcome.downloadedBytes == patch.size + outcome.diffBytes! + outcome.objectBytes!, "\(outcome)")

            let plain = try release.store("plain")
            try plain.install(bundle: release.bundles["1.0.0"]!)
            let objectsOnly = try await release.update(plain, catalog: "plain.json")
            #expect(objectsOnly.via == .objects && objectsOnly.objects == 6, "\(objectsOnly)")
            #expect(outcome.downloadedBytes * 3 < objectsOnly.downloadedBytes, "diffs \(outcome.downloadedBytes), objects \(objectsOnly.downloadedBytes)")
            let asked = release.origin.requests.map(\.url)
            for chunk in 0..<3 {
                #expect(asked.contains(try release.diffURL(to: "assets/chunk-\(chunk).js")))
            }
            #expect(listing(folder + "/store/downloads/objects").isEmpty, "no diff, object or result left once installed")
        }
    }

    @Test("from the built-in bundle: each diff reads its source out of the app's archive")
    func fromBuiltIn() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try DiffRelease(folder: folder)
            let store = try release.store("store", builtIn: release.bundles["1.0.0"]!)
            let outcome = try await release.update(store)
            #expect(outcome.via == .objects && outcome.patchFrom == "1.0.0" && outcome.diffs == 3 && outcome.objects == 3, "\(outcome)")
            #expect(outcome.install?.delta?.from == "1.0.0" && (outcome.install?.delta?.copied ?? 0) >= 37, "\(String(describing: outcome.install?.delta))")
        }
    }

    @Test("from a content another package holds: read only because the index names it, and it makes shared.js")
    func fromAnotherPackage() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try DiffRelease(folder: folder)
            let store = try release.store("store")
            try store.install(bundle: release.bundles["1.0.0"]!)
            try store.install(bundle: release.admin)
            let outcome = try await release.update(store)
            #expect(outcome.diffs == 4 && outcome.objects == 2, "\(outcome)")
            #expect(release.origin.requests.map(\.url).contains(try release.diffURL(to: "assets/shared.js")))
        }
    }

    @Test("a diff whose bytes are not the ones listed is refused: its file comes as its object, the update succeeds")
    func corruptDiff() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try DiffRelease(folder: folder)
            let url = try release.diffURL(to: "assets/chunk-1.js")
            let listed = try release.diff(to: "assets/chunk-1.js")
            release.origin.put(url, [UInt8](repeating: 0x5A, count: Int(listed.size)))
            let store = try release.store("store")
            try store.install(bundle: release.bundles["1.0.0"]!)
            let outcome = try await release.update(store)
            #expect(outcome.via == .objects && outcome.diffs == 2 && outcome.diffsFallback == 1 && outcome.objects == 4, "\(outcome)")
            #expect(outcome.diffRefusals?.count == 1 && outcome.diffRefusals?.first?.description.contains(url) == true, "\(String(describing: outcome.diffRefusals))")
            // Every byte received counts: the refused diff's (each attempt) too.
            let patch = try #require(release.newest.content?.patch(from: try SemanticVersion("1.0.0")))
            #expect(outcome.downloadedBytes == patch.size + outcome.diffBytes! + outcome.objectBytes!)
            #expect(outcome.diffBytes! >= listed.size)
        }
    }

    @Test("a diff as listed that makes other bytes than the manifest's: refused by the result's SHA-256, its object taken")
    func wrongResult() async throws {
        try await withTemporaryFolder { folder async throws in
            var release = try DiffRelease(folder: folder)
            let listed = try release.diff(to: "assets/chunk-2.js")
            var wrong = release.contents[listed.to]!
            wrong[20_000] ^= 0x01
            try release.list(try #require(FileDiffEncoder.encode(source: release.contents[listed.from]!, target: wrong)), to: "assets/chunk-2.js")
            let store = try release.store("store")
            try store.install(bundle: release.bundles["1.0.0"]!)
            let outcome = try await release.update(store)
            #expect(outcome.diffs == 2 && outcome.diffsFallback == 1 && outcome.objects == 4, "\(outcome)")
            #expect(outcome.diffRefusals?.first?.description.contains("not \(listed.to)") == true, "\(String(describing: outcome.diffRefusals))")
        }
    }

    @Test("hostile diffs (a window past the limit, an output longer than declared) are refused with the codec's errors and fall back; with the objects and the bundle bad too, the store is unchanged")
    func hostileDiffs() async throws {
        try await withTemporaryFolder { folder async throws in
            var release = try DiffRelease(folder: folder)
            let window = try release.diff(to: "assets/chunk-0.js")
            let honest = try #require(FileDiffEncoder.encode(source: release.contents[window.from]!, target: release.contents[window.to]!))
            try release.list(declaring(honest, field: 0, as: 1 << 30), to: "assets/chunk-0.js")
            let longer = try release.diff(to: "assets/chunk-1.js")
            let target = release.contents[longer.to]!
            let overlong = try #require(FileDiffEncoder.encode(source: release.contents[longer.from]!, target: target + Array(repeating: 0x41, count: 64)))
            try release.list(declaring(overlong, field: 1, as: target.count), to: "assets/chunk-1.js")

            let store = try release.store("store")
            try store.install(bundle: release.bundles["1.0.0"]!)
            let outcome = try await release.update(store)
            #expect(outcome.via == .objects && outcome.diffs == 1 && outcome.diffsFallback == 2 && outcome.objects == 5, "\(outcome)")
            let refusals = (outcome.diffRefusals ?? []).map(\.description)
            let windowLimit = FileDiffLimits.device.window(forTarget: release.contents[window.to]!.count)
            #expect(refusals.contains { $0.contains(FileDiffError.windowTooLarge(sourceSize: 1 << 30, limit: windowLimit).description) }, "\(refusals)")
            #expect(refusals.contains { $0.contains("writes past its declared \(target.count)-byte target") }, "\(refusals)")

            // Everything bad: the hostile diffs, then their objects, then the bundle. Nothing installed changes.
            let bad = try release.store("bad")
            try bad.install(bundle: release.bundles["1.0.0"]!)
            for sha256 in [window.to, longer.to] {
                let object = try #require(release.newest.content).objects
                let path = try #require(FileManager.default.enumerator(atPath: folder + "/release/objects")?.allObjects.compactMap { $0 as? String }.first { $0.contains(sha256) })
                release.origin.put(release.base + object + path, [UInt8](repeating: 1, count: 300))
            }
            release.origin.put(release.base + "shop-1.1.0.zip", [UInt8](repeating: 1, count: 1000))
            let before = try snapshot(folder + "/bad")
            let report = try await release.updater(bad).run()
            #expect(report.outcomes.isEmpty && report.failures.count == 1, "\(report.outcomes)")
            #expect(try snapshot(folder + "/bad") == before)
        }
    }

    @Test("an index that is missing, not canonical, or another version's: refused, the update takes objects only and says why")
    func refusedIndex() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try DiffRelease(folder: folder)
            let other = FileDiffIndex(id: try PackageID("shop"), version: try SemanticVersion("1.0.0"), diffs: release.diffs)
            let cases: [(String, [UInt8]?, String)] = [
                ("missing", nil, "HTTP 404"),
                ("not canonical", try gzip(Array(String(decoding: FileDiffIndex(id: try PackageID("shop"), version: try SemanticVersion("1.1.0"), diffs: release.diffs).canonicalBytes, as: UTF8.self).replacingOccurrences(of: ",", with: ", ").utf8)), "not in canonical form"),
                ("another version's", try gzip(other.canonicalBytes), "diff index of shop 1.0.0"),
                ("not gzip", Array("not gzip".utf8), "not gzip"),
            ]
            for (index, (name, bytes, why)) in cases.enumerated() {
                if let bytes {
                    try release.publishIndex(bytes)
                } else {
                    try release.publishIndex(Array("gone".utf8))
                    release.origin.remove(release.base + DiffRelease.indexPath)
                }
                let store = try release.store("store-\(index)")
                try store.install(bundle: release.bundles["1.0.0"]!)
                let outcome = try await release.update(store)
                #expect(outcome.via == .objects && outcome.objects == 6 && outcome.diffs == 0, "\(name): \(outcome)")
                #expect(outcome.diffIndexFallback?.description.contains(why) == true, "\(name): \(String(describing: outcome.diffIndexFallback))")
            }
        }
    }

    @Test("a catalog without content.diffs updates exactly as before: no index asked for, no diff fields")
    func withoutDiffs() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try DiffRelease(folder: folder)
            let store = try release.store("store")
            try store.install(bundle: release.bundles["1.0.0"]!)
            let outcome = try await release.update(store, catalog: "plain.json")
            #expect(outcome.via == .objects && outcome.objects == 6, "\(outcome)")
            #expect(outcome.diffs == nil && outcome.diffBytes == nil && outcome.objectBytes == nil && outcome.diffsFallback == nil && outcome.diffIndexFallback == nil)
            #expect(!release.origin.requests.contains { $0.url.contains("/diffs/") })
            let json = String(decoding: try JSONEncoder().encode(outcome), as: UTF8.self)
            #expect(!json.contains("diff") && !json.contains("objectBytes"), "\(json)")
        }
    }

    @Test("the index is fetched beside the patch, not after it: the patch is answered only once the index is asked for")
    func indexWithPatch() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try DiffRelease(folder: folder)
            let patch = try #require(release.newest.content?.patch(from: try SemanticVersion("1.0.0")))
            release.origin.hold(release.base + patch.url, until: release.base + DiffRelease.indexPath)
            let store = try release.store("store")
            try store.install(bundle: release.bundles["1.0.0"]!)
            let outcome = try await release.update(store)
            #expect(release.origin.releasedByTimeout.isEmpty, "the index was asked for only after the patch")
            #expect(outcome.via == .objects && outcome.diffs == 3, "\(outcome)")
        }
    }

    @Test("an index past what the objects way could win with at its best (patch, index, a byte, three requests) is not asked for: the objects way weighs what it did before diffs")
    func indexNotWorthIt() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try DiffRelease(folder: folder)
            // Declared larger than the bundle: no way through it could beat the bundle.
            try release.publishIndex(declaredSize: release.newest.size)
            let store = try release.store("store")
            try store.install(bundle: release.bundles["1.0.0"]!)
            let outcome = try await release.update(store)
            #expect(outcome.via == .objects && outcome.objects == 6 && outcome.diffs == 0 && outcome.diffBytes == 0, "\(outcome)")
            #expect(!release.origin.requests.contains { $0.url.contains("/diffs/") })
        }
    }

    @Test("a diff cut off mid-body resumes with Range and If-Range, as objects do")
    func diffResumes() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try DiffRelease(folder: folder)
            let url = try release.diffURL(to: "assets/chunk-0.js")
            release.origin.cutNext(url, after: 20)
            let store = try release.store("store")
            try store.install(bundle: release.bundles["1.0.0"]!)
            let outcome = try await release.update(store)
            #expect(outcome.diffs == 3 && outcome.resumed, "\(outcome)")
            let tries = release.origin.requests.filter { $0.url == url }
            #expect(tries.count == 2 && tries[1].headers["Range"] == "bytes=20-" && tries[1].status == 206, "\(tries.map(\.headers))")
        }
    }
}
