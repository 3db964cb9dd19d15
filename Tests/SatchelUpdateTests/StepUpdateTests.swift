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

/// Three versions of one app, published by `satchel catalog`'s own code (``ReleaseFolder/read``: bundles, objects,
/// patches, diffs and steps) on the fake CDN. Each version edits three of 40 chunks of 30 KB a little, changes
/// index.html and adds a module: the newest entry names its step from 1.1.0.
struct StepRelease {
    let key = SigningKey.generate()
    let origin = FakeOrigin()
    let base = "https://cdn.example/releases/"
    let folder: String
    var bundles: [String: String] = [:]
    var manifests: [String: Manifest] = [:]
    var catalog: Catalog!

    init(folder: String, builtIns: [String] = []) throws {
        self.folder = folder
        func chunk(_ index: Int) -> String { "export const chunk\(index) = \"" + hexText(seed: "chunk-\(index)", count: 30_000) + "\";" }
        var files = (0..<40).reduce(into: [String: String]()) { $0["assets/chunk-\($1).js"] = chunk($1) }
        for (step, version) in ["1.0.0", "1.1.0", "1.2.0"].enumerated() {
            if step > 0 {
                for index in (step * 3)..<(step * 3 + 3) {
                    var characters = Array(files["assets/chunk-\(index).js"]!)
                    let mark = "EDITED-\(version)-\(index)"
                    characters.replaceSubrange(10_000..<10_000 + mark.count, with: mark)
                    files["assets/chunk-\(index).js"] = String(characters)
                }
                files["assets/new-\(step).js"] = "export default \(step);"
            }
            files["index.html"] = "<h1>\(version)</h1>"
            let source = folder + "/src-\(version)"
            try makeTree(source, files)
            let options = PackOptions(
                id: try PackageID("shop"), version: try SemanticVersion(version), scope: try Scope(hosts: [HostPattern("m.shop.example")]),
                signingKey: key, sourceDateEpoch: 1_700_000_000)
            bundles[version] = try Packer.pack(source: source, options: options, outputFolder: folder + "/release").bundle
            manifests[version] = try BundleReader(path: bundles[version]!).manifest
        }
        let shipped = try builtIns.map { try ReleaseFolder.BuiltIn(parsing: $0) }
        try publish(try ReleaseFolder.read(folder + "/release", baseURL: "", builtIns: shipped).entries)
    }

    /// Uploads every file of the release folder and a catalog of `entries`.
    mutating func publish(_ entries: [CatalogEntry]) throws {
        catalog = try Catalog(expires: Timestamp(secondsSinceEpoch: 4_000_000_000), packages: entries)
        let bytes = catalog.canonicalBytes
        origin.put(base + "catalog.json", bytes)
        origin.put(base + "catalog.json.sig", Array(try key.signature(for: bytes).base64.utf8))
        try origin.putFiles(of: folder + "/release", at: base)
    }

    var newest: CatalogEntry { catalog.packages.first { $0.version.description == "1.2.0" }! }

    func step(from version: String) throws -> CatalogStep {
        let found = newest.content?.steps?.first { $0.from.description == version }
        return try #require(found)
    }

    func store(_ name: String, builtIn: String? = nil) throws -> PackageStore {
        try PackageStore(root: folder + "/" + name, configuration: StoreConfiguration(trustedKeys: [key.verifyingKey], builtIns: builtIn.map { [$0] } ?? []))
    }

    /// Updates `store` and returns its one outcome, checking that 1.2.0 is installed byte for byte.
    func update(_ store: PackageStore) async throws -> UpdateOutcome {
        let updater = Updater(store: store, fetcher: origin, options: UpdaterOptions(
            catalogURL: base + "catalog.json", trustedKeys: [key.verifyingKey],
            retry: RetryPolicy(attempts: 2, initialDelay: .milliseconds(1), maxDelay: .milliseconds(5))))
        let report = try await updater.run()
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.error.description })")
        let outcome = try #require(report.outcomes.first)
        #expect(try store.installedManifest(PackageID("shop"), SemanticVersion("1.2.0")) == manifests["1.2.0"])
        #expect(try store.check().isEmpty)
        return outcome
    }
}

@Suite("Updates through a step (docs/formats.md, \"Steps\")")
struct StepUpdateTests {
    @Test("the catalog names steps on the newest entry only, from its predecessor; the step holds the patch, the edited chunks as diffs and the rest whole")
    func published() throws {
        try withTemporaryFolder { folder in
            let release = try StepRelease(folder: folder)
            #expect(release.catalog.packages.filter { $0.content?.steps != nil }.map(\.version.description) == ["1.2.0"])
            let step = try release.step(from: "1.1.0")
            #expect(release.newest.content?.steps?.count == 1)
            #expect(step.url.hasPrefix("steps/shop/1.2.0/from-1.1.0-") && step.url.hasSuffix(".step"))
            let bytes = try readBytes(folder + "/release/" + step.url)
            #expect(Int64(bytes.count) == step.size && Digests.sha256Hex(bytes) == step.sha256)
            #expect(step.url.contains(String(step.sha256.prefix(16))), "named by its bytes")
            let parsed = try StepFile.parse(bytes)
            #expect(parsed.step.from.description == "1.1.0" && parsed.step.fromContentHash == release.manifests["1.1.0"]!.contentHash)
            #expect(parsed.patch.from?.version.description == "1.1.0")
            // Three edited chunks as diffs; index.html and the new module whole.
            #expect(parsed.step.parts.filter(\.isDiff).count == 3 && parsed.step.parts.filter { !$0.isDiff }.count == 2, "\(parsed.step.parts)")
            // The same folder published again: the very same step, by name and bytes.
            let again = try ReleaseFolder.read(folder + "/release", baseURL: "").entries.first { $0.version.description == "1.2.0" }
            #expect(again?.content?.steps == release.newest.content?.steps)
            // Without steps, a copy of the bundles publishes the same entries but for content.steps, and the same
            // patches, indexes and objects byte for byte: what older updaters read is unchanged.
            let bare = folder + "/bare"
            try FileManager.default.createDirectory(atPath: bare, withIntermediateDirectories: true)
            for name in try FileManager.default.contentsOfDirectory(atPath: folder + "/release") where name.hasSuffix(".zip") {
                try FileManager.default.copyItem(atPath: folder + "/release/" + name, toPath: bare + "/" + name)
            }
            let withoutSteps = try ReleaseFolder.read(bare, baseURL: "", steps: false).entries.sorted { $0.version < $1.version }
            let stripped = release.catalog.packages.sorted { $0.version < $1.version }.map { entry in
                var entry = entry
                entry.content?.steps = nil
                return entry
            }
            #expect(withoutSteps == stripped)
            for sub in ["patches", "objects", "diffs"] {
                let published = try treeSnapshot(folder + "/release/" + sub)
                #expect(try treeSnapshot(bare + "/" + sub) == published, "\(sub) differ")
            }
        }
    }

    @Test("from the previous release: one download after the catalog, byte for byte, and nothing left in downloads")
    func fromPredecessor() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try StepRelease(folder: folder)
            let store = try release.store("store")
            try store.install(bundle: release.bundles["1.1.0"]!)
            let outcome = try await release.update(store)
            let step = try release.step(from: "1.1.0")
            #expect(outcome.via == .step && outcome.stepFrom == "1.1.0", "\(outcome)")
            #expect(outcome.diffs == 3 && outcome.objects == 2 && outcome.diffsFallback == 0 && outcome.stepFallback == nil, "\(outcome)")
            #expect(outcome.downloadedBytes == step.size)
            let asked = release.origin.requests.map(\.url).filter { !$0.hasSuffix("catalog.json") && !$0.hasSuffix(".sig") }
            #expect(asked == [release.base + step.url], "\(asked)")
            #expect(listing(folder + "/store/downloads/objects").isEmpty)
            let json = String(decoding: try JSONEncoder().encode(outcome), as: UTF8.self)
            #expect(json.contains(#""via":"step""#) && json.contains(#""stepFrom":"1.1.0""#))
        }
    }

    @Test("a step cut off midway resumes with Range and If-Range, as every download does")
    func resumes() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try StepRelease(folder: folder)
            let step = try release.step(from: "1.1.0")
            release.origin.cutNext(release.base + step.url, after: Int(step.size / 2))
            let store = try release.store("store")
            try store.install(bundle: release.bundles["1.1.0"]!)
            let outcome = try await release.update(store)
            #expect(outcome.via == .step && outcome.resumed && outcome.downloadedBytes == step.size, "\(outcome)")
            let asked = release.origin.requests.filter { $0.url == release.base + step.url }
            #expect(asked.count == 2 && asked[1].headers["Range"] == "bytes=\(step.size / 2)-" && asked[1].headers["If-Range"] != nil && asked[1].status == 206,
                    "\(asked.map { "\($0.status) \($0.headers)" })")
        }
    }

    @Test("from the built-in the device runs: the diffs read their sources out of the app's archive")
    func fromBuiltIn() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try StepRelease(folder: folder, builtIns: ["shop@1.0.0"])
            #expect(release.newest.content?.steps?.map(\.from.description) == ["1.0.0", "1.1.0"])
            let store = try release.store("store", builtIn: release.bundles["1.0.0"]!)
            let outcome = try await release.update(store)
            #expect(outcome.via == .step && outcome.stepFrom == "1.0.0" && outcome.diffs == 6 && outcome.objects == 3, "\(outcome)")
            #expect(outcome.downloadedBytes == (try release.step(from: "1.0.0")).size)
        }
    }

    @Test("a device two releases back has no step from its version: it takes the objects way")
    func furtherBack() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try StepRelease(folder: folder)
            let store = try release.store("store")
            try store.install(bundle: release.bundles["1.0.0"]!)
            let outcome = try await release.update(store)
            #expect(outcome.via == .objects && outcome.stepFallback == nil, "\(outcome)")
        }
    }

    @Test("a damaged step is refused by its checksum: the objects way installs the same version")
    func damaged() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try StepRelease(folder: folder)
            let step = try release.step(from: "1.1.0")
            var bytes = try readBytes(folder + "/release/" + step.url)
            bytes[bytes.count / 2] ^= 0xFF
            release.origin.put(release.base + step.url, bytes)
            let store = try release.store("store")
            try store.install(bundle: release.bundles["1.1.0"]!)
            let outcome = try await release.update(store)
            #expect(outcome.via == .objects, "\(outcome)")
            guard case .checksumMismatch? = outcome.stepFallback else {
                Issue.record("the step should be refused by its SHA-256: \(String(describing: outcome.stepFallback))")
                return
            }
            #expect(outcome.downloadedBytes > step.size, "the damaged step's bytes count too")
        }
    }

    @Test("a part the publisher got wrong (a diff that makes other bytes) is refused alone: its file's object is fetched")
    func refusedPart() async throws {
        try await withTemporaryFolder { folder async throws in
            var release = try StepRelease(folder: folder)
            let step = try release.step(from: "1.1.0")
            let bytes = try readBytes(folder + "/release/" + step.url)
            let parsed = try StepFile.parse(bytes)
            let firstDiff = parsed.step.parts.firstIndex { $0.isDiff }
            let index = try #require(firstDiff)
            // The diff's last literal changed: a well-formed diff whose result has another SHA-256.
            var rewritten = bytes
            let end = Int(parsed.layout.parts[index] + parsed.step.parts[index].size)
            rewritten[end - 1] ^= 0x01
            let path = "steps/shop/1.2.0/rewritten.step"
            try Data(rewritten).write(to: URL(fileURLWithPath: folder + "/release/" + path))
            var entries = release.catalog.packages
            let newest = try #require(entries.firstIndex { $0.version.description == "1.2.0" })
            entries[newest].content?.steps = [CatalogStep(from: step.from, url: path, size: Int64(rewritten.count), sha256: Digests.sha256Hex(rewritten))]
            try release.publish(entries)
            let store = try release.store("store")
            try store.install(bundle: release.bundles["1.1.0"]!)
            let outcome = try await release.update(store)
            #expect(outcome.via == .step && outcome.diffs == 2 && outcome.diffsFallback == 1 && outcome.objects == 3, "\(outcome)")
            #expect(outcome.diffRefusals?.count == 1)
            let object = parsed.patch.set.first { $0.file.sha256 == parsed.step.parts[index].to }!.object
            #expect(release.origin.requests.map(\.url).contains(release.base + "objects/" + object.path(forContent: parsed.step.parts[index].to)))
        }
    }

    @Test("a step from a version the device holds with other bytes (a rebuilt release) is refused from its header, and the objects way installs")
    func otherBase() async throws {
        try await withTemporaryFolder { folder async throws in
            var release = try StepRelease(folder: folder)
            var entries = release.catalog.packages
            let newest = try #require(entries.firstIndex { $0.version.description == "1.2.0" })
            // The step from 1.1.0, relabelled as from 1.0.0: its header and patch say 1.1.0.
            let step = try release.step(from: "1.1.0")
            entries[newest].content?.steps = [CatalogStep(from: try SemanticVersion("1.0.0"), url: step.url, size: step.size, sha256: step.sha256)]
            try release.publish(entries)
            let store = try release.store("store")
            try store.install(bundle: release.bundles["1.0.0"]!)
            let outcome = try await release.update(store)
            #expect(outcome.via == .objects, "\(outcome)")
            guard case .content? = outcome.stepFallback else {
                Issue.record("the step should be refused for its base: \(String(describing: outcome.stepFallback))")
                return
            }
        }
    }
}
