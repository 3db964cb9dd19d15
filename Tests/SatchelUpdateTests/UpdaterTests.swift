import Foundation
import SatchelBundle
import SatchelCore
import SatchelHTTP
import SatchelStore
import SatchelTestSupport
import Testing
@testable import SatchelUpdate
import SatchelPublishing

/// A release folder on a fake CDN: two signed versions of one app, the delta between them, a signed catalog.
private struct Release {
    let key = SigningKey.generate()
    let origin = FakeOrigin()
    let base = "https://cdn.example/releases/"
    var v100 = ""
    var v110 = ""
    var delta: DeltaResult!

    init(folder: String) throws {
        let files = (0..<40).reduce(into: [String: String]()) { $0["assets/file\($1).js"] = String(repeating: "x\($1)", count: 400) }
        v100 = try pack(folder, "1.0.0", files.merging(["index.html": "<h1>1.0.0</h1>", "old.css": "body{}"]) { $1 })
        v110 = try pack(folder, "1.1.0", files.merging(["index.html": "<h1>1.1.0</h1>", "new.js": "export {}"]) { $1 })
        delta = try DeltaBuilder.build(from: v100, to: v110, outputFolder: folder + "/release")
        for path in [v100, v110, delta.delta] { origin.put(base + URL(fileURLWithPath: path).lastPathComponent, try readBytes(path)) }
    }

    func pack(_ folder: String, _ version: String, _ files: [String: String]) throws -> String {
        let source = folder + "/src-\(version)"
        try makeTree(source, files)
        let options = PackOptions(
            id: try PackageID("shop"), version: try SemanticVersion(version),
            scope: try Scope(hosts: [HostPattern("m.shop.example")], pathPrefix: PathPrefix("/")), signingKey: key,
            sourceDateEpoch: 1_700_000_000)
        return try Packer.pack(source: source, options: options, outputFolder: folder + "/release").bundle
    }

    func entry(_ path: String, _ version: String, minRuntime: SemanticVersion? = nil, deltas: [CatalogDelta] = []) throws -> CatalogEntry {
        let bytes = try readBytes(path)
        return CatalogEntry(
            id: try PackageID("shop"), version: try SemanticVersion(version), url: URL(fileURLWithPath: path).lastPathComponent,
            size: Int64(bytes.count), sha256: Digests.sha256Hex(bytes), minRuntime: minRuntime, deltas: deltas)
    }

    /// Publishes a catalog with the given entries, signed by `signer` (nil: unsigned).
    func publish(_ entries: [CatalogEntry], expires: Int64 = 4_000_000_000, signer: SigningKey?) throws {
        let bytes = try Catalog(expires: Timestamp(secondsSinceEpoch: expires), packages: entries).canonicalBytes
        origin.put(base + "catalog.json", bytes)
        if let signer { origin.put(base + "catalog.json.sig", Array(try signer.signature(for: bytes).base64.utf8)) }
    }

    var deltaEntry: CatalogDelta {
        CatalogDelta(from: try! SemanticVersion("1.0.0"), url: URL(fileURLWithPath: delta.delta).lastPathComponent, size: delta.size, sha256: delta.sha256)
    }

    func updater(_ store: PackageStore, allowDowngrade: Bool = false) -> Updater {
        Updater(store: store, fetcher: origin, options: UpdaterOptions(
            catalogURL: base + "catalog.json", trustedKeys: [key.verifyingKey], allowDowngrade: allowDowngrade,
            retry: RetryPolicy(attempts: 3, initialDelay: .milliseconds(1), maxDelay: .milliseconds(5))))
    }
}

/// Everything under a store folder except the updater's download cache and the lock, to prove a refusal changed nothing.
private func storeSnapshot(_ root: String) throws -> [String: [UInt8]] {
    try treeSnapshot(root) { $0 == "lock" || $0.hasPrefix("downloads") }
}

@Suite struct UpdaterTests {
    @Test("a catalog that offers a tar.gz bundle: refused by name (devices install zip only), the store unchanged byte for byte")
    func tarGzipOffered() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try Release(folder: folder)
            let source = folder + "/src-1.2.0"
            try makeTree(source, ["index.html": "<h1>1.2.0</h1>"])
            let tarball = try Packer.pack(source: source, options: PackOptions(
                id: try PackageID("shop"), version: try SemanticVersion("1.2.0"),
                scope: try Scope(hosts: [HostPattern("m.shop.example")], pathPrefix: PathPrefix("/")), format: .tarGzip,
                signingKey: release.key), outputFolder: folder + "/release").bundle
            release.origin.put(release.base + URL(fileURLWithPath: tarball).lastPathComponent, try readBytes(tarball))
            try release.publish([try release.entry(release.v100, "1.0.0"), try release.entry(tarball, "1.2.0")], signer: release.key)
            let store = try PackageStore(root: folder + "/store", configuration: StoreConfiguration(trustedKeys: [release.key.verifyingKey]))
            try store.install(bundle: release.v100)
            let before = try storeSnapshot(store.layout.root)

            let report = try await release.updater(store).run()
            let failure = try #require(report.failures.first)
            guard case .store(.invalidBundle(.unsupportedFormat(_, let format))) = failure.error else {
                Issue.record("expected the tar.gz refused by format, got \(failure.error)")
                return
            }
            #expect(format == "tar.gz")
            #expect("\(failure.error)".contains("zip"))
            #expect(try storeSnapshot(store.layout.root) == before)
            #expect(try store.state(of: PackageID("shop"))?.active.description == "1.0.0")
        }
    }

    @Test func installsFromTheDeltaAndIsThenUpToDateWithAConditionalCatalog() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try Release(folder: folder)
            #expect(release.delta.changed == 1 && release.delta.added == 1 && release.delta.deleted == 1 && release.delta.unchanged == 40)
            try release.publish([try release.entry(release.v100, "1.0.0"), try release.entry(release.v110, "1.1.0", deltas: [release.deltaEntry])], signer: release.key)
            let store = try PackageStore(root: folder + "/store", configuration: StoreConfiguration(trustedKeys: [release.key.verifyingKey]))
            try store.install(bundle: release.v100)
            try store.confirm(PackageID("shop"))

            let report = try await release.updater(store).run()
            #expect(report.failures.isEmpty)
            let outcome = try #require(report.outcomes.first)
            #expect(outcome.action == .installed && outcome.via == .delta && outcome.from == "1.0.0" && outcome.to == "1.1.0")
            #expect(outcome.downloadedBytes == release.delta.size)
            #expect(outcome.install?.delta.map { [$0.written, $0.linked, $0.copied] } == [2, 40, 0] && outcome.install?.delta?.from == "1.0.0")
            let state = try #require(try store.state(of: PackageID("shop")))
            #expect(state.active.description == "1.1.0" && state.trial?.description == "1.1.0")
            #expect(try store.check().isEmpty)
            #expect(listing(folder + "/store/downloads").allSatisfy { $0.hasPrefix("catalog-") || $0 == UpdaterRecord.fileName })

            let again = try await release.updater(store).run()
            #expect(again.catalog.notModified)
            #expect(again.outcomes.first?.action == .upToDate)
            #expect(release.origin.requests.filter { $0.url.hasSuffix("catalog.json") }.last?.headers["If-None-Match"] != nil)
        }
    }

    @Test("an updater given no runtime is this library's: a version whose minRuntime is newer than SatchelRuntime is not installed")
    func theRuntimeIsSatchels() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try Release(folder: folder)
            let newer = try SemanticVersion("\(SatchelRuntime.version.major + 1).0.0")
            try release.publish([
                try release.entry(release.v100, "1.0.0"), try release.entry(release.v110, "1.1.0", minRuntime: newer, deltas: [release.deltaEntry]),
            ], signer: release.key)
            let store = try PackageStore(root: folder + "/store", configuration: StoreConfiguration(trustedKeys: [release.key.verifyingKey]))
            try store.install(bundle: release.v100)
            try store.confirm(PackageID("shop"))

            let report = try await release.updater(store).run()
            #expect(report.outcomes.allSatisfy { $0.action != .installed }, "\(report.outcomes)")
            #expect(try store.state(of: PackageID("shop"))?.active.description == "1.0.0")
        }
    }

    @Test func aVersionThatFailedHereIsNotInstalledAgainAutomatically() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try Release(folder: folder)
            try release.publish([try release.entry(release.v100, "1.0.0"), try release.entry(release.v110, "1.1.0", deltas: [release.deltaEntry])], signer: release.key)
            let store = try PackageStore(root: folder + "/store", configuration: StoreConfiguration(trustedKeys: [release.key.verifyingKey]))
            try store.install(bundle: release.v100)
            try store.confirm(PackageID("shop"))
            try store.install(bundle: release.v110)
            try store.rollback(PackageID("shop"))  // 1.1.0 failed on this device
            let before = try storeSnapshot(store.layout.root)
            let report = try await release.updater(store).run()
            // Not an error on every check: the device stays where it is, and its reports say 1.1.0 failed here.
            #expect(report.failures.isEmpty)
            #expect(report.outcomes.map(\.action) == [.upToDate] && report.outcomes.first?.to == "1.0.0" && report.outcomes.first?.release == "1.1.0")
            #expect(!release.origin.requests.contains { $0.url.hasSuffix(".zip") }, "only the catalog was fetched, no bundle")
            #expect(try storeSnapshot(store.layout.root) == before)
            // An explicit reinstall may bring it back.
            #expect(try store.install(bundle: release.v110, retryingFailed: true).version.description == "1.1.0")
        }
    }

    @Test func downloadsTheCatalogNoLongerListsAreRemoved() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try Release(folder: folder)
            try release.publish([try release.entry(release.v110, "1.1.0", deltas: [release.deltaEntry])], signer: release.key)
            let store = try PackageStore(root: folder + "/store")
            try store.install(bundle: release.v100)
            let downloads = store.layout.root + "/downloads"
            try FileManager.default.createDirectory(atPath: downloads, withIntermediateDirectories: true)
            let stale = String(repeating: "e", count: 64)
            for name in ["\(stale).part", "\(stale).part.validator", "\(stale).zip", "notes.txt"] {
                try Data("x".utf8).write(to: URL(fileURLWithPath: downloads + "/" + name))
            }
            // A partial of the delta the catalog lists, with its validator: kept, and resumed from.
            let delta = try readBytes(release.delta.delta)
            try Data(delta.prefix(100)).write(to: URL(fileURLWithPath: downloads + "/\(release.delta.sha256).part"))
            try Data("\"\(Digests.sha256Hex(delta))\"".utf8).write(to: URL(fileURLWithPath: downloads + "/\(release.delta.sha256).part.validator"))
            let report = try await release.updater(store).run()
            #expect(report.outcomes.first?.resumed == true && report.outcomes.first?.via == .delta)
            #expect(report.outcomes.first?.downloadedBytes == Int64(delta.count - 100))
            #expect(listing(downloads).filter { !$0.hasPrefix("catalog-") } == ["notes.txt", UpdaterRecord.fileName])
        }
    }

    @Test func damagedBaseFallsBackToTheFullBundle() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try Release(folder: folder)
            try release.publish([try release.entry(release.v110, "1.1.0", deltas: [release.deltaEntry])], signer: release.key)
            let store = try PackageStore(root: folder + "/store")
            try store.install(bundle: release.v100)
            try Data("tampered".utf8).write(to: URL(fileURLWithPath: store.layout.version(PackageID("shop"), SemanticVersion("1.0.0")) + "/assets/file3.js"))
            let report = try await release.updater(store).run()
            let outcome = try #require(report.outcomes.first)
            #expect(outcome.via == .full)
            #expect(outcome.deltaFallback?.description.contains("damaged file \"assets/file3.js\"") == true)
            #expect(try store.state(of: PackageID("shop"))?.active.description == "1.1.0")
        }
    }

    @Test func refusalsLeaveTheStoreUnchanged() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try Release(folder: folder)
            let store = try PackageStore(root: folder + "/store")
            try store.install(bundle: release.v100)
            let before = try storeSnapshot(store.layout.root)
            let url = release.base + "catalog.json"
            let entries = [try release.entry(release.v110, "1.1.0", deltas: [release.deltaEntry])]

            try release.publish(entries, expires: 1_000_000_000, signer: release.key)
            await #expect(throws: UpdateError.catalogExpired(url: url, expires: Timestamp(secondsSinceEpoch: 1_000_000_000), now: Timestamp(secondsSinceEpoch: 1_900_000_000))) {
                try await release.updater(store).run(now: Timestamp(secondsSinceEpoch: 1_900_000_000))
            }
            try release.publish(entries, signer: SigningKey.generate())
            await #expect(throws: UpdateError.catalogSignatureInvalid(url: url)) { try await release.updater(store).run() }

            let unsigned = FakeOrigin()
            unsigned.put(url, try Catalog(expires: Timestamp(secondsSinceEpoch: 4_000_000_000), packages: entries).canonicalBytes)
            await #expect(throws: UpdateError.catalogUnsigned(url: url)) {
                try await Updater(store: store, fetcher: unsigned, options: UpdaterOptions(catalogURL: url, trustedKeys: [release.key.verifyingKey])).run()
            }

            // A bundle whose bytes are not the ones the catalog lists.
            var wrong = try release.entry(release.v110, "1.1.0")
            wrong.sha256 = String(repeating: "0", count: 64)
            try release.publish([wrong], signer: release.key)
            let corrupted = try await release.updater(store).run()
            #expect(corrupted.failures.count == 1)
            if case .checksumMismatch = corrupted.failures.first?.error {} else { Issue.record("expected a checksum mismatch, got \(corrupted.failures)") }

            // The catalog lists 1.2.0 at the URL of the 1.1.0 bundle: refused before the store sees it.
            var mislabelled = try release.entry(release.v110, "1.1.0")
            mislabelled.version = try SemanticVersion("1.2.0")
            try release.publish([mislabelled], signer: release.key)
            let mismatch = try await release.updater(store).run()
            #expect(mismatch.failures.first?.error == .catalogMismatch(url: release.base + "shop-1.1.0.zip", catalog: "shop 1.2.0", bundle: "shop 1.1.0"))
            #expect(try storeSnapshot(store.layout.root) == before)

            // 1.1.0 installed; a catalog whose newest is 1.0.0 is a downgrade.
            try store.install(bundle: release.v110)
            let installed = try storeSnapshot(store.layout.root)
            try release.publish([try release.entry(release.v100, "1.0.0")], signer: release.key)
            let downgrade = try await release.updater(store).run()
            #expect(downgrade.failures.first?.error == .plan(.downgrade(id: "shop", active: "1.1.0", offered: "1.0.0")))
            #expect(try storeSnapshot(store.layout.root) == installed)
            let allowed = try await release.updater(store, allowDowngrade: true).run()
            #expect(allowed.outcomes.first?.to == "1.0.0")
        }
    }

    @Test func refusedCatalogsChangeNothing() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try Release(folder: folder)
            let store = try PackageStore(root: folder + "/store")
            try store.install(bundle: release.v100)
            let before = try storeSnapshot(store.layout.root)
            try release.publish([try release.entry(release.v110, "1.1.0")], signer: SigningKey.generate())
            await #expect(throws: UpdateError.self) { try await release.updater(store).run() }
            #expect(try storeSnapshot(store.layout.root) == before)
        }
    }
}

/// Four versions of one app, published as `satchel catalog` publishes them (bundles, objects, manifest patches),
/// served by the fake CDN: each version changes a few of its 60 files.
struct ContentRelease {
    let key = SigningKey.generate()
    let origin = FakeOrigin()
    let base = "https://cdn.example/releases/"
    let folder: String
    var bundles: [String: String] = [:]
    var catalog: Catalog!

    init(folder: String) throws {
        self.folder = folder
        // Chunks of 8 KB of hex, about 4 KB compressed: a bundle heavy enough that a few objects, at 25,000 bytes a
        // request (UpdatePlan.bytesPerRequest), still weigh less than it.
        func chunk(_ index: Int, _ version: String) -> String {
            "export const chunk\(index) = \"" + hexText(seed: "\(version)-\(index)", count: 8_000) + "\";"
        }
        var files = (0..<60).reduce(into: [String: String]()) { $0["assets/chunk-\($1).js"] = chunk($1, "1.0.0") }
        files["index.html"] = "<h1>1.0.0</h1>"
        for (index, version) in ["1.0.0", "1.1.0", "1.2.0", "1.3.0"].enumerated() {
            if index > 0 {
                files["index.html"] = "<h1>\(version)</h1>"
                files["assets/chunk-\(index).js"] = chunk(index, version)
                files["assets/new-\(index).js"] = "export default \(index);"
            }
            bundles[version] = try pack(version, files)
        }
        let contents = try ReleaseFolder.read(folder + "/release", baseURL: "", steps: false)
        catalog = try Catalog(expires: Timestamp(secondsSinceEpoch: 4_000_000_000), packages: contents.entries)
        let bytes = catalog.canonicalBytes
        origin.put(base + "catalog.json", bytes)
        origin.put(base + "catalog.json.sig", Array(try key.signature(for: bytes).base64.utf8))
        try origin.putFiles(of: folder + "/release", at: base)
    }

    func pack(_ version: String, _ files: [String: String]) throws -> String {
        let source = folder + "/src-\(version)"
        try makeTree(source, files)
        let options = PackOptions(
            id: try PackageID("shop"), version: try SemanticVersion(version), scope: try Scope(hosts: [HostPattern("m.shop.example")]),
            signingKey: key, sourceDateEpoch: 1_700_000_000)
        return try Packer.pack(source: source, options: options, outputFolder: folder + "/release").bundle
    }

    var newest: CatalogEntry { catalog.packages.last! }

    /// The URL of the object of `path` in the newest version.
    func objectURL(of path: String) throws -> String {
        let manifest = try BundleReader(path: bundles["1.3.0"]!).manifest
        let file = try #require(manifest.files.first { $0.path.value == path })
        let enumerator = FileManager.default.enumerator(atPath: folder + "/release/objects")!
        while let relative = enumerator.nextObject() as? String {
            if relative.contains(file.sha256) { return base + "objects/" + relative }
        }
        throw CocoaError(.fileNoSuchFile)
    }

    func store(_ name: String, builtIn: String? = nil) throws -> PackageStore {
        try PackageStore(root: folder + "/" + name, configuration: StoreConfiguration(trustedKeys: [key.verifyingKey], builtIns: builtIn.map { [$0] } ?? []))
    }

    func updater(_ store: PackageStore, fetcher: (any NetworkFetcher)? = nil, concurrency: Int = UpdatePlan.requestsInFlight) -> Updater {
        Updater(store: store, fetcher: fetcher ?? origin, options: UpdaterOptions(
            catalogURL: base + "catalog.json", trustedKeys: [key.verifyingKey],
            retry: RetryPolicy(attempts: 3, initialDelay: .milliseconds(1), maxDelay: .milliseconds(5)), concurrency: concurrency))
    }

    /// The objects 1.3.0 needs on a device holding 1.0.0 (index.html, three chunks, three new files), as URLs.
    func objectURLs() throws -> [String] {
        try ["index.html", "assets/chunk-1.js", "assets/chunk-2.js", "assets/chunk-3.js", "assets/new-1.js", "assets/new-2.js", "assets/new-3.js"]
            .map(objectURL(of:))
    }
}

/// `count` characters of hex, the same for the same seed: text that compresses about 2:1, as minified code does.
func hexText(seed: String, count: Int) -> String {
    var text = ""
    var block = Digests.sha256Hex(Array(seed.utf8))
    while text.count < count {
        text += block
        block = Digests.sha256Hex(Array(block.utf8))
    }
    return String(text.prefix(count))
}

@Suite("Updates from any base: objects and manifest patches")
struct ObjectsUpdateTests {
    @Test("three versions behind: the patch from the installed version and only the changed contents are fetched; the version installed is the published one")
    func fromThreeBehind() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try ContentRelease(folder: folder)
            let store = try release.store("store")
            try store.install(bundle: release.bundles["1.0.0"]!)
            let report = try await release.updater(store).run()
            let outcome = try #require(report.outcomes.first)
            #expect(report.failures.isEmpty)
            #expect(outcome.via == .objects && outcome.patchFrom == "1.0.0" && outcome.to == "1.3.0", "\(outcome)")
            // index.html, three changed chunks and three new files: 7 contents.
            #expect(outcome.objects == 7)
            #expect(outcome.downloadedBytes < release.newest.size / 5, "\(outcome.downloadedBytes) of a \(release.newest.size)-byte bundle")
            #expect(try store.installedManifest(PackageID("shop"), SemanticVersion("1.3.0")) == (try BundleReader(path: release.bundles["1.3.0"]!).manifest))
            #expect(try store.check().isEmpty)
            let fetched = release.origin.requests.map(\.url)
            #expect(!fetched.contains { $0.hasSuffix(".zip") }, "no bundle or delta was downloaded: \(fetched)")
        }
    }

    @Test("from the built-in bundle: the rest is copied out of its archive")
    func fromBuiltIn() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try ContentRelease(folder: folder)
            let store = try release.store("store", builtIn: release.bundles["1.1.0"]!)
            let outcome = try #require(try await release.updater(store).run().outcomes.first)
            #expect(outcome.via == .objects && outcome.patchFrom == "1.1.0", "\(outcome)")
            #expect(outcome.install?.delta?.from == "1.1.0" && (outcome.install?.delta?.copied ?? 0) > 50, "\(String(describing: outcome.install?.delta))")
            #expect(try store.check().isEmpty)
        }
    }

    @Test("a connection broken in the middle of an object: that object resumes, the version installs")
    func resumes() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try ContentRelease(folder: folder)
            let store = try release.store("store")
            try store.install(bundle: release.bundles["1.2.0"]!)
            let object = try release.objectURL(of: "assets/chunk-3.js")
            release.origin.cutNext(object, after: 10)
            let outcome = try #require(try await release.updater(store).run().outcomes.first)
            #expect(outcome.via == .objects && outcome.resumed, "\(outcome)")
            let tries = release.origin.requests.filter { $0.url == object }
            #expect(tries.count == 2 && tries[1].headers["Range"] == "bytes=10-", "\(tries.map(\.headers))")
            #expect(try store.check().isEmpty)
        }
    }

    @Test("a corrupted object is refused: the update falls back to the delta or the bundle; with those corrupted too, nothing installed changes")
    func corruptObject() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try ContentRelease(folder: folder)
            let store = try release.store("store")
            try store.install(bundle: release.bundles["1.2.0"]!)
            let object = try release.objectURL(of: "assets/chunk-3.js")
            release.origin.put(object, Array("not the object".utf8) + [UInt8](repeating: 7, count: 200))
            let outcome = try #require(try await release.updater(store).run().outcomes.first)
            #expect(outcome.via == .full && (outcome.objectsFallback?.description ?? "").contains(object), "\(outcome)")
            // The bytes spent on the patch and on the refused object count, besides the bundle's.
            let patch = try #require(release.newest.content?.patch(from: try SemanticVersion("1.2.0")))
            #expect(outcome.downloadedBytes > release.newest.size + patch.size, "\(outcome.downloadedBytes)")
            #expect(try store.check().isEmpty)

            let again = try release.store("store2")
            try again.install(bundle: release.bundles["1.2.0"]!)
            release.origin.put(release.base + "shop-1.3.0.zip", [UInt8](repeating: 1, count: 1000))
            let before = try treeSnapshot(folder + "/store2") { $0 == "lock" || $0.hasPrefix("downloads") }
            let report = try await release.updater(again).run()
            #expect(report.outcomes.isEmpty && report.failures.count == 1)
            #expect(try treeSnapshot(folder + "/store2") { $0 == "lock" || $0.hasPrefix("downloads") } == before)
        }
    }
}
