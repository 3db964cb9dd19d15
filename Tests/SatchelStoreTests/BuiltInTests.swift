import Foundation
@testable import SatchelArchive
import SatchelBundle
import SatchelCore
@testable import SatchelStore
import SatchelTestSupport
import Testing
import SatchelPublishing

@Suite("Built-in bundles: the floor under every package")
struct BuiltInTests {
    /// The files of an app with a large text file (deflated) and a stored media file.
    static func app(_ version: String) -> [String: String] {
        [
            "index.html": "<h1>shop \(version)</h1>", "js/app.mjs": "export const v = '\(version)'",
            "js/vendor.js": String(repeating: "function f\(version.replacingOccurrences(of: ".", with: "_"))() { return 42 }\n", count: 4000),
            "media/promo.mp4": String(repeating: "\u{1}mp4 frame \(version)\u{2}", count: 9000),
        ]
    }

    /// Total bytes of every regular file under `root`.
    static func treeBytes(_ root: String) -> Int {
        let enumerator = FileManager.default.enumerator(atPath: root)
        var total = 0
        while let path = enumerator?.nextObject() as? String {
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: root + "/" + path),
                attributes[.type] as? FileAttributeType == .typeRegular
            else { continue }
            total += attributes[.size] as? Int ?? 0
        }
        return total
    }

    @Test("a built-in serves with nothing installed and nothing extracted; verified once, then trusted by its identity")
    func servesInPlace() throws {
        try withTemporaryFolder { folder throws in
            let bundle = try BundleFactory(folder: folder).bundle(version: "1.0.0", files: Self.app("1.0.0"))
            let configuration = StoreConfiguration(builtIns: [bundle])
            let store = try PackageStore(root: folder + "/store", configuration: configuration)
            #expect(store.builtInRefusals.isEmpty)
            #expect(store.builtInPackages.map(\.verifiedNow) == [true])
            #expect(try store.packageIDs() == [id("shop")])
            #expect(try store.state(of: id("shop")) == .builtIn(v("1.0.0")))
            let served = try store.servedPackages()
            #expect(served.map(\.label) == ["shop@1.0.0"])
            #expect(served.first?.folder == nil)
            let listed = try #require(try store.list().first)
            #expect((listed.state, listed.builtIn, listed.builtInBundle, listed.fileCount) == (ServingState.builtIn, "1.0.0", bundle, 4))
            // Nothing extracted: no version folder, no package state, and the store is a few small files.
            #expect(listing(store.layout.root + "/packages").isEmpty)
            #expect(Self.treeBytes(store.layout.root) < 4096)
            #expect(Self.treeBytes(store.layout.root) * 20 < (try readBytes(bundle)).count)
            // The next launch trusts the record: same bundle, same identity.
            let again = try PackageStore(root: folder + "/store", configuration: configuration)
            #expect(again.builtInPackages.map(\.verifiedNow) == [false])
            #expect(try again.check().isEmpty)
            // Touching the bundle changes its identity: verified again.
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_800_000_000)], ofItemAtPath: bundle)
            #expect(try PackageStore(root: folder + "/store", configuration: configuration).builtInPackages.map(\.verifiedNow) == [true])
        }
    }

    @Test("a folder of built-ins: each bundle is one package; a tar.gz is refused by name")
    func folderOfBuiltIns() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let builtIns = folder + "/builtins"
            try FileManager.default.createDirectory(atPath: builtIns, withIntermediateDirectories: true)
            for (source, name) in [
                (try factory.bundle(id: "shop", version: "1.0.0"), "shop.zip"),
                (try factory.bundle(id: "docs", version: "2.0.0", host: "docs.example"), "docs.zip"),
                (try factory.bundle(id: "blog", version: "1.0.0", host: "blog.example", format: .tarGzip), "blog.tar.gz"),
            ] { try FileManager.default.copyItem(atPath: source, toPath: builtIns + "/" + name) }
            let store = try PackageStore(root: folder + "/store", configuration: StoreConfiguration(builtIns: [builtIns, folder + "/missing"]))
            #expect(store.builtInPackages.map(\.id.value) == ["docs", "shop"])
            let refusals = store.builtInRefusals.map(\.description)
            #expect(refusals.contains("built-in bundle \(builtIns)/blog.tar.gz refused: cannot be served in place: it is a tar.gz; only a zip can be served without extracting it"))
            #expect(refusals.contains { $0.hasPrefix("built-in bundle \(folder)/missing refused: stat failed") })
            let problems = try store.check()
            #expect(problems.filter { $0.kind == .builtInRefused }.map(\.path).sorted() == [folder + "/missing", builtIns + "/blog.tar.gz"].sorted(), "\(problems)")
        }
    }

    @Test("a corrupted or foreign-signed built-in is refused by name; valid ones and installed versions still serve")
    func refusedByName() throws {
        try withTemporaryFolder { folder throws in
            let key = SigningKey.generate()
            let signed = BundleFactory(folder: folder, key: key)
            let docs = try signed.bundle(id: "docs", version: "1.0.0", host: "docs.example")
            let foreign = try BundleFactory(folder: folder, key: SigningKey.generate()).bundle(id: "blog", version: "1.0.0", host: "blog.example")
            // A stored file with one byte changed: same size, so only hashing can tell.
            let shop = try signed.bundle(version: "1.0.0", files: Self.app("1.0.0"))
            var bytes = try readBytes(shop)
            let entry = try #require(try ZipDirectory.read(path: shop).entries.first { $0.name == "media/promo.mp4" })
            bytes[Int(entry.dataOffset) + 100] ^= 0x20
            try Data(bytes).write(to: URL(fileURLWithPath: shop))

            let root = folder + "/store"
            // The shop also has an installed version, which keeps serving.
            try PackageStore(root: root, configuration: StoreConfiguration(trustedKeys: [key.verifyingKey])).install(bundle: signed.bundle(version: "0.9.0"))
            let store = try PackageStore(root: root, configuration: StoreConfiguration(trustedKeys: [key.verifyingKey], builtIns: [shop, docs, foreign]))
            #expect(store.builtInPackages.map(\.id.value) == ["docs"])
            let descriptions = store.builtInRefusals.map(\.description).sorted()
            #expect(descriptions.count == 2, "\(descriptions)")
            #expect(descriptions.contains("built-in bundle \(foreign) refused: signature does not match satchel.json for any trusted public key"))
            // The zip's own CRC catches the change first; either way the file is named.
            #expect(descriptions.contains("built-in bundle \(shop) (shop 1.0.0) refused: archive is corrupt at media/promo.mp4: CRC-32 does not match"), "\(descriptions)")
            #expect(try store.servedPackages().map(\.label) == ["docs@1.0.0", "shop@0.9.0"])
            // A refusal is not recorded: the next launch checks again (and refuses again).
            #expect(!FileManager.default.fileExists(atPath: store.layout.builtInRecord(id("shop"))))
            #expect(try store.check().map(\.kind) == [.builtInRefused, .builtInRefused])
        }
    }

    @Test("the built-in is the floor: an install over it can roll back to it; older versions are refused")
    func floor() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let builtIn = try factory.bundle(version: "1.0.0", files: Self.app("1.0.0"))
            let store = try PackageStore(root: folder + "/store", configuration: StoreConfiguration(builtIns: [builtIn]))
            let installed = try store.install(bundle: factory.bundle(version: "1.1.0"))
            #expect(installed.previous == "1.0.0")
            #expect(try store.state(of: id("shop")) == PackageState(active: v("1.1.0"), trial: v("1.1.0"), launches: 0, history: [v("1.0.0")]))
            #expect(try store.list().first?.fallback == "1.0.0")
            #expect(try store.rollback(id("shop")).active == v("1.0.0"))
            #expect(try store.servedPackages().first?.folder == nil, "served from the archive")
            #expect(throws: StoreError.noEarlierConfirmedVersion(id: "shop")) { try store.rollback(id("shop")) }

            let before = try snapshot(store.layout.root)
            #expect(throws: StoreError.olderThanBuiltIn(id: "shop", version: "0.9.0", builtIn: "1.0.0")) {
                try store.install(bundle: factory.bundle(version: "0.9.0"))
            }
            #expect(throws: StoreError.builtInReadOnly(id: "shop", version: "1.0.0")) { try store.remove(id("shop"), version: v("1.0.0")) }
            #expect(try snapshot(store.layout.root) == before)
            // The built-in's own bundle installs as "the built-in serves", extracting nothing.
            let same = try store.install(bundle: builtIn)
            #expect(same.builtIn == true && !same.extracted)
            // Different content under the built-in's version number is refused.
            #expect(throws: StoreError.self) { try store.install(bundle: factory.bundle(version: "1.0.0")) }
        }
    }

    @Test("a trial that fails over a built-in falls back to it; an app update with a newer built-in lifts the store")
    func failingTrialAndAppUpdate() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let old = try factory.bundle(version: "1.0.0")
            let root = folder + "/store"
            let store = try PackageStore(root: root, configuration: StoreConfiguration(maxTrialLaunches: 1, builtIns: [old]))
            try store.install(bundle: factory.bundle(version: "1.1.0"))
            _ = try store.beginLaunch()
            #expect(try store.beginLaunch().rolledBack == [TrialRollback(id: "shop", from: "1.1.0", to: "1.0.0")])
            try store.install(bundle: factory.bundle(version: "1.2.0"))
            try store.confirm(id("shop"))

            // The app is updated and ships 2.0.0 built in: it serves; what is older leaves the state and the disk.
            let new = try factory.bundle(version: "2.0.0")
            let updated = try PackageStore(root: root, configuration: StoreConfiguration(builtIns: [new]))
            #expect(try updated.state(of: id("shop")) == .builtIn(v("2.0.0")))
            #expect(try updated.storedState(of: id("shop")) == .builtIn(v("2.0.0")), "recovery wrote the lifted state")
            #expect(listing(root + "/packages/shop/versions").isEmpty)
            #expect(try updated.servedPackages().map(\.label) == ["shop@2.0.0"])
        }
    }

    @Test("a delta applies over a built-in base: unchanged files copied out of the archive and verified")
    func deltaOnBuiltIn() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            var next = Self.app("1.0.0")
            next["index.html"] = "<h1>shop 1.1.0</h1>"
            next["js/new.js"] = "new"
            let base = try factory.bundle(version: "1.0.0", files: Self.app("1.0.0"))
            let target = try factory.bundle(version: "1.1.0", files: next)
            let delta = try DeltaBuilder.build(from: base, to: target, outputFolder: folder + "/out").delta
            let store = try PackageStore(root: folder + "/store", configuration: StoreConfiguration(builtIns: [base]))
            let result = try store.install(bundle: delta)
            #expect(result.delta == DeltaApplied(from: "1.0.0", written: 2, linked: 0, copied: 3))
            #expect(try store.check().isEmpty)
            let reference = try PackageStore(root: folder + "/reference")
            try reference.install(bundle: target)
            #expect(try snapshot(store.layout.version(id("shop"), v("1.1.0"))) == snapshot(reference.layout.version(id("shop"), v("1.1.0"))))
            #expect(try store.rollback(id("shop")).active == v("1.0.0"))
        }
    }

    @Test("two built-ins of one package: the newer serves; a built-in claiming another's scope is refused")
    func duplicatesAndScopes() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let older = try factory.bundle(version: "1.0.0"), newer = try factory.bundle(version: "1.2.0")
            let squatter = try factory.bundle(id: "cart", version: "1.0.0")
            let store = try PackageStore(root: folder + "/store", configuration: StoreConfiguration(builtIns: [older, newer, squatter]))
            #expect(store.builtInPackages.map(\.manifest.version) == [v("1.2.0")])
            #expect(store.builtInRefusals.map(\.problem) == [
                .superseded(by: newer), .scopeConflict(otherID: "shop", host: "m.shop.example", pathPrefix: "/"),
            ])
            // Installing a package over another's built-in scope is refused as for installed packages.
            #expect(throws: StoreError.scopeConflict(id: "cart", otherID: "shop", host: "m.shop.example", pathPrefix: "/")) {
                try store.install(bundle: squatter)
            }
        }
    }
}
