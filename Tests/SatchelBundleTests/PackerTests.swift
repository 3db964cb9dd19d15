@testable import SatchelArchive
@testable import SatchelBundle
import Foundation
import SatchelCore
@testable import SatchelPublishing
import SatchelTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("Packing a folder into a bundle")
struct PackerTests {
    @Test("the bundle holds satchel.json, satchel.sig, then the files in manifest order", arguments: ArchiveFormat.allCases)
    func layout(_ format: ArchiveFormat) async throws {
        try await withTemporaryFolder { folder async throws in
            try makeTree(folder + "/src", sampleApp)
            let key = SigningKey.generate()
            let result = try Packer.pack(source: folder + "/src", options: options(format: format, key: key), outputFolder: folder + "/out")
            #expect(result.bundle == folder + "/out/shop-1.0.0." + format.fileExtension)
            #expect(result.fileCount == sampleApp.count)
            #expect(result.signed)
            let all = try entries(of: result.bundle)
            #expect(all[0].name == "satchel.json")
            #expect(all[1].name == "satchel.sig")
            let manifest = try Manifest.decode(all[0].bytes)
            #expect(all.dropFirst(2).map(\.name) == manifest.files.map(\.path.value))
            #expect(manifest.contentHash == result.contentHash)
            #expect(manifest.createdAt == Timestamp(secondsSinceEpoch: 1_700_000_000))
            #expect(manifest.offlinePage?.value == "offline.html")
            #expect(manifest.routes == [try Route(parsing: "/api/=network-first:3000")])
            for (entry, file) in zip(all.dropFirst(2), manifest.files) {
                #expect(Digests.sha256Hex(entry.bytes) == file.sha256)
                #expect(Int64(entry.bytes.count) == file.size)
                #expect(Array(sampleApp[file.path.value]!.utf8) == entry.bytes)
            }
            #expect(manifest.file(at: try SafePath(validating: "js/app.mjs"))?.mime == "text/javascript")
            #expect(manifest.file(at: try SafePath(validating: "img/logo.svg"))?.mime == "image/svg+xml")
            let signature = try Signature(base64: String(decoding: all[1].bytes, as: UTF8.self))
            #expect(key.verifyingKey.isValid(signature, for: all[0].bytes))
            #expect(try Digests.sha256Hex(readBytes(result.bundle)) == result.sha256)
            #expect(Int64(try readBytes(result.bundle).count) == result.size)
        }
    }

    @Test("two packs of the same folder are byte-identical", arguments: ArchiveFormat.allCases)
    func reproducible(_ format: ArchiveFormat) async throws {
        try await withTemporaryFolder { folder async throws in
            try makeTree(folder + "/src", sampleApp)
            let a = try Packer.pack(source: folder + "/src", options: options(format: format), outputFolder: folder + "/a")
            let b = try Packer.pack(source: folder + "/src", options: options(format: format), outputFolder: folder + "/b")
            #expect(try readBytes(a.bundle) == readBytes(b.bundle))
            #expect(a.sha256 == b.sha256)
            // A copy of the folder made at another time packs the same too: only file mtimes count.
            try makeTree(folder + "/copy", sampleApp)
            let c = try Packer.pack(source: folder + "/copy", options: options(format: format), outputFolder: folder + "/c")
            #expect(c.sha256 == a.sha256)
        }
    }

    @Test("another SOURCE_DATE_EPOCH changes only createdAt and entry times", arguments: ArchiveFormat.allCases)
    func sourceDateEpoch(_ format: ArchiveFormat) async throws {
        try await withTemporaryFolder { folder async throws in
            try makeTree(folder + "/src", sampleApp)
            let a = try Packer.pack(source: folder + "/src", options: options(format: format, epoch: 1_600_000_000), outputFolder: folder + "/a")
            let b = try Packer.pack(source: folder + "/src", options: options(format: format, epoch: 1_650_000_000), outputFolder: folder + "/b")
            #expect(a.sha256 != b.sha256)
            let ea = try entries(of: a.bundle)
            let eb = try entries(of: b.bundle)
            let ma = try Manifest.decode(ea[0].bytes)
            let mb = try Manifest.decode(eb[0].bytes)
            #expect(ma.createdAt.description == "2020-09-13T12:26:40Z")
            #expect(mb.createdAt.description == "2022-04-15T05:20:00Z")
            // Put b's createdAt into a's manifest: everything else is identical.
            let patched = String(decoding: ea[0].bytes, as: UTF8.self).replacingOccurrences(of: ma.createdAt.description, with: mb.createdAt.description)
            #expect(Array(patched.utf8) == eb[0].bytes)
            #expect(ea.dropFirst().map(\.name) == eb.dropFirst().map(\.name))
            #expect(ea.dropFirst().map(\.bytes) == eb.dropFirst().map(\.bytes))
            // And the entry times: every entry of a bundle carries createdAt (clamped to 1980).
            if format == .zip {
                let listing = try await run("/usr/bin/zipinfo", ["-T", b.bundle])
                #expect(listing.contains("20220415.052000"))
                #expect(!listing.contains("20200913"))
            }
        }
    }

    @Test("times before 1980 are clamped for zip")
    func clampsOldTimes() async throws {
        try await withTemporaryFolder { folder async throws in
            try makeTree(folder + "/src", sampleApp)
            let result = try Packer.pack(source: folder + "/src", options: options(epoch: 0), outputFolder: folder + "/out")
            let manifest = try BundleReader.anyFormat(path: result.bundle).manifest
            #expect(manifest.createdAt.description == "1970-01-01T00:00:00Z")
            #expect(try await run("/usr/bin/zipinfo", ["-T", result.bundle]).contains("19800101.000000"))
        }
    }

    @Test("default and user excludes leave files out")
    func excludes() async throws {
        try await withTemporaryFolder { folder async throws in
            var tree = sampleApp
            tree[".git/HEAD"] = "ref"
            tree[".DS_Store"] = "x"
            tree["img/Thumbs.db"] = "x"
            tree["js/app.mjs.map"] = "{}"
            tree["drafts/a.html"] = "draft"
            tree["src/main.ts"] = "let a = 1"
            tree["src/keep.js"] = "keep"
            try makeTree(folder + "/src", tree)
            let result = try Packer.pack(source: folder + "/src", options: options(excludes: ["*.map", "drafts/", "src/*.ts"]), outputFolder: folder + "/out")
            let paths = try BundleReader.anyFormat(path: result.bundle).manifest.files.map(\.path.value)
            #expect(Set(paths) == Set(sampleApp.keys).union(["src/keep.js"]))
        }
    }

    @Test("a symlink to a file inside the folder is packed as that file")
    func symlinkInside() async throws {
        try await withTemporaryFolder { folder async throws in
            try makeTree(folder + "/src", sampleApp)
            try FileManager.default.createSymbolicLink(atPath: folder + "/src/alias.css", withDestinationPath: "css/app.css")
            let result = try Packer.pack(source: folder + "/src", options: options(), outputFolder: folder + "/out")
            let manifest = try BundleReader.anyFormat(path: result.bundle).manifest
            #expect(manifest.file(at: try SafePath(validating: "alias.css"))?.sha256 == manifest.file(at: try SafePath(validating: "css/app.css"))?.sha256)
        }
    }

    /// Packs and expects `error`, then checks that the output folder holds nothing at all.
    func expectRefusal(_ expected: PackError, source: String, options: PackOptions, output: String) {
        #expect(throws: expected) { try Packer.pack(source: source, options: options, outputFolder: output) }
        #expect(listing(output).isEmpty, "no partial bundle may be left: \(listing(output))")
    }

    @Test("missing, non-folder and empty sources are refused")
    func badSources() async throws {
        try await withTemporaryFolder { folder async throws in
            expectRefusal(.sourceMissing(folder + "/nope"), source: folder + "/nope", options: try options(), output: folder + "/out")
            try makeTree(folder, ["file.txt": "x"])
            expectRefusal(.sourceNotFolder(folder + "/file.txt"), source: folder + "/file.txt", options: try options(), output: folder + "/out")
            try makeTree(folder + "/onlyexcluded", [".DS_Store": "x", ".git/config": "x"])
            expectRefusal(.sourceEmpty(folder + "/onlyexcluded"), source: folder + "/onlyexcluded", options: try options(), output: folder + "/out")
        }
    }

    @Test("an entry or offline page that is not in the folder is refused")
    func missingPages() async throws {
        try await withTemporaryFolder { folder async throws in
            try makeTree(folder + "/src", sampleApp)
            expectRefusal(.entryMissing("main.html"), source: folder + "/src", options: try options(entry: "main.html"), output: folder + "/out")
            expectRefusal(.offlinePageMissing("nope.html"), source: folder + "/src", options: try options(offlinePage: "nope.html"), output: folder + "/out")
        }
    }

    @Test("symlinks that escape, dangle or loop are refused")
    func badSymlinks() async throws {
        try await withTemporaryFolder { folder async throws in
            try makeTree(folder + "/outside", ["secret.txt": "secret"])
            try makeTree(folder + "/a", sampleApp)
            try FileManager.default.createSymbolicLink(atPath: folder + "/a/leak.txt", withDestinationPath: folder + "/outside/secret.txt")
            let error = #expect(throws: PackError.self) { try Packer.pack(source: folder + "/a", options: options(), outputFolder: folder + "/out") }
            guard case .symlinkEscapes(let path, _) = error else { Issue.record("\(String(describing: error))"); return }
            #expect(path == "leak.txt")
            #expect(listing(folder + "/out").isEmpty)

            try makeTree(folder + "/b", sampleApp)
            try FileManager.default.createSymbolicLink(atPath: folder + "/b/up", withDestinationPath: "..")
            #expect(throws: PackError.self) { try Packer.pack(source: folder + "/b", options: options(), outputFolder: folder + "/out") }

            try makeTree(folder + "/c", sampleApp)
            try FileManager.default.createSymbolicLink(atPath: folder + "/c/dangling.js", withDestinationPath: "nowhere.js")
            expectRefusal(.brokenSymlink(path: "dangling.js"), source: folder + "/c", options: try options(), output: folder + "/out")

            try makeTree(folder + "/d", sampleApp)
            try FileManager.default.createSymbolicLink(atPath: folder + "/d/js/again", withDestinationPath: "..")
            expectRefusal(.symlinkLoop(path: "js/again"), source: folder + "/d", options: try options(), output: folder + "/out")
        }
    }

    @Test("a FIFO or other special file is refused")
    func specialFiles() async throws {
        try await withTemporaryFolder { folder async throws in
            try makeTree(folder + "/src", sampleApp)
            #expect(mkfifo(folder + "/src/pipe", 0o644) == 0)
            expectRefusal(.notRegularFile(path: "pipe"), source: folder + "/src", options: try options(), output: folder + "/out")
        }
    }

    @Test("names that collide after NFC or case folding are refused")
    func collisions() async throws {
        try await withTemporaryFolder { folder async throws in
            try makeTree(folder + "/case", sampleApp.merging(["Index.HTML": "x"]) { a, _ in a })
            expectRefusal(.pathCollision("Index.HTML", "index.html"), source: folder + "/case", options: try options(), output: folder + "/out")
            // The same visible name twice: once precomposed (NFC), once decomposed (NFD, as macOS writes it).
            // (Two calls: Swift strings compare by canonical equivalence, so one dictionary cannot hold both.)
            try makeTree(folder + "/nfc", sampleApp)
            try makeTree(folder + "/nfc", ["guide/cafe\u{301}.html": "nfd"])
            #expect(listing(folder + "/nfc/guide").count == 2)
            let error = #expect(throws: PackError.self) { try Packer.pack(source: folder + "/nfc", options: options(), outputFolder: folder + "/out") }
            guard case .pathCollision(let a, let b) = error else { Issue.record("\(String(describing: error))"); return }
            #expect(a == "guide/café.html" && b == "guide/café.html")
            #expect(listing(folder + "/out").isEmpty)
        }
    }

    @Test("a decomposed (NFD) name is packed in NFC form")
    func normalisesNames() async throws {
        try await withTemporaryFolder { folder async throws in
            try makeTree(folder + "/src", ["index.html": "x", "cafe\u{301}.css": "y"])
            let result = try Packer.pack(source: folder + "/src", options: options(offlinePage: nil), outputFolder: folder + "/out")
            let paths = try entries(of: result.bundle).map(\.name)
            #expect(paths.contains("caf\u{E9}.css"))
        }
    }

    @Test("a root file named like Satchel's own is refused")
    func reservedNames() async throws {
        try await withTemporaryFolder { folder async throws in
            try makeTree(folder + "/src", sampleApp.merging(["satchel.json": "{}"]) { a, _ in a })
            expectRefusal(.reservedName(path: "satchel.json"), source: folder + "/src", options: try options(), output: folder + "/out")
        }
    }

    @Test("a name that is not UTF-8 or that SafePath refuses is refused")
    func badNames() async throws {
        try await withTemporaryFolder { folder async throws in
            try makeTree(folder + "/src", sampleApp)
            let raw: [UInt8] = Array((folder + "/src/bad").utf8) + [0xFF, 0x2E, 0x6A, 0x73, 0]
            let descriptor = raw.withUnsafeBufferPointer { open(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), O_CREAT | O_WRONLY, 0o644) }
            #expect(descriptor >= 0)
            close(descriptor)
            let error = #expect(throws: PackError.self) { try Packer.pack(source: folder + "/src", options: options(), outputFolder: folder + "/out") }
            guard case .unsafePath(let pathError) = error else { Issue.record("\(String(describing: error))"); return }
            #expect(pathError.reason == .invalidEncoding)

            try makeTree(folder + "/tab", sampleApp.merging(["a\tb.txt": "x"]) { a, _ in a })
            expectRefusal(.unsafePath(SafePathError(path: "a\tb.txt", reason: .controlCharacter)), source: folder + "/tab", options: try options(), output: folder + "/out")
            try makeTree(folder + "/bs", sampleApp.merging(["a\\b.txt": "x"]) { a, _ in a })
            expectRefusal(.unsafePath(SafePathError(path: "a\\b.txt", reason: .backslash)), source: folder + "/bs", options: try options(), output: folder + "/out")
        }
    }

    @Test("an existing bundle of the same name is replaced atomically, never half-written")
    func replacesExisting() async throws {
        try await withTemporaryFolder { folder async throws in
            try makeTree(folder + "/src", sampleApp)
            try FileManager.default.createDirectory(atPath: folder + "/out", withIntermediateDirectories: true)
            try Data("old".utf8).write(to: URL(fileURLWithPath: folder + "/out/shop-1.0.0.zip"))
            let result = try Packer.pack(source: folder + "/src", options: options(), outputFolder: folder + "/out")
            #expect(listing(folder + "/out") == ["shop-1.0.0.zip"])
            _ = try BundleReader.anyFormat(path: result.bundle)
        }
    }

    @Test("excludes match names at any depth, paths with a slash, folders with a trailing slash")
    func excludeRules() {
        let rules = ExcludeRules(adding: ["*.map", "drafts/", "src/*.ts", "node_modules"])
        #expect(rules.excludes(relativePath: ".git", isFolder: true))
        #expect(!rules.excludes(relativePath: ".git", isFolder: false))
        #expect(rules.excludes(relativePath: "a/b/.DS_Store", isFolder: false))
        #expect(rules.excludes(relativePath: "x/Thumbs.db", isFolder: false))
        #expect(rules.excludes(relativePath: "js/deep/app.js.map", isFolder: false))
        #expect(rules.excludes(relativePath: "drafts", isFolder: true))
        #expect(rules.excludes(relativePath: "a/drafts", isFolder: true))
        #expect(!rules.excludes(relativePath: "drafts", isFolder: false))
        #expect(rules.excludes(relativePath: "src/main.ts", isFolder: false))
        #expect(!rules.excludes(relativePath: "src/deep/main.ts", isFolder: false))
        #expect(!rules.excludes(relativePath: "other/main.ts", isFolder: false))
        #expect(rules.excludes(relativePath: "node_modules", isFolder: true))
        #expect(!rules.excludes(relativePath: "index.html", isFolder: false))
    }
}

@Suite("ReleaseFolder: what satchel catalog publishes beside the bundles")
struct ReleaseFolderTests {
    @Test("each version gets patches from its newest older versions (at most patchBases) and from nothing; each content is one object")
    func patchesAreBounded() async throws {
        try await withTemporaryFolder { folder async throws in
            let versions = (0...ReleaseFolder.patchBases + 1).map { "1.\($0).0" }
            for version in versions {
                try makeTree(folder + "/src-\(version)", ["index.html": "<h1>\(version)</h1>", "app.js": "shared"])
                var packOptions = try options(offlinePage: nil)
                packOptions.version = try SemanticVersion(version)
                _ = try Packer.pack(source: folder + "/src-\(version)", options: packOptions, outputFolder: folder + "/release")
            }
            let contents = try ReleaseFolder.read(folder + "/release", baseURL: "https://cdn.example/")
            let byVersion = Dictionary(uniqueKeysWithValues: contents.entries.map { ($0.version.description, $0) })
            let newest = try #require(byVersion[versions.last!]?.content)
            let expectedBases = [nil] + versions.dropLast().suffix(ReleaseFolder.patchBases).map { Optional($0) }
            #expect(newest.patches.map { $0.from?.description } == expectedBases)
            #expect(try #require(byVersion["1.0.0"]?.content).patches.map(\.from) == [nil])
            #expect(try #require(byVersion["1.1.0"]?.content).patches.map { $0.from?.description } == [nil, "1.0.0"])
            // One app.js for all, one index.html per version.
            #expect(contents.objects == versions.count + 1)
            // A second run keeps whole objects and writes again one whose bytes no longer match its name.
            let objects = folder + "/release/objects"
            let files = try FileManager.default.subpathsOfDirectory(atPath: objects).filter { $0.contains("/") }.sorted()
            let damaged = objects + "/" + files[0]
            let good = try readBytes(damaged)
            try Data(good.map { $0 ^ 0xFF }).write(to: URL(fileURLWithPath: damaged))
            let again = try ReleaseFolder.read(folder + "/release", baseURL: "https://cdn.example/")
            let rewritten = try readBytes(damaged)
            #expect(again.objects == contents.objects && rewritten == good)
            for patch in newest.patches {
                #expect(patch.url.hasPrefix("https://cdn.example/patches/shop/\(versions.last!)/"))
                let path = folder + "/release/" + patch.url.dropFirst("https://cdn.example/".count)
                #expect(try FileDigest.sha256(ofFile: path).sha256 == patch.sha256)
            }
        }
    }

    @Test("per-file diffs: from each of the newest older versions and from a built-in far back, content-addressed, listed per version, kept on a second run")
    func diffs() async throws {
        try await withTemporaryFolder { folder async throws in
            // A bundler's output: app.<hash>.js changes a little each version and is renamed; logo.png never changes;
            // notes.txt is rewritten entirely (no diff worth publishing).
            var random = SystemRandomNumberGenerator()
            let library = (0..<4000).map { "export function f\($0)(x) { return x * \($0 % 97) + \"\($0)\"; }\n" }.joined()
            let versions = (0...ReleaseFolder.patchBases + 2).map { "1.\($0).0" }
            for (index, version) in versions.enumerated() {
                let hash = String(format: "c%07x", 0x100_0000 + index * 7919)
                let noise = (0..<3000).map { _ in UInt8.random(in: 0x61...0x7A, using: &random) }
                try makeTree(folder + "/src-\(version)", [
                    "index.html": "<script src=app.\(hash).js></script>",
                    "js/app.\(hash).js": library + "export const version = '\(version)';\n",
                    "logo.png": "same",
                    "notes.txt": String(decoding: noise, as: UTF8.self),
                ])
                var packOptions = try options(offlinePage: nil)
                packOptions.version = try SemanticVersion(version)
                _ = try Packer.pack(source: folder + "/src-\(version)", options: packOptions, outputFolder: folder + "/release")
            }
            let builtIn = ReleaseFolder.BuiltIn(id: try PackageID("shop"), version: try SemanticVersion("1.0.0"))
            let contents = try ReleaseFolder.read(folder + "/release", baseURL: "https://cdn.example/", builtIns: [builtIn])
            let newest = try #require(contents.entries.first { $0.version.description == versions.last! }?.content)
            let listed = try #require(newest.diffs)
            #expect(listed.base == "https://cdn.example/diffs/")
            let indexPath = folder + "/release/" + listed.url.dropFirst("https://cdn.example/".count)
            let indexBytes = try readBytes(indexPath)
            #expect(Int64(indexBytes.count) == listed.size && Digests.sha256Hex(indexBytes) == listed.sha256)
            let index = try FileDiffIndex.decode(try GunzipReader.decompress(indexBytes))
            #expect(index.version.description == versions.last!)
            // The newest app.js has diffs from the 8 newest older versions and from the built-in 1.0.0, nothing older.
            let manifests = try versions.map { version in
                try BundleReader(path: folder + "/release/shop-\(version).zip").manifest
            }
            func content(_ manifest: Manifest, _ prefix: String) -> String { manifest.files.first { $0.path.value.hasPrefix(prefix) }!.sha256 }
            let newestApp = content(manifests.last!, "js/app.")
            let expectedFroms = Set(([manifests[0]] + manifests.dropLast().suffix(ReleaseFolder.patchBases)).map { content($0, "js/app.") })
            #expect(Set(index.diffs.filter { $0.to == newestApp }.map(\.from)) == expectedFroms)
            #expect(!index.diffs.contains { $0.from == content(manifests[1], "js/app.") }, "1.1.0 is neither recent nor built in")
            // index.html's diffs may or may not pay; notes.txt's never do (random letters, rewritten).
            #expect(!index.diffs.contains { $0.to == content(manifests.last!, "notes.txt") })
            for diff in index.diffs {
                let bytes = try readBytes(folder + "/release/diffs/" + diff.path)
                #expect(Int64(bytes.count) == diff.size && Digests.sha256Hex(bytes) == diff.sha256)
                let stem = folder + "/release/objects/\(diff.to.prefix(2))/\(diff.to)"
                let object = try ReleaseContent.gzipDigests(stem + ".gz")?.size ?? FileDigest.sha256(ofFile: stem).size
                #expect(Double(diff.size) <= Double(object) * 0.75)
            }
            #expect(contents.diffs > 0 && contents.diffsEncoded == contents.diffs)
            // notes.txt (rewritten each version) was encoded, found not worth it, and left its verdict.
            #expect(contents.diffsNotWorth > 0)
            let notes = manifests.map { content($0, "notes.txt") }
            #expect(FileManager.default.fileExists(atPath: folder + "/release/diffs/" + FileDiffIndex.path(from: notes[notes.count - 2], to: notes.last!) + ".none"))
            // A second run encodes nothing new (neither the diffs on disk nor the pairs judged before), and replaces a
            // damaged diff.
            let damaged = folder + "/release/diffs/" + index.diffs[0].path
            let good = try readBytes(damaged)
            try Data(good.map { $0 ^ 0x5A }).write(to: URL(fileURLWithPath: damaged))
            let again = try ReleaseFolder.read(folder + "/release", baseURL: "https://cdn.example/", builtIns: [builtIn])
            #expect(again.diffs == contents.diffs && again.diffsEncoded == 1 && again.diffsNotWorth == 0)
            #expect(try readBytes(damaged) == good)
            // A built-in that is not published is refused by name.
            #expect(throws: ReleaseFolderError.builtInNotPublished("shop@0.9.0")) {
                try ReleaseFolder.read(folder + "/release", baseURL: "https://cdn.example/", builtIns: [.init(id: try PackageID("shop"), version: try SemanticVersion("0.9.0"))])
            }
        }
    }

    @Test("a chunk the bundler renumbered (no name rule pairs it) gets a diff from the file it resembles; an unrelated file does not")
    func similarPairing() async throws {
        try await withTemporaryFolder { folder async throws in
            var random = SystemRandomNumberGenerator()
            func text(_ count: Int) -> String { String(decoding: (0..<count).map { _ in UInt8.random(in: 0x61...0x7A, using: &random) }, as: UTF8.self) }
            let chunk = (0..<400).map { "export const v\($0) = '\(text(60))';\n" }.joined()
            let unrelatedOld = text(20_000), unrelatedNew = text(20_000)
            let edited = chunk.replacingOccurrences(of: "export const v200", with: "export const edited = 1;\nexport const v200")
            for (version, files) in [
                ("1.0.0", ["index.html": "<h1>1</h1>", "js/132.js": chunk, "css/a.css": unrelatedOld]),
                ("1.1.0", ["index.html": "<h1>2</h1>", "js/5114.js": edited, "css/b.css": unrelatedNew]),
            ] {
                try makeTree(folder + "/src-\(version)", files)
                var packOptions = try options(offlinePage: nil)
                packOptions.version = try SemanticVersion(version)
                _ = try Packer.pack(source: folder + "/src-\(version)", options: packOptions, outputFolder: folder + "/release")
            }
            let contents = try ReleaseFolder.read(folder + "/release", baseURL: "./")
            let listed = try #require(contents.entries.first { $0.version.description == "1.1.0" }?.content?.diffs)
            let index = try FileDiffIndex.decode(try GunzipReader.decompress(try readBytes(folder + "/release/" + listed.url.dropFirst(2))))
            let sha = { (text: String) in Digests.sha256Hex(Array(text.utf8)) }
            #expect(index.diffs.map { [$0.from, $0.to] } == [[sha(chunk), sha(edited)]])
            // The sketch itself: the edited chunk is near its predecessor, the unrelated stylesheets are not near each other.
            #expect(ContentSketch(Array(chunk.utf8)).similarity(to: ContentSketch(Array(edited.utf8))) > 0.8)
            #expect(ContentSketch(Array(unrelatedOld.utf8)).similarity(to: ContentSketch(Array(unrelatedNew.utf8))) < 0.05)
        }
    }
}
