import Foundation
import SatchelTestSupport
import Testing

@Suite("satchel catalog, diff and update: output, refusals and exit codes")
struct ReleaseCLITests {
    /// Packs two versions of `app` (1.1.0 changes app.js and drops img/a.png) into `folder/release`.
    func release(_ folder: String) async throws -> (String, String) {
        var next = app
        next["app.js"] = "console.log(2)"
        next.removeValue(forKey: "img/a.png")
        for (version, files) in [("1.0.0", app), ("1.1.0", next)] {
            try makeTree(folder + "/src-\(version)", files)
            let pack = try await CLI.run(["pack", folder + "/src-\(version)", "--id", "shop", "--version", version, "--host", "m.shop.example",
                                    "--output", folder + "/release", "--quiet"])
            #expect(pack.status == 0, "\(pack.stderr)")
        }
        return (folder + "/release/shop-1.0.0.zip", folder + "/release/shop-1.1.0.zip")
    }

    @Test("diff and catalog write what they say, deterministically")
    func diffAndCatalog() async throws {
        try await withTemporaryFolder { folder async throws in
            let (old, new) = try await release(folder)
            let diff = try await CLI.run(["diff", old, new, "--output", folder + "/release", "--json"])
            #expect(diff.status == 0, "\(diff.stderr)")
            let result = try JSONSerialization.jsonObject(with: Data(diff.stdout.utf8)) as? [String: Any]
            #expect(result?["changed"] as? Int == 1 && result?["deleted"] as? Int == 1 && result?["added"] as? Int == 0)
            let args = ["catalog", folder + "/release", "--base-url", "https://cdn.example/r", "--expires", "2030-01-01T00:00:00Z", "--serial", "1"]
            let first = try await CLI.run(args + ["--output", folder + "/a.json"])
            let second = try await CLI.run(args + ["--output", folder + "/b.json"])
            #expect(first.status == 0 && second.status == 0, "\(first.stderr)")
            // 1.0.0 holds four distinct contents (index.html, app.js, offline.html, img/a.png) and 1.1.0 one new app.js.
            // Patches: each version from nothing, and 1.1.0 from 1.0.0. One step, to 1.1.0 from 1.0.0: its patch and app.js.
            #expect(first.stdout == "wrote \(folder)/a.json (unsigned): 2 bundles, 1 delta, 5 objects, 3 manifest patches, 0 diffs (0 new), 1 step (644 B), expires 2030-01-01T00:00:00Z\n")
            #expect(try readBytes(folder + "/a.json") == readBytes(folder + "/b.json"))
            let text = try String(contentsOfFile: folder + "/a.json", encoding: .utf8)
            #expect(text.contains(#""url":"https://cdn.example/r/shop-1.0.0-1.1.0.zip""#))
            #expect(text.hasPrefix(#"{"expires":"2030-01-01T00:00:00Z","packages":[{"content":{"manifest":""#) && text.hasSuffix(#""schema":1,"serial":1}"#))
            #expect(text.contains(#""url":"https://cdn.example/r/patches/shop/1.1.0/from-1.0.0.json.gz""#))
            #expect(FileManager.default.fileExists(atPath: folder + "/release/patches/shop/1.1.0/from-1.0.0.json.gz"))
            let objects = try FileManager.default.subpathsOfDirectory(atPath: folder + "/release/objects").filter { $0.contains("/") }
            #expect(objects.count == 5, "\(objects)")
            // The step is named on 1.1.0 only, by its bytes, and the second run wrote the very same file.
            let steps = try FileManager.default.contentsOfDirectory(atPath: folder + "/release/steps/shop/1.1.0")
            #expect(steps.count == 1 && steps[0].hasPrefix("from-1.0.0-") && steps[0].hasSuffix(".step"), "\(steps)")
            #expect(text.contains(#""steps":[{"from":"1.0.0","sha256":""#) && text.components(separatedBy: #""steps":"#).count == 2)
        }
    }

    @Test("a tar.gz bundle: catalog refuses to list it and install refuses it (devices install zip), both exit 1 naming it; verify and inspect still read it")
    func tarGzipOnTheDeviceSide() async throws {
        try await withTemporaryFolder { folder async throws in
            try makeTree(folder + "/src", app)
            let pack = try await CLI.run(["pack", folder + "/src", "--id", "shop", "--version", "1.0.0", "--host", "m.shop.example",
                                    "--format", "tar.gz", "--output", folder + "/release", "--quiet"])
            #expect(pack.status == 0, "\(pack.stderr)")
            let tarball = folder + "/release/shop-1.0.0.tar.gz"
            let catalog = try await CLI.run(["catalog", folder + "/release", "--base-url", "x/", "--output", folder + "/c.json"])
            #expect(catalog.status == 1)
            #expect(catalog.stderr == "error: \(tarball) is a tar.gz bundle; a catalog lists zip bundles only, since devices install zip: repack it as zip (satchel pack --format zip)\n")
            #expect(!FileManager.default.fileExists(atPath: folder + "/c.json"))
            let install = try await CLI.run(["install", tarball, "--store", folder + "/store"])
            #expect(install.status == 1)
            #expect(install.stderr.contains("\(tarball) is a tar.gz bundle; devices install zip bundles only: repack it as zip"), "\(install.stderr)")
            #expect(try await CLI.run(["verify", tarball]).status == 0)
            #expect(try await CLI.run(["inspect", tarball]).status == 0)
        }
    }

    @Test("refusals: usage errors exit 64, bad inputs exit 1 naming the problem")
    func refusals() async throws {
        try await withTemporaryFolder { folder async throws in
            let (old, _) = try await release(folder)
            let badExpiry = try await CLI.run(["catalog", folder + "/release", "--base-url", "x/", "--expires-in", "soon", "--output", folder + "/c.json"])
            #expect(badExpiry.status == 64)
            try FileManager.default.createDirectory(atPath: folder + "/empty", withIntermediateDirectories: true)
            let empty = try await CLI.run(["catalog", folder + "/empty", "--base-url", "x/", "--output", folder + "/c.json"])
            #expect(empty.status == 1 && empty.stderr.contains("no bundles in"))
            let badBuiltIn = try await CLI.run(["catalog", folder + "/release", "--base-url", "x/", "--built-in", "shop", "--output", folder + "/c.json"])
            #expect(badBuiltIn.status == 64 && badBuiltIn.stderr.contains("--built-in"), "\(badBuiltIn.stderr)")
            let unpublished = try await CLI.run(["catalog", folder + "/release", "--base-url", "x/", "--built-in", "shop@0.9.0", "--output", folder + "/c.json"])
            #expect(unpublished.status == 1 && unpublished.stderr.contains("built-in shop@0.9.0 has no full bundle in the folder"), "\(unpublished.stderr)")
            #expect(!FileManager.default.fileExists(atPath: folder + "/c.json"))
            let same = try await CLI.run(["diff", old, old, "--output", folder + "/d"])
            #expect(same.status == 1 && same.stderr.contains("both bundles are version 1.0.0"))
            try Data("not a zip".utf8).write(to: URL(fileURLWithPath: folder + "/release/broken.zip"))
            let broken = try await CLI.run(["catalog", folder + "/release", "--base-url", "x/", "--output", folder + "/c.json"])
            #expect(broken.status == 1 && broken.stderr.contains("broken.zip"))
            #expect(!FileManager.default.fileExists(atPath: folder + "/c.json"))
            let offline = try await CLI.run(["update", "--store", folder + "/store", "--catalog", "http://127.0.0.1:9/catalog.json", "--attempts", "1"])
            #expect(offline.status == 1 && offline.stderr.contains("127.0.0.1:9/catalog.json"), "\(offline.stderr)")
            let notHTTP = try await CLI.run(["update", "--store", folder + "/store", "--catalog", "file:///etc/passwd"])
            #expect(notHTTP.status == 1 && notHTTP.stderr.contains("not a usable http(s) URL"))
        }
    }
}
