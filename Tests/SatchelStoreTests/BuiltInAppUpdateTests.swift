import Foundation
@testable import SatchelArchive
import SatchelBundle
import SatchelCore
import SatchelPlatform
@testable import SatchelStore
import SatchelTestSupport
import Testing

/// An app update installs a new app bundle: a new path, new inodes and change times, often the same built-in bytes
/// (issue 48, decision 0035). An app here is a folder `<name>.app` holding its built-ins in `offline/` and, like a
/// signed Apple app, `_CodeSignature/CodeResources` sealing every file's SHA-256. Where the test says the folder is
/// sealed (`StoreConfiguration.sealedRoot`), it plays the iOS device whose installer checked the seal.
@Suite("Built-ins across app updates: the same sealed bytes at a new path are not hashed again")
struct BuiltInAppUpdateTests {
    /// The built-in's files: `BuiltInTests.app` and a 1 MB media file, so that a bundle's data dwarfs what opening
    /// it must read anyway (its last 64 KiB, where the zip's end record may be, its directory and local headers).
    static func files() -> [String: String] {
        var files = BuiltInTests.app("1.0.0")
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        var text = [UInt8]()
        text.reserveCapacity(1 << 20)
        while text.count < 1 << 20 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            text.append(UInt8(0x21 + (state >> 58)))
        }
        files["media/intro.mp4"] = String(decoding: text, as: UTF8.self)
        return files
    }

    /// An app folder at `app` holding `bundle` as `offline/shop.zip`, sealed.
    static func makeApp(_ app: String, bundle: String) throws {
        try FileManager.default.createDirectory(atPath: app + "/offline", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: bundle, toPath: app + "/offline/shop.zip")
        try Data("app".utf8).write(to: URL(fileURLWithPath: app + "/Shop"))
        try seal(app)
    }

    /// Writes `_CodeSignature/CodeResources` for every file of `app` as `codesign` does (`files` with SHA-1 for old
    /// systems, `files2` with `hash2`: SHA-256), leaving out `except`; a symbolic link and nested code are listed the
    /// way they are, with nothing to compare bytes with.
    static func seal(_ app: String, except: Set<String> = []) throws {
        var files: [String: Any] = [:], files2: [String: Any] = [:]
        let enumerator = FileManager.default.enumerator(atPath: app)
        while let path = enumerator?.nextObject() as? String {
            guard !path.hasPrefix("_CodeSignature"), path != "Shop", !except.contains(path) else { continue }
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: app + "/" + path, isDirectory: &isFolder), !isFolder.boolValue else { continue }
            files[path] = Data(repeating: 0x5A, count: 20)
            files2[path] = ["hash2": Data(hexDigest: Digests.sha256Hex(try readBytes(app + "/" + path)))]
        }
        files2["Frameworks/Pay.framework"] = ["cdhash": Data(repeating: 1, count: 20), "requirement": "cdhash H\"0101\""]
        files2["offline/latest.zip"] = ["symlink": "shop.zip"]
        let plist: [String: Any] = [
            "files": files, "files2": files2,
            "rules": ["^.*": true], "rules2": ["^.*": true, "^_CodeSignature/": ["omit": true, "weight": 20]],
        ]
        try FileManager.default.createDirectory(atPath: app + "/_CodeSignature", withIntermediateDirectories: true)
        try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0)
            .write(to: URL(fileURLWithPath: app + "/" + ResourceSeal.codeResourcesPath))
    }

    /// The app update: the whole app folder copied to a new path, new inodes and change times, the same bytes.
    static func update(_ from: String, to: String) throws -> String {
        try FileManager.default.copyItem(atPath: from, toPath: to)
        let before = try FileManager.default.attributesOfItem(atPath: from + "/offline/shop.zip")
        let after = try FileManager.default.attributesOfItem(atPath: to + "/offline/shop.zip")
        #expect(before[.systemFileNumber] as? Int != after[.systemFileNumber] as? Int)
        #expect(try readBytes(from + "/offline/shop.zip") == readBytes(to + "/offline/shop.zip"))
        return to
    }

    /// Opens a store with the app's built-ins: whether it hashed them, what it refused, and the bytes it read of the
    /// archive.
    static func open(_ root: String, app: String, sealed: String?) throws -> (verifiedNow: [Bool], refusals: [BuiltInRefusal], read: Int64) {
        var configuration = StoreConfiguration(builtIns: [app + "/offline"])
        configuration.sealedRoot = sealed
        var store: PackageStore?
        let read = try ReadMeter.bytesRead(from: app + "/offline/shop.zip") { store = try PackageStore(root: root, configuration: configuration) }
        return (store!.builtInPackages.map(\.verifiedNow), store!.builtInRefusals, read)
    }

    /// The compressed bytes of the bundle's files: what verifying reads beyond the structure.
    static func dataBytes(_ bundle: String) throws -> Int64 {
        try ZipDirectory.read(path: bundle).entries.filter { !$0.name.hasPrefix("satchel.") }.reduce(0) { $0 + $1.compressedSize }
    }

    /// Flips one byte inside a stored file's data: same size, same directory, same manifest.
    static func tamper(_ zip: String) throws {
        var bytes = try readBytes(zip)
        let entry = try #require(try ZipDirectory.read(path: zip).entries.first { $0.name == "media/promo.mp4" })
        #expect(entry.method == .stored)
        bytes[Int(entry.dataOffset) + 100] ^= 0x20
        try Data(bytes).write(to: URL(fileURLWithPath: zip))
    }

    @Test("an app update does not re-hash unchanged built-ins: the same sealed bytes at a new path read no file bytes")
    func sealedUpdateReadsNoFiles() throws {
        try withTemporaryFolder { folder throws in
            let bundle = try BundleFactory(folder: folder).bundle(version: "1.0.0", files: Self.files())
            let root = folder + "/store", first = folder + "/A/Shop.app"
            try Self.makeApp(first, bundle: bundle)
            let data = try Self.dataBytes(bundle)
            #expect(data > 1 << 20)

            let verified = try Self.open(root, app: first, sealed: first)
            #expect(verified.verifiedNow == [true] && verified.refusals.isEmpty)
            #expect(verified.read >= data, "verification read every file: \(verified.read) of \(data)")
            // A launch without an update: the record names this very file; only the structure is read.
            let launch = try Self.open(root, app: first, sealed: first)
            #expect(launch.verifiedNow == [false])
            #expect(launch.read + data <= verified.read)

            // The update: new path, new inodes, the same bytes, sealed. Read as much as a launch without an update.
            let second = try Self.update(first, to: folder + "/B/Shop.app")
            let updated = try Self.open(root, app: second, sealed: second)
            #expect(updated.verifiedNow == [false] && updated.refusals.isEmpty)
            #expect(updated.read == launch.read, "read \(updated.read) bytes of the archive after the update, \(launch.read) at a launch")
            #expect(updated.read * 10 < data)
            // The record moved with the app: the next launch trusts the file without reading the seal.
            let next = try Self.open(root, app: second, sealed: nil)
            #expect(next.verifiedNow == [false] && next.read == launch.read)
        }
    }

    @Test("where nothing seals the bundle (macOS, Linux, the Simulator), an app update verifies again; a changed byte is refused")
    func unsealedUpdateVerifies() throws {
        try withTemporaryFolder { folder throws in
            let bundle = try BundleFactory(folder: folder).bundle(version: "1.0.0", files: Self.files())
            let root = folder + "/store", first = folder + "/A/Shop.app"
            try Self.makeApp(first, bundle: bundle)
            let data = try Self.dataBytes(bundle)
            // Verified once where the seal counted: both records are written.
            #expect(try Self.open(root, app: first, sealed: first).verifiedNow == [true])

            let second = try Self.update(first, to: folder + "/B/Shop.app")
            let updated = try Self.open(root, app: second, sealed: nil)
            #expect(updated.verifiedNow == [true] && updated.read >= data)

            // A byte changed after the update, the seal left as it was: refused where no seal is enforced, and where one
            // is enforced but the bundle lies outside it (a built-in in a writable folder).
            let third = try Self.update(first, to: folder + "/C/Shop.app")
            try Self.tamper(third + "/offline/shop.zip")
            for sealed in [nil, second] {
                let tampered = try Self.open(root, app: third, sealed: sealed)
                #expect(tampered.verifiedNow.isEmpty)
                #expect(tampered.refusals.map(\.description) == [
                    "built-in bundle \(third)/offline/shop.zip (shop 1.0.0) refused: archive is corrupt at media/promo.mp4: CRC-32 does not match",
                ])
            }
        }
    }

    @Test("a sealed update with other bytes is verified: a changed byte sealed anew is refused; an archive the seal does not list is hashed")
    func sealedUpdateWithOtherBytes() throws {
        try withTemporaryFolder { folder throws in
            let bundle = try BundleFactory(folder: folder).bundle(version: "1.0.0", files: Self.files())
            let root = folder + "/store", first = folder + "/A/Shop.app"
            try Self.makeApp(first, bundle: bundle)
            let data = try Self.dataBytes(bundle)
            #expect(try Self.open(root, app: first, sealed: first).verifiedNow == [true])

            // An update whose archive was changed before it was signed (its manifest, signature and zip directory
            // untouched): the seal is honest, its digest is not the one verified, so every file is hashed.
            let second = try Self.update(first, to: folder + "/B/Shop.app")
            try Self.tamper(second + "/offline/shop.zip")
            try Self.seal(second)
            let original = try InPlaceBundle(path: first + "/offline/shop.zip"), changed = try InPlaceBundle(path: second + "/offline/shop.zip")
            #expect((changed.directoryDigest, changed.manifestBytes) == (original.directoryDigest, original.manifestBytes))
            let tampered = try Self.open(root, app: second, sealed: second)
            #expect(tampered.verifiedNow.isEmpty)
            #expect(tampered.refusals.map(\.description) == [
                "built-in bundle \(second)/offline/shop.zip (shop 1.0.0) refused: archive is corrupt at media/promo.mp4: CRC-32 does not match",
            ])

            // The seal does not list the archive (or lists no SHA-256 for it): it proves nothing, the files are hashed.
            let third = try Self.update(first, to: folder + "/C/Shop.app")
            try Self.seal(third, except: ["offline/shop.zip"])
            let unlisted = try Self.open(root, app: third, sealed: third)
            #expect(unlisted.verifiedNow == [true] && unlisted.read >= data)
        }
    }

    @Test("a record written before app updates were recognised costs one verification, then none; a damaged record is not trusted")
    func oldAndDamagedRecords() throws {
        try withTemporaryFolder { folder throws in
            let bundle = try BundleFactory(folder: folder).bundle(version: "1.0.0", files: Self.files())
            let root = folder + "/store", first = folder + "/A/Shop.app"
            try Self.makeApp(first, bundle: bundle)
            let zip = first + "/offline/shop.zip"
            let data = try Self.dataBytes(bundle)
            // The record as the runtime before this change wrote it, field for field: only `builtins/shop.json`.
            #expect(try Self.open(root, app: first, sealed: nil).verifiedNow == [true])
            let layout = StoreLayout(root: root)
            var info = stat()
            #expect(stat(zip, &info) == 0)
            let opened = try InPlaceBundle(path: zip)
            let old = CanonicalJSON.object([
                "bundle": .string(zip), "changed": .integer(FileTimes.changed(info)), "device": .integer(Int64(truncatingIfNeeded: info.st_dev)),
                "directory": .string(opened.directoryDigest), "id": .string("shop"), "inode": .integer(Int64(truncatingIfNeeded: info.st_ino)),
                "manifest": .string(Digests.sha256Hex(opened.manifestBytes)), "modified": .integer(FileTimes.modified(info)),
                "size": .integer(Int64(info.st_size)), "verified": .string("every file"), "version": .string("1.0.0"),
            ]).bytes
            #expect(try readBytes(layout.builtInRecord(id("shop"))) == old)
            #expect(listing(layout.builtIns) == ["shop.json"])
            // The same file is still trusted by that record, sealed or not.
            #expect(try Self.open(root, app: first, sealed: first).verifiedNow == [false])

            // The first update after it: no record of sealed bytes yet, so one verification; it writes one.
            let second = try Self.update(first, to: folder + "/B/Shop.app")
            #expect(try Self.open(root, app: second, sealed: second).verifiedNow == [true])
            #expect(listing(layout.builtIns) == ["shop.content.json", "shop.json"])
            let third = try Self.update(second, to: folder + "/C/Shop.app")
            let updated = try Self.open(root, app: third, sealed: third)
            #expect(updated.verifiedNow == [false] && updated.read * 10 < data)

            // A damaged record of sealed bytes (cut short, another digest, not JSON) is not trusted, and costs one
            // verification that writes it again.
            let content = layout.builtInContentRecord(id("shop"))
            let good = try readBytes(content)
            for (index, damaged) in [Array(good.dropLast()), Array(String(decoding: good, as: UTF8.self).replacingOccurrences(of: "\"sealed\":\"", with: "\"sealed\":\"0").utf8), Array("{".utf8)].enumerated() {
                try Data(damaged).write(to: URL(fileURLWithPath: content))
                let moved = try Self.update(first, to: folder + "/D\(index)/Shop.app")
                let reopened = try Self.open(root, app: moved, sealed: moved)
                #expect(reopened.verifiedNow == [true] && reopened.refusals.isEmpty && reopened.read >= data)
                #expect(try readBytes(content) == good)
            }
        }
    }

    @Test("the resource seal: SHA-256 of each sealed file by its path in the bundle; links, nested code and other folders seal nothing")
    func resourceSeal() throws {
        try withTemporaryFolder { folder throws in
            let app = folder + "/Shop.app"
            try Self.makeApp(app, bundle: try BundleFactory(folder: folder).bundle(version: "1.0.0"))
            try FileManager.default.createDirectory(atPath: app + "/Base.lproj", withIntermediateDirectories: true)
            try Data("strings".utf8).write(to: URL(fileURLWithPath: app + "/Base.lproj/Main.strings"))
            try Self.seal(app)
            let seal = try #require(ResourceSeal(bundle: app + "/./"))
            let resolved = try #require(realpath(app, nil).map { path -> String in
                defer { free(path) }
                return String(cString: path)
            })
            #expect(seal.root == resolved)
            #expect(seal.sha256(of: resolved + "/offline/shop.zip") == Digests.sha256Hex(try readBytes(app + "/offline/shop.zip")))
            #expect(seal.sha256(of: resolved + "/Base.lproj/Main.strings") == Digests.sha256Hex(Array("strings".utf8)))
            for unsealed in ["/offline/latest.zip", "/Frameworks/Pay.framework", "/Shop", "/offline", "/offline/missing.zip"] {
                #expect(seal.sha256(of: resolved + unsealed) == nil, "\(unsealed)")
            }
            // A path outside the bundle, or one that only starts with its name.
            #expect(seal.sha256(of: resolved + "2/offline/shop.zip") == nil)
            #expect(seal.sha256(of: "offline/shop.zip") == nil)

            // No seal, or something else in its place: nil, never a crash.
            #expect(ResourceSeal(bundle: folder + "/missing.app") == nil)
            for junk in [Data("not a plist".utf8), Data(), try PropertyListSerialization.data(fromPropertyList: ["files": [:] as [String: Any]], format: .xml, options: 0)] {
                try junk.write(to: URL(fileURLWithPath: app + "/" + ResourceSeal.codeResourcesPath))
                #expect(ResourceSeal(bundle: app) == nil)
            }
            #if os(Linux) || os(macOS)
            #expect(ResourceSeal.enforcedRoot == nil, "only an iOS device enforces a seal")
            #endif
        }
    }
}

extension Data {
    init(hexDigest: String) {
        let digits = Array(hexDigest.utf8).map { $0 <= 0x39 ? $0 - 0x30 : $0 - 0x57 }
        self.init(stride(from: 0, to: digits.count, by: 2).map { digits[$0] << 4 | digits[$0 + 1] })
    }
}
