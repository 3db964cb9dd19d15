import Foundation
import SatchelBundle
import SatchelCore
@testable import SatchelStore
import SatchelTestSupport
import Testing
import SatchelPublishing

@Suite struct DeltaInstallTests {
    let base = ["index.html": "<h1>1.0</h1>", "keep/a.js": "a", "keep/b.css": "b", "old.txt": "old"]
    let next = ["index.html": "<h1>1.1</h1>", "keep/a.js": "a", "keep/b.css": "b", "new/c.js": "c"]

    @Test func deltaHoldsOnlyChangesAndInstallsTheSameVersionAsTheFullBundle() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder, key: SigningKey.generate())
            let v1 = try factory.bundle(version: "1.0.0", files: base)
            let v2 = try factory.bundle(version: "1.1.0", files: next)
            let result = try DeltaBuilder.build(from: v1, to: v2, outputFolder: folder + "/out")
            #expect(URL(fileURLWithPath: result.delta).lastPathComponent == "shop-1.0.0-1.1.0.zip")
            #expect((result.added, result.changed, result.deleted, result.unchanged) == (1, 1, 1, 2))
            let reader = try BundleReader(path: result.delta, trustedKeys: [factory.key!.verifyingKey])
            let full = try BundleReader(path: v2)
            #expect(reader.manifestBytes == full.manifestBytes && reader.signatureBytes == full.signatureBytes)
            #expect(reader.delta?.deleted.map(\.value) == ["old.txt"])
            var sink = DiscardingSink()
            #expect(try reader.readFiles(into: &sink).map(\.value) == ["index.html", "new/c.js"])
            // Deterministic: the same inputs give the same delta bytes.
            let again = try DeltaBuilder.build(from: v1, to: v2, outputFolder: folder + "/again")
            #expect(again.sha256 == result.sha256)

            let store = try PackageStore(root: folder + "/store", configuration: StoreConfiguration(trustedKeys: [factory.key!.verifyingKey]))
            try store.install(bundle: v1)
            let installed = try store.install(bundle: result.delta)
            #expect(installed.delta == DeltaApplied(from: "1.0.0", written: 2, linked: 2, copied: 0))
            #expect(try store.check().isEmpty)
            let reference = try PackageStore(root: folder + "/reference")
            try reference.install(bundle: v2)
            let deltaFolder = store.layout.version(id("shop"), v("1.1.0"))
            let expected = try snapshot(reference.layout.version(id("shop"), v("1.1.0")))
            #expect(try snapshot(deltaFolder) == expected)
            // Unchanged files share the base's inode; the base is untouched.
            let linked = try FileManager.default.attributesOfItem(atPath: deltaFolder + "/keep/a.js")[.systemFileNumber] as? Int
            let original = try FileManager.default.attributesOfItem(atPath: store.layout.version(id("shop"), v("1.0.0")) + "/keep/a.js")[.systemFileNumber] as? Int
            #expect(linked != nil && linked == original)
            #expect(try readBytes(store.layout.version(id("shop"), v("1.0.0")) + "/old.txt") == Array("old".utf8))
        }
    }

    @Test func refusesDeltasThatDoNotFitTheStoreAndChangesNothing() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let v1 = try factory.bundle(version: "1.0.0", files: base)
            let v2 = try factory.bundle(version: "1.1.0", files: next)
            let delta = try DeltaBuilder.build(from: v1, to: v2, outputFolder: folder + "/out").delta

            let empty = try PackageStore(root: folder + "/empty")
            let emptyBefore = try snapshot(empty.layout.root)
            #expect(throws: StoreError.deltaBaseNotInstalled(id: "shop", version: "1.0.0")) { try empty.install(bundle: delta) }
            #expect(try snapshot(empty.layout.root) == emptyBefore)

            // Same version number, other content: the contentHash check refuses it.
            var impostorFiles = base
            impostorFiles["index.html"] = "<h1>other</h1>"
            let impostor = try factory.bundle(version: "1.0.0", files: impostorFiles)
            let other = try PackageStore(root: folder + "/other")
            try other.install(bundle: impostor)
            let otherBefore = try snapshot(other.layout.root)
            let refusal = #expect(throws: StoreError.self) { try other.install(bundle: delta) }
            #expect(refusal?.description.hasPrefix("delta refused: delta does not apply to the installed base: base contentHash is") == true)
            #expect(try snapshot(other.layout.root) == otherBefore)

            // A damaged base file is caught by the full verification of the assembled version.
            let damaged = try PackageStore(root: folder + "/damaged")
            try damaged.install(bundle: v1)
            try Data("B".utf8).write(to: URL(fileURLWithPath: damaged.layout.version(id("shop"), v("1.0.0")) + "/keep/b.css"))
            let damagedBefore = try snapshot(damaged.layout.root)
            #expect(throws: StoreError.baseFileDamaged(id: "shop", version: "1.0.0", path: "keep/b.css")) { try damaged.install(bundle: delta) }
            #expect(try snapshot(damaged.layout.root) == damagedBefore)
        }
    }

    @Test func diffRefusesMismatchedBundles() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let v1 = try factory.bundle(version: "1.0.0", files: base)
            let docs = try factory.bundle(id: "docs", version: "1.1.0", host: "docs.example", files: next)
            #expect(throws: DeltaError.differentPackages("shop", "docs")) { try DeltaBuilder.build(from: v1, to: docs, outputFolder: folder + "/out") }
            #expect(throws: DeltaError.sameVersion("1.0.0")) { try DeltaBuilder.build(from: v1, to: v1, outputFolder: folder + "/out") }
            #expect(listing(folder + "/out").isEmpty)
        }
    }
}
