import Foundation
import SatchelCore
import SatchelTestSupport
import Testing

@Suite("The satchel command line: output, JSON shapes and exit codes")
struct CLITests {
    @Test("help lists the commands and documents the exit codes")
    func help() async throws {
        let root = try await CLI.run(["--help"])
        #expect(root.status == 0)
        for command in ["pack", "verify", "inspect", "keygen"] { #expect(root.stdout.contains(command)) }
        let verify = try await CLI.run(["verify", "--help"])
        #expect(verify.stdout.contains("Exit 0 when valid, 1 when invalid"))
        #expect(verify.stdout.contains("--public-key"))
    }

    @Test("keygen writes a 0600 private key and a public key, and never overwrites them silently")
    func keygen() async throws {
        try await withTemporaryFolder { folder async throws in
            let first = try await CLI.run(["keygen", "--output", folder + "/keys"])
            #expect(first.status == 0)
            let attributes = try FileManager.default.attributesOfItem(atPath: folder + "/keys/satchel.key")
            #expect((attributes[.posixPermissions] as? Int) == 0o600)
            let privateKey = try String(contentsOfFile: folder + "/keys/satchel.key", encoding: .utf8)
            let publicKey = try String(contentsOfFile: folder + "/keys/satchel.pub", encoding: .utf8)
            #expect(Data(base64Encoded: privateKey)?.count == 32)
            #expect(Data(base64Encoded: publicKey)?.count == 32)
            let again = try await CLI.run(["keygen", "--output", folder + "/keys"])
            #expect(again.status == 1)
            #expect(again.stderr.contains("already exists; use --force"))
            #expect(try String(contentsOfFile: folder + "/keys/satchel.key", encoding: .utf8) == privateKey)
            #expect(try await CLI.run(["keygen", "--output", folder + "/keys", "--force"]).status == 0)
            #expect(try String(contentsOfFile: folder + "/keys/satchel.key", encoding: .utf8) != privateKey)
        }
    }

    @Test("pack --json prints one JSON object and nothing else on stdout")
    func packJSON() async throws {
        try await withTemporaryFolder { folder async throws in
            try makeTree(folder + "/src", app)
            let outcome = try await CLI.run([
                "pack", folder + "/src", "--id", "shop", "--version", "1.2.3", "--host", "M.Shop.Example", "--offline-page",
                "offline.html", "--route", "/api/=network-first:2000", "--output", folder + "/out", "--json",
            ])
            #expect(outcome.status == 0, "\(outcome.stderr)")
            let lines = outcome.stdout.split(separator: "\n")
            #expect(lines.count == 1)
            let object = try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as! [String: Any]
            #expect(object["bundle"] as? String == folder + "/out/shop-1.2.3.zip")
            #expect(object["fileCount"] as? Int == 4)
            #expect((object["sha256"] as? String)?.count == 64)
            #expect((object["contentHash"] as? String)?.count == 64)
            #expect(object["size"] as? Int == (try FileManager.default.attributesOfItem(atPath: folder + "/out/shop-1.2.3.zip")[.size] as? Int))
            let inspect = try await CLI.run(["inspect", folder + "/out/shop-1.2.3.zip", "--json"])
            let manifest = try JSONSerialization.jsonObject(with: Data(inspect.stdout.utf8)) as! [String: Any]
            #expect((manifest["scope"] as? [String: Any])?["hosts"] as? [String] == ["m.shop.example"])
        }
    }

    @Test("pack --route-cache writes cachePolicies and a minRuntime that keeps runtimes older than 0.2.0 away")
    func packRouteCache() async throws {
        try await withTemporaryFolder { folder async throws in
            try makeTree(folder + "/src", app)
            let outcome = try await CLI.run([
                "pack", folder + "/src", "--id", "shop", "--version", "1.0.0", "--host", "m.shop.example", "--route-cache", "/api/=stale-while-revalidate:600",
                "--route-cache", "/img/=return-cache-else-load", "--output", folder + "/out", "--quiet",
            ])
            #expect(outcome.status == 0, "\(outcome.stderr)")
            let inspect = try await CLI.run(["inspect", folder + "/out/shop-1.0.0.zip", "--json"])
            let manifest = try JSONSerialization.jsonObject(with: Data(inspect.stdout.utf8)) as! [String: Any]
            #expect(manifest["minRuntime"] as? String == "0.2.0")
            let policies = manifest["cachePolicies"] as? [[String: Any]] ?? []
            #expect(policies.count == 2 && policies[0]["policy"] as? String == "stale-while-revalidate" && policies[0]["maxAge"] as? Int == 600)
        }
    }

    @Test("pack refuses bad options as usage errors (exit 64), naming the problem, writing nothing", arguments: [
        (["--id", "Bad Id"], "invalid id"),
        (["--version", "1.0"], "invalid version"),
        (["--host", "bad_host"], "invalid host"),
        (["--prefix", "app/"], "invalid pathPrefix"),
        (["--route", "/api/=fastest"], "invalid strategy"),
        (["--route", "/api/"], "invalid route"),
        (["--format", "rar"], "--format must be zip or tar.gz"),
        (["--compression-level", "0"], "--compression-level"),
        (["--min-runtime", "two"], "invalid min-runtime"),
        (["--route-cache", "/api/=sometimes"], "must be one of use-protocol-policy"),
        (["--route-cache", "/api/=reload-revalidating:60"], "only return-cache-else-load"),
        (["--route-cache", "/api/=stale-while-revalidate", "--min-runtime", "0.1.0"], "older than 0.2.0"),
        (["--entry", "../index.html"], "--entry"),
        (["--sign-key", "/nonexistent/key"], "cannot read --sign-key"),
    ])
    func packUsageErrors(_ override: [String], _ message: String) async throws {
        try await withTemporaryFolder { folder async throws in
            try makeTree(folder + "/src", app)
            var options = ["--id": "shop", "--version": "1.0.0", "--host": "m.shop.example"]
            var extra: [String] = []
            for pair in stride(from: 0, to: override.count, by: 2) {
                if options[override[pair]] != nil { options[override[pair]] = override[pair + 1] } else { extra += [override[pair], override[pair + 1]] }
            }
            let arguments = ["pack", folder + "/src", "--output", folder + "/out"] + options.flatMap { [$0.key, $0.value] } + extra
            let outcome = try await CLI.run(arguments)
            #expect(outcome.status == 64, "\(outcome.stderr)")
            #expect(outcome.stderr.contains(message), "\(outcome.stderr)")
            #expect(!FileManager.default.fileExists(atPath: folder + "/out"))
        }
    }

    @Test("pack refuses bad sources with exit 1 and one clear line")
    func packFailures() async throws {
        try await withTemporaryFolder { folder async throws in
            let missing = try await CLI.run(["pack", folder + "/nope", "--id", "a", "--version", "1.0.0", "--host", "a.example", "--output", folder + "/out"])
            #expect(missing.status == 1)
            #expect(missing.stderr == "error: source folder \(folder)/nope does not exist\n")
            try makeTree(folder + "/src", app)
            let noEntry = try await CLI.run(["pack", folder + "/src", "--id", "a", "--version", "1.0.0", "--host", "a.example", "--entry", "main.html", "--output", folder + "/out", "--quiet"])
            #expect(noEntry.status == 1)
            #expect(noEntry.stderr == "error: entry main.html is not in the source folder\n")
            let badEpoch = try await CLI.run(["pack", folder + "/src", "--id", "a", "--version", "1.0.0", "--host", "a.example", "--output", folder + "/out"], environment: ["SOURCE_DATE_EPOCH": "soon"])
            #expect(badEpoch.status == 1)
            #expect(badEpoch.stderr.contains("SOURCE_DATE_EPOCH=soon"))
            #expect(((try? FileManager.default.contentsOfDirectory(atPath: folder + "/out")) ?? []).isEmpty)
        }
    }

    @Test("pack refuses a source past a bundle limit from the file list, before hashing a byte (a sparse 4 GiB + 1 file)")
    func packLimits() async throws {
        try await withTemporaryFolder { folder async throws in
            try makeTree(folder + "/src", app)
            // Sparse: no disk used, but hashing it would read 4 GiB of zeros (tens of seconds here).
            let handle = try #require(FileHandle(forWritingAtPath: folder + "/src/img/a.png"))
            try handle.truncate(atOffset: UInt64(BundleLimits.maxFileBytes) + 1)
            try handle.close()
            let refused = try await CLI.run(["pack", folder + "/src", "--id", "a", "--version", "1.0.0", "--host", "a.example", "--output", folder + "/out", "--quiet"])
            #expect(refused.status == 1)
            #expect(refused.stderr == "error: cannot pack: \"img/a.png\" is 4294967297 bytes, more than the limit of 4294967296 for one file\n")
            // "cannot pack:" is the check on the scanned list, which runs before hashing; the manifest's own check,
            // after hashing, would say "manifest refused".
            #expect(((try? FileManager.default.contentsOfDirectory(atPath: folder + "/out")) ?? []).isEmpty)
        }
    }

    @Test("verify exits 0 when valid, 1 naming the bad file, 64 on usage errors")
    func verifyExitCodes() async throws {
        try await withTemporaryFolder { folder async throws in
            try makeTree(folder + "/src", app)
            #expect(try await CLI.run(["keygen", "--output", folder + "/k"]).status == 0)
            let pack = try await CLI.run(["pack", folder + "/src", "--id", "shop", "--version", "1.0.0", "--host", "a.example", "--sign-key", folder + "/k/satchel.key", "--output", folder + "/out", "--quiet"])
            #expect(pack.status == 0, "\(pack.stderr)")
            #expect(pack.stdout.isEmpty)
            let bundle = folder + "/out/shop-1.0.0.zip"
            let ok = try await CLI.run(["verify", bundle, "--public-key", folder + "/k/satchel.pub"])
            #expect(ok.status == 0)
            #expect(ok.stdout == "valid: shop 1.0.0, 4 files, 44 B, signature verified\n")
            let okJSON = try await CLI.run(["verify", bundle, "--json"])
            let report = try JSONSerialization.jsonObject(with: Data(okJSON.stdout.utf8)) as! [String: Any]
            #expect(report["valid"] as? Bool == true)
            #expect(report["signed"] as? Bool == true)
            #expect(report["signatureVerified"] as? Bool == false)

            // Flip one byte of app.js inside the zip (stored data follows its name in the local header).
            var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: bundle)))
            let marker = Array("img/a.png".utf8)
            let start = bytes.firstRange(of: marker)!.upperBound
            let dataStart = bytes[start...].firstRange(of: Array("png".utf8))!.lowerBound
            bytes[dataStart] ^= 0x01
            try Data(bytes).write(to: URL(fileURLWithPath: bundle))
            let bad = try await CLI.run(["verify", bundle, "--json"])
            #expect(bad.status == 1)
            let badReport = try JSONSerialization.jsonObject(with: Data(bad.stdout.utf8)) as! [String: Any]
            #expect(badReport["valid"] as? Bool == false)
            #expect(badReport["subject"] as? String == "img/a.png")
            let badText = try await CLI.run(["verify", bundle])
            #expect(badText.status == 1)
            #expect(badText.stdout.hasPrefix("invalid: "))
            #expect(badText.stdout.contains("img/a.png"))

            #expect(try await CLI.run(["verify"]).status == 64)
            #expect(try await CLI.run(["verify", bundle, "--no-such-flag"]).status == 64)
            let badKey = try await CLI.run(["verify", bundle, "--public-key", folder + "/src/index.html"])
            #expect(badKey.status == 64)
            #expect(badKey.stderr.contains("malformed public key"))
        }
    }

    @Test("inspect shows the manifest readably, and --json prints its exact bytes")
    func inspect() async throws {
        try await withTemporaryFolder { folder async throws in
            try makeTree(folder + "/src", app)
            _ = try await CLI.run(["pack", folder + "/src", "--id", "shop", "--version", "1.0.0", "--host", "a.example", "--spa-fallback", "--output", folder + "/out", "--quiet"], environment: ["SOURCE_DATE_EPOCH": "1700000000"])
            let text = try await CLI.run(["inspect", folder + "/out/shop-1.0.0.zip"])
            #expect(text.status == 0)
            #expect(text.stdout.hasPrefix("shop 1.0.0\n"))
            #expect(text.stdout.contains("created       2023-11-14T22:13:20Z"))
            #expect(text.stdout.contains("spa fallback  yes"))
            #expect(text.stdout.contains("text/javascript  app.js"))
            let json = try await CLI.run(["inspect", folder + "/out/shop-1.0.0.zip", "--json"])
            let manifestBytes = Data(try await run("/usr/bin/unzip", ["-p", folder + "/out/shop-1.0.0.zip", "satchel.json"]).utf8)
            #expect(Data(json.stdout.utf8) == manifestBytes + Data("\n".utf8))
            let missing = try await CLI.run(["inspect", folder + "/none.zip"])
            #expect(missing.status == 1)
            #expect(missing.stderr == "error: open \(folder)/none.zip failed: No such file or directory\n")
        }
    }
}
