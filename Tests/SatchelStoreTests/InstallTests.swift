import Foundation
import Testing
@testable import SatchelArchive
import SatchelBundle
import SatchelCore
@testable import SatchelStore
import SatchelTestSupport
@testable import SatchelPublishing

@Suite("Installing bundles into a store")
struct InstallTests {
    @Test("an install extracts exactly the manifest's files plus satchel.json and satchel.sig, active on trial")
    func install() throws {
        try withTemporaryFolder { folder throws in
            let key = SigningKey.generate()
            let factory = BundleFactory(folder: folder, key: key)
            let store = try PackageStore(root: folder + "/store", configuration: StoreConfiguration(trustedKeys: [key.verifyingKey]))
            let result = try store.install(bundle: factory.bundle(version: "1.0.0"))
            #expect(result == InstallResult(id: id("shop"), version: v("1.0.0"), fileCount: 4, bytes: result.bytes, contentHash: result.contentHash, previous: nil, extracted: true))
            let versionFolder = store.layout.version(id("shop"), v("1.0.0"))
            #expect(Set(PackageStore.allFiles(under: versionFolder)) == ["index.html", "js/app.mjs", "css/app.css", "img/logo.png", "satchel.json", "satchel.sig"])
            #expect(try String(contentsOfFile: versionFolder + "/index.html", encoding: .utf8) == "<h1>shop 1.0.0</h1>")
            #expect(try store.state(of: id("shop")) == PackageState(active: v("1.0.0"), trial: v("1.0.0"), launches: 0, history: []))
            #expect(try store.check().isEmpty)
            #expect(listing(store.layout.root + "/staging").isEmpty)
            let state = try String(contentsOfFile: store.layout.root + "/packages/shop/state.json", encoding: .utf8)
            #expect(state == #"{"active":"1.0.0","history":[],"launches":0,"trial":"1.0.0"}"#)
            #expect(try String(contentsOfFile: store.layout.root + "/store.json", encoding: .utf8) == #"{"layout":1}"#)
        }
    }

    @Test("a device installs zip only: a tar.gz bundle is refused by name, the store unchanged byte for byte")
    func tarGzipRefused() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let store = try PackageStore(root: folder + "/store")
            _ = try store.install(bundle: factory.bundle(version: "1.0.0"))
            let tarball = try factory.bundle(version: "1.1.0", format: .tarGzip)
            let before = try snapshot(store.layout.root)
            let error = #expect(throws: StoreError.self) { try store.install(bundle: tarball) }
            #expect(error == .invalidBundle(.unsupportedFormat(path: tarball, format: "tar.gz")))
            #expect("\(error!)".contains("repack it as zip"))
            #expect(try snapshot(store.layout.root) == before)
            #expect(try store.state(of: id("shop"))?.active == v("1.0.0"))
        }
    }

    @Test("a second version becomes active on trial and the previous one stays")
    func update() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let store = try PackageStore(root: folder + "/store")
            _ = try store.install(bundle: factory.bundle(version: "1.0.0"))
            try store.confirm(id("shop"))
            let result = try store.install(bundle: factory.bundle(version: "1.1.0"))
            #expect(result.previous == "1.0.0")
            #expect(try store.state(of: id("shop")) == PackageState(active: v("1.1.0"), trial: v("1.1.0"), launches: 0, history: [v("1.0.0")]))
            #expect(store.installedVersions(of: id("shop")) == [v("1.0.0"), v("1.1.0")])
        }
    }

    @Test("a known bundle checksum is checked first; a mismatch changes nothing")
    func checksum() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let store = try PackageStore(root: folder + "/store")
            let bundle = try factory.bundle(version: "1.0.0")
            let before = try snapshot(store.layout.root)
            let wrong = String(repeating: "0", count: 64)
            #expect(throws: StoreError.bundleChecksumMismatch(expected: wrong, actual: Digests.sha256Hex(try readBytes(bundle)))) {
                try store.install(bundle: bundle, expectedSHA256: wrong)
            }
            #expect(try snapshot(store.layout.root) == before)
            _ = try store.install(bundle: bundle, expectedSHA256: Digests.sha256Hex(try readBytes(bundle)).uppercased())
        }
    }

    @Test("a store with trusted keys refuses unsigned and foreign-signed bundles, unchanged")
    func signatures() throws {
        try withTemporaryFolder { folder throws in
            let trusted = SigningKey.generate()
            let store = try PackageStore(root: folder + "/store", configuration: StoreConfiguration(trustedKeys: [trusted.verifyingKey]))
            let before = try snapshot(store.layout.root)
            #expect(throws: StoreError.invalidBundle(.unsigned)) { try store.install(bundle: BundleFactory(folder: folder).bundle(version: "1.0.0")) }
            #expect(throws: StoreError.invalidBundle(.signatureMismatch)) {
                try store.install(bundle: BundleFactory(folder: folder, key: SigningKey.generate()).bundle(version: "1.0.0"))
            }
            #expect(try snapshot(store.layout.root) == before)
        }
    }

    /// Builds a hostile variant of a valid bundle and expects the install to fail with `check`, store unchanged.
    func expectRefused(_ folder: String, _ store: PackageStore, _ entries: [(name: String, bytes: [UInt8])], special: [String: ArchiveEntryKind] = [:], format: ArchiveFormat = .zip, check: (StoreError) -> Bool) throws {
        let path = folder + "/hostile-\(UUID().uuidString)." + format.fileExtension
        let writer = try ArchiveWriter(creating: path, format: format)
        for entry in entries {
            if let kind = special[entry.name] { try writer.add(special: entry.name, kind: kind) } else {
                try writer.add(ArchiveEntryHeader(path: entry.name, size: Int64(entry.bytes.count), modificationTime: 315_532_800, compress: true), bytes: entry.bytes)
            }
        }
        try writer.finish()
        let before = try snapshot(store.layout.root)
        let error = #expect(throws: StoreError.self) { try store.install(bundle: path) }
        if let error { #expect(check(error), "unexpected error: \(error)") }
        #expect(try snapshot(store.layout.root) == before, "the store must be left exactly as it was")
    }

    @Test("hostile archives are refused by name and leave the store exactly as it was")
    func hostile() throws {
        try withTemporaryFolder { folder throws in
            let store = try PackageStore(root: folder + "/store")
            _ = try store.install(bundle: BundleFactory(folder: folder).bundle(id: "other", version: "1.0.0", host: "other.example"))
            let valid = try BundleFactory(folder: folder).bundle(version: "1.0.0")
            let list = try {
                let reader = try ZipReader(path: valid)
                var result: [(name: String, bytes: [UInt8])] = []
                while let entry = try reader.nextEntry() { result.append((entry.path, try reader.readAll(maxBytes: 1 << 20))) }
                return result
            }()
            let cssIndex = list.firstIndex { $0.name == "css/app.css" }!
            func replacing(_ name: String) -> [(name: String, bytes: [UInt8])] {
                var copy = list
                copy[cssIndex].name = name
                return copy
            }
            func names(_ expected: String) -> (StoreError) -> Bool {
                { if case .invalidBundle(let error) = $0 { return error.subject == expected || "\(error)".contains(expected) } else { return false } }
            }
            try expectRefused(folder, store, replacing("../css/app.css"), check: names("../css/app.css"))
            try expectRefused(folder, store, replacing("/etc/app.css"), check: names("/etc/app.css"))
            try expectRefused(folder, store, replacing("css\\app.css"), check: names("css\\app.css"))
            try expectRefused(folder, store, replacing("css/app\u{0}.css"), check: { _ in true })
            try expectRefused(folder, store, list, special: ["css/app.css": .symlink(target: "/etc/passwd")], check: names("css/app.css"))
            try expectRefused(folder, store, list, special: ["css/app.css": .directory], check: names("css/app.css"))
            var duplicated = list
            duplicated.insert(list[cssIndex], at: cssIndex + 1)
            try expectRefused(folder, store, duplicated, check: names("css/app.css"))
            try expectRefused(folder, store, replacing("CSS/APP.css"), check: names("CSS/APP.css"))
            try expectRefused(folder, store, replacing("css/app.css.extra"), check: names("css/app.css.extra"))
            try expectRefused(folder, store, list.filter { $0.name != "css/app.css" }, check: names("css/app.css"))
            try expectRefused(folder, store, list + [("unlisted.js", Array("x".utf8))], check: names("unlisted.js"))
            var tampered = list
            tampered[cssIndex].bytes[0] ^= 1
            try expectRefused(folder, store, tampered, check: names("css/app.css"))
            // Truncated: the whole valid bundle cut in half.
            let truncated = folder + "/truncated.zip"
            let bytes = try readBytes(valid)
            try Data(bytes.prefix(bytes.count / 2)).write(to: URL(fileURLWithPath: truncated))
            let before = try snapshot(store.layout.root)
            #expect(throws: StoreError.self) { try store.install(bundle: truncated) }
            #expect(try snapshot(store.layout.root) == before)
        }
    }

    @Test("entry, size and ratio caps stop oversized and bomb archives before the damage")
    func caps() throws {
        try withTemporaryFolder { folder throws in
            let files = Dictionary(uniqueKeysWithValues: (0..<30).map { ("f\($0).txt", String(repeating: "a", count: 100)) }).merging(["index.html": "x"]) { a, _ in a }
            let bundle = try BundleFactory(folder: folder).bundle(version: "1.0.0", files: files)
            for limits in [ArchiveLimits(maxEntries: 10), ArchiveLimits(maxTotalBytes: 1000), ArchiveLimits(maxCompressionRatio: 2, ratioGraceBytes: 100)] {
                let store = try PackageStore(root: folder + "/store-\(UUID().uuidString)", configuration: StoreConfiguration(archiveLimits: limits))
                let before = try snapshot(store.layout.root)
                let error = #expect(throws: StoreError.self) { try store.install(bundle: bundle) }
                // The zip's directory is judged before a byte is extracted.
                guard case .invalidBundle(.directory(let zipError)) = error else { Issue.record("\(String(describing: error))"); continue }
                switch zipError {
                case .tooManyEntries, .archiveTooLarge, .compressionRatioExceeded: break
                default: Issue.record("unexpected \(zipError)")
                }
                #expect(try snapshot(store.layout.root) == before)
            }
        }
    }

    @Test("two packages may not claim the same host and prefix; nested prefixes are fine")
    func scopes() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let store = try PackageStore(root: folder + "/store")
            _ = try store.install(bundle: factory.bundle(id: "shop", version: "1.0.0", prefix: "/"))
            _ = try store.install(bundle: factory.bundle(id: "checkout", version: "1.0.0", prefix: "/checkout/"))
            _ = try store.install(bundle: factory.bundle(id: "elsewhere", version: "1.0.0", host: "other.example", prefix: "/"))
            let before = try snapshot(store.layout.root)
            #expect(throws: StoreError.scopeConflict(id: "cart", otherID: "checkout", host: "m.shop.example", pathPrefix: "/checkout/")) {
                try store.install(bundle: factory.bundle(id: "cart", version: "1.0.0", prefix: "/checkout/"))
            }
            #expect(try snapshot(store.layout.root) == before)
            // The package itself may keep its scope in a new version.
            _ = try store.install(bundle: factory.bundle(id: "checkout", version: "1.1.0", prefix: "/checkout/"))
        }
    }

    @Test("the same version again is idempotent; different content under the same version is refused")
    func sameVersion() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let store = try PackageStore(root: folder + "/store")
            let bundle = try factory.bundle(version: "1.0.0")
            _ = try store.install(bundle: bundle)
            let again = try store.install(bundle: bundle)
            #expect(!again.extracted)
            let before = try snapshot(store.layout.root)
            #expect(throws: StoreError.self) { try store.install(bundle: factory.bundle(version: "1.0.0", files: ["index.html": "different"])) }
            #expect(try snapshot(store.layout.root) == before)
        }
    }
}

@Suite("The scope cache")
struct ScopeCacheTests {
    @Test("an install leaves every package's line a hit, so the next install reads no state; a torn line is a miss")
    func linesStayHits() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let store = try PackageStore(root: folder + "/store")
            for index in 0..<5 {
                _ = try store.install(bundle: factory.bundle(id: "p\(index)", version: "1.0.0", host: "p\(index).example"))
            }
            let entries = ScopeCache.read(store.layout.scopeCache)
            for index in 0..<5 {
                let id = try PackageID("p\(index)")
                let entry = try #require(entries["p\(index)"], "no line for p\(index)")
                #expect(entry.identity == ScopeCache.identity(of: store.layout.state(id)))
                #expect(entry.hosts == ["p\(index).example"])
                #expect(entry.version == "1.0.0")
            }
            // A line cut short (a crash mid-append) never parses as a shorter prefix.
            let text = "p9 1 2 3 1.0.0 p9.example 10 /checkout/\np8 1 2 3 1.0.0 p8.example 10 /check"
            let torn = folder + "/torn.cache"
            #expect(FileManager.default.createFile(atPath: torn, contents: Data(text.utf8)))
            #expect(ScopeCache.read(torn).keys.sorted() == ["p9"])
        }
    }

    @Test("the cache follows each switch of the active version: a rollback claims the old scope again")
    func followsSwitches() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let store = try PackageStore(root: folder + "/store")
            _ = try store.install(bundle: factory.bundle(id: "shop", version: "1.0.0", host: "a.example"))
            _ = try store.install(bundle: factory.bundle(id: "shop", version: "2.0.0", host: "b.example"))
            try store.activate(try PackageID("shop"), try SemanticVersion("2.0.0"))
            // a.example is free while 2.0.0 is active; b.example is not.
            #expect(throws: StoreError.scopeConflict(id: "cart", otherID: "shop", host: "b.example", pathPrefix: "/")) {
                try store.install(bundle: factory.bundle(id: "cart", version: "1.0.0", host: "b.example"))
            }
            _ = try store.install(bundle: factory.bundle(id: "blog", version: "1.0.0", host: "a.example", prefix: "/blog/"))
            try store.activate(try PackageID("shop"), try SemanticVersion("1.0.0"))
            #expect(throws: StoreError.scopeConflict(id: "news", otherID: "shop", host: "a.example", pathPrefix: "/")) {
                try store.install(bundle: factory.bundle(id: "news", version: "1.0.0", host: "a.example"))
            }
            _ = try store.install(bundle: factory.bundle(id: "cart", version: "1.0.0", host: "b.example"))
        }
    }
}
