import Foundation
import SatchelTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("Store commands across processes")
struct StoreProcessTests {
    /// Packs `id` into `folder/out` and returns the bundle path.
    func pack(_ folder: String, id: String, host: String) throws -> String {
        try makeTree(folder + "/src-\(id)", app)
        let outcome = try CLI.run(["pack", folder + "/src-\(id)", "--id", id, "--version", "1.0.0", "--host", host, "--output", folder + "/out", "--quiet"])
        try #require(outcome.status == 0, "\(outcome.stderr)")
        return folder + "/out/\(id)-1.0.0.zip"
    }

    @Test("two installers in two processes are serialised by the store lock")
    func lock() throws {
        try withTemporaryFolder { folder throws in
            let first = try pack(folder, id: "first", host: "first.example")
            let second = try pack(folder, id: "second", host: "second.example")
            // The first installer stops, holding the lock, just before its rename.
            let paused = Process()
            paused.executableURL = URL(fileURLWithPath: CLI.binary)
            paused.arguments = ["install", first, "--store", folder + "/store"]
            paused.environment = ProcessInfo.processInfo.environment.merging(["SATCHEL_PAUSE_AT": "rename"]) { _, new in new }
            let pausedErr = Pipe()
            paused.standardError = pausedErr
            paused.standardOutput = FileHandle.nullDevice
            try paused.run()
            let line = String(decoding: pausedErr.fileHandleForReading.availableDataWaiting(for: "paused at rename"), as: UTF8.self)
            #expect(line.contains("satchel: paused at rename"))

            let waiter = Process()
            waiter.executableURL = URL(fileURLWithPath: CLI.binary)
            waiter.arguments = ["install", second, "--store", folder + "/store"]
            waiter.standardOutput = FileHandle.nullDevice
            waiter.standardError = FileHandle.nullDevice
            try waiter.run()
            Thread.sleep(forTimeInterval: 1.5)
            #expect(waiter.isRunning, "the second installer must wait for the lock")
            #expect(!FileManager.default.fileExists(atPath: folder + "/store/packages/second"))

            kill(paused.processIdentifier, SIGKILL)
            paused.waitUntilExit()
            waiter.waitUntilExit()
            #expect(waiter.terminationStatus == 0)
            let list = try CLI.run(["list", "--store", folder + "/store", "--json"])
            let packages = try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as! [[String: Any]]
            // The killed install never became visible; the waiting one completed.
            #expect(packages.map { $0["id"] as? String } == ["second"])
            #expect(try CLI.run(["check", "--store", folder + "/store"]).status == 0)
        }
    }

    @Test("store commands print one line and exit 1 on refusal, 64 on bad arguments")
    func exitCodes() throws {
        try withTemporaryFolder { folder throws in
            let bundle = try pack(folder, id: "shop", host: "m.shop.example")
            let install = try CLI.run(["install", bundle, "--store", folder + "/store", "--json"])
            #expect(install.status == 0, "\(install.stderr)")
            let result = try JSONSerialization.jsonObject(with: Data(install.stdout.utf8)) as! [String: Any]
            #expect(result["version"] as? String == "1.0.0")
            #expect(try CLI.run(["confirm", "shop", "--store", folder + "/store"]).stdout == "shop 1.0.0 confirmed\n")
            let rollback = try CLI.run(["rollback", "shop", "--store", folder + "/store"])
            #expect(rollback.status == 1)
            #expect(rollback.stderr == "error: package shop has no earlier version to roll back to (none served without failing, and the app has no built-in one)\n")
            #expect(try CLI.run(["activate", "Bad Id", "1.0.0", "--store", folder + "/store"]).status == 64)
            #expect(try CLI.run(["install", bundle, "--store", folder + "/store", "--sha256", String(repeating: "a", count: 64)]).status == 1)
            let launch = try CLI.run(["launch", "--store", folder + "/store", "--json"])
            #expect(launch.status == 0)
        }
    }
}

extension FileHandle {
    /// Reads until `marker` appears (or the stream ends), for waiting on a child's progress line.
    func availableDataWaiting(for marker: String, timeout: TimeInterval = 60) -> Data {
        var data = Data()
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let chunk = availableData
            if chunk.isEmpty { break }
            data.append(chunk)
            if String(decoding: data, as: UTF8.self).contains(marker) { break }
        }
        return data
    }
}

@Suite("satchel resolve")
struct ResolveTests {
    @Test("prints the package, version, file, status and headers the engine would send, or the miss")
    func resolve() throws {
        try withTemporaryFolder { folder throws in
            try makeTree(folder + "/src", app)
            _ = try CLI.run(["pack", folder + "/src", "--id", "shop", "--version", "1.0.0", "--host", "m.shop.example", "--prefix", "/app/", "--route", "/app/api/=network-first:900", "--output", folder + "/out", "--quiet"])
            #expect(try CLI.run(["install", folder + "/out/shop-1.0.0.zip", "--store", folder + "/store"]).status == 0)
            let hit = try CLI.run(["resolve", "satchel://m.shop.example/app/app.js?v=2", "--store", folder + "/store", "--header", "Range: bytes=-4", "--json"])
            #expect(hit.status == 0, "\(hit.stderr)")
            let report = try JSONSerialization.jsonObject(with: Data(hit.stdout.utf8)) as! [String: Any]
            #expect(report["package"] as? String == "shop@1.0.0")
            #expect(report["file"] as? String == "app.js")
            #expect(report["status"] as? Int == 206)
            let headers = Dictionary(uniqueKeysWithValues: (report["headers"] as! [[String]]).map { ($0[0], $0[1]) })
            #expect(headers["Content-Range"] == "bytes 10-13/14")
            #expect(headers["Content-Type"] == "text/javascript; charset=utf-8")
            let text = try CLI.run(["resolve", "https://m.shop.example/app", "--store", folder + "/store"])
            #expect(text.stdout.hasPrefix("shop@1.0.0 index.html\n200\n"))
            let miss = try CLI.run(["resolve", "satchel://m.shop.example/app/api/cart", "--store", folder + "/store"])
            #expect(miss.stdout.hasPrefix("miss (networkRoute): strategy network-first; the network would be asked for https://m.shop.example/app/api/cart"))
            let traversal = try CLI.run(["resolve", "satchel://m.shop.example/app/%2e%2e/secret", "--store", folder + "/store", "--json"])
            #expect((try JSONSerialization.jsonObject(with: Data(traversal.stdout.utf8)) as! [String: Any])["status"] as? Int == 400)
        }
    }
}
