import Foundation
import SatchelTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("Store commands across processes")
struct StoreProcessTests {
    /// Packs `id` into `folder/out` and returns the bundle path.
    func pack(_ folder: String, id: String, host: String) async throws -> String {
        try makeTree(folder + "/src-\(id)", app)
        let outcome = try await CLI.run(["pack", folder + "/src-\(id)", "--id", id, "--version", "1.0.0", "--host", host, "--output", folder + "/out", "--quiet"])
        try #require(outcome.status == 0, "\(outcome.stderr)")
        return folder + "/out/\(id)-1.0.0.zip"
    }

    @Test("two installers in two processes are serialised by the store lock")
    func lock() async throws {
        try await withTemporaryFolder { folder async throws in
            let first = try await pack(folder, id: "first", host: "first.example")
            let second = try await pack(folder, id: "second", host: "second.example")
            // The first installer stops, holding the lock, just before its rename.
            let environment = ProcessInfo.processInfo.environment.merging(["SATCHEL_PAUSE_AT": "rename"]) { _, new in new }
            let paused = try ChildProcess(CLI.binary, ["install", first, "--store", folder + "/store"], environment: environment)
            let said = await paused.output(containing: "paused at rename", on: .stderr)
            #expect(said?.contains("satchel: paused at rename") == true, "\(paused.text(.stderr))")

            let waiter = try ChildProcess(CLI.binary, ["install", second, "--store", folder + "/store"])
            // Still waiting after a while is the property: the wait is a floor, and a slow machine only makes it
            // likelier that the second installer has reached the lock.
            try await Task.sleep(for: .seconds(1.5))
            #expect(waiter.isRunning, "the second installer must wait for the lock")
            #expect(!FileManager.default.fileExists(atPath: folder + "/store/packages/second"))

            paused.send(SIGKILL)
            _ = await paused.exitStatus()
            let waited = await waiter.finished()
            #expect(waited.status == 0, "\(waited.stderr)")
            let list = try await CLI.run(["list", "--store", folder + "/store", "--json"])
            let packages = try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as! [[String: Any]]
            // The killed install never became visible; the waiting one completed.
            #expect(packages.map { $0["id"] as? String } == ["second"])
            #expect(try await CLI.run(["check", "--store", folder + "/store"]).status == 0)
        }
    }

    @Test("store commands print one line and exit 1 on refusal, 64 on bad arguments")
    func exitCodes() async throws {
        try await withTemporaryFolder { folder async throws in
            let bundle = try await pack(folder, id: "shop", host: "m.shop.example")
            let install = try await CLI.run(["install", bundle, "--store", folder + "/store", "--json"])
            #expect(install.status == 0, "\(install.stderr)")
            let result = try JSONSerialization.jsonObject(with: Data(install.stdout.utf8)) as! [String: Any]
            #expect(result["version"] as? String == "1.0.0")
            #expect(try await CLI.run(["confirm", "shop", "--store", folder + "/store"]).stdout == "shop 1.0.0 confirmed\n")
            let rollback = try await CLI.run(["rollback", "shop", "--store", folder + "/store"])
            #expect(rollback.status == 1)
            #expect(rollback.stderr == "error: package shop has no earlier version to roll back to (none served without failing, and the app has no built-in one)\n")
            #expect(try await CLI.run(["activate", "Bad Id", "1.0.0", "--store", folder + "/store"]).status == 64)
            #expect(try await CLI.run(["install", bundle, "--store", folder + "/store", "--sha256", String(repeating: "a", count: 64)]).status == 1)
            let launch = try await CLI.run(["launch", "--store", folder + "/store", "--json"])
            #expect(launch.status == 0)
        }
    }
}

@Suite("satchel resolve")
struct ResolveTests {
    @Test("prints the package, version, file, status and headers the engine would send, or the miss")
    func resolve() async throws {
        try await withTemporaryFolder { folder async throws in
            try makeTree(folder + "/src", app)
            _ = try await CLI.run(["pack", folder + "/src", "--id", "shop", "--version", "1.0.0", "--host", "m.shop.example", "--prefix", "/app/", "--route", "/app/api/=network-first:900", "--output", folder + "/out", "--quiet"])
            #expect(try await CLI.run(["install", folder + "/out/shop-1.0.0.zip", "--store", folder + "/store"]).status == 0)
            let hit = try await CLI.run(["resolve", "satchel://m.shop.example/app/app.js?v=2", "--store", folder + "/store", "--header", "Range: bytes=-4", "--json"])
            #expect(hit.status == 0, "\(hit.stderr)")
            let report = try JSONSerialization.jsonObject(with: Data(hit.stdout.utf8)) as! [String: Any]
            #expect(report["package"] as? String == "shop@1.0.0")
            #expect(report["file"] as? String == "app.js")
            #expect(report["status"] as? Int == 206)
            let headers = Dictionary(uniqueKeysWithValues: (report["headers"] as! [[String]]).map { ($0[0], $0[1]) })
            #expect(headers["Content-Range"] == "bytes 10-13/14")
            #expect(headers["Content-Type"] == "text/javascript; charset=utf-8")
            let text = try await CLI.run(["resolve", "https://m.shop.example/app", "--store", folder + "/store"])
            #expect(text.stdout.hasPrefix("shop@1.0.0 index.html\n200\n"))
            let miss = try await CLI.run(["resolve", "satchel://m.shop.example/app/api/cart", "--store", folder + "/store"])
            #expect(miss.stdout.hasPrefix("miss (networkRoute): strategy network-first; the network would be asked for https://m.shop.example/app/api/cart"))
            let traversal = try await CLI.run(["resolve", "satchel://m.shop.example/app/%2e%2e/secret", "--store", folder + "/store", "--json"])
            #expect((try JSONSerialization.jsonObject(with: Data(traversal.stdout.utf8)) as! [String: Any])["status"] as? Int == 400)
        }
    }
}
