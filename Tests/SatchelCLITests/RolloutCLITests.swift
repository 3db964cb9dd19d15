import Foundation
import SatchelCore
import SatchelTestSupport
import Testing

@Suite("satchel catalog --channel and satchel rollout: catalogs changed in place, signed, refusals")
struct RolloutCLITests {
    /// Two versions of `shop` packed into `folder/release`, a key pair in `folder/keys`, and production's catalog.
    func publish(_ folder: String) throws -> (catalog: String, key: String) {
        var next = app
        next["app.js"] = "console.log(2)"
        for (version, files) in [("1.0.0", app), ("1.1.0", next)] {
            try makeTree(folder + "/src-\(version)", files)
            let pack = try CLI.run(["pack", folder + "/src-\(version)", "--id", "shop", "--version", version, "--host", "m.shop.example",
                                    "--output", folder + "/release", "--quiet"])
            #expect(pack.status == 0, "\(pack.stderr)")
        }
        #expect(try CLI.run(["keygen", "--output", folder + "/keys"]).status == 0)
        let catalog = folder + "/release/catalog.json"
        let made = try CLI.run(["catalog", folder + "/release", "--base-url", "./", "--output", catalog, "--sign-key", folder + "/keys/satchel.key",
                                "--serial", "10", "--report-url", "https://reports.example/r"])
        #expect(made.status == 0, "\(made.stderr)")
        return (catalog, folder + "/keys/satchel.key")
    }

    func read(_ path: String) throws -> Catalog { try Catalog.decode(try readBytes(path)) }

    @Test("rollout set, halt, revoke and set 100: each moves the version, grows the serial and re-signs; catalog keeps the rollout on the next release")
    func lifecycle() throws {
        try withTemporaryFolder { folder throws in
            let (catalog, key) = try publish(folder)
            let edit = ["--catalog", catalog, "--sign-key", key]
            let set = try CLI.run(["rollout", "set", "shop", "1.1.0", "--percent", "12.5"] + edit)
            #expect(set.status == 0 && set.stdout == "staged shop 1.1.0 at 12.5 %\n", "\(set.stderr)")
            var now = try read(catalog)
            #expect(now.serial == 11 && now.packages.map(\.version.description) == ["1.0.0"] && now.rollouts.first?.permille == 125)
            #expect(now.reportURL == "https://reports.example/r")
            let verify = try VerifyingKey(base64: String(decoding: try readBytes(folder + "/keys/satchel.pub"), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
            let signature = try Signature(base64: String(decoding: try readBytes(catalog + ".sig"), as: UTF8.self))
            #expect(try SignatureCheck.verify(try readBytes(catalog), signature: signature, trustedKeys: [verify]))

            // The next publication of the folder keeps 1.1.0 staged (serial one more).
            let again = try CLI.run(["catalog", folder + "/release", "--base-url", "./", "--output", catalog, "--sign-key", key])
            #expect(again.status == 0, "\(again.stderr)")
            now = try read(catalog)
            #expect(now.rollouts.first?.state == .staged && now.rollouts.first?.permille == 125 && now.serial > 11)

            #expect(try CLI.run(["rollout", "halt", "shop", "1.1.0"] + edit).stdout == "halted shop 1.1.0\n")
            #expect(try read(catalog).rollouts.first?.state == .halted)
            #expect(try CLI.run(["rollout", "revoke", "shop", "1.1.0"] + edit).stdout == "revoked shop 1.1.0\n")
            #expect(try read(catalog).rollouts.first?.state == .revoked)
            #expect(try CLI.run(["rollout", "set", "shop", "1.1.0", "--percent", "100"] + edit).stdout == "released shop 1.1.0 to every device\n")
            now = try read(catalog)
            #expect(now.rollouts.isEmpty && now.packages.count == 2)
            // Released to everyone, and watched from then on; a hand-made halt replaces the watch, and a second release
            // watches it again.
            #expect(now.watches.map(\.version.description) == ["1.1.0"])
            #expect(try CLI.run(["rollout", "halt", "shop", "1.1.0"] + edit).status == 0)
            now = try read(catalog)
            #expect(now.watches.isEmpty && now.packages.count == 1 && now.rollouts.first?.state == .halted && now.rollouts.first?.permille == 1000)
            #expect(try CLI.run(["rollout", "set", "shop", "1.1.0", "--percent", "100"] + edit).status == 0)
            #expect(try read(catalog).watches.map(\.version.description) == ["1.1.0"])
            #expect(try CLI.run(["rollout", "set", "shop", "1.1.0", "--percent", "50"] + edit).status == 0)
            now = try read(catalog)
            #expect(now.watches.isEmpty && now.rollouts.first?.state == .staged && now.rollouts.first?.permille == 500)
            #expect(try CLI.run(["rollout", "set", "shop", "1.1.0", "--percent", "100"] + edit).status == 0)
            // The next publication of the folder keeps the watch (its start too): the release is still being judged.
            let watched = try read(catalog).watches
            #expect(try CLI.run(["catalog", folder + "/release", "--base-url", "./", "--output", catalog, "--sign-key", key]).status == 0)
            #expect(try read(catalog).watches == watched && !watched.isEmpty)

            // Refusals: exit 64 for bad usage, 1 for what is not there; the catalog unchanged either way.
            let before = try readBytes(catalog)
            #expect(try CLI.run(["rollout", "set", "shop", "1.1.0", "--percent", "12.55"] + edit).status == 64)
            let missing = try CLI.run(["rollout", "halt", "shop", "9.9.9"] + edit)
            #expect(missing.status == 1 && missing.stderr.contains("does not list shop 9.9.9"))
            let unsigned = try CLI.run(["rollout", "halt", "shop", "1.1.0", "--catalog", catalog])
            #expect(unsigned.status == 1 && unsigned.stderr.contains("pass --sign-key"), "\(unsigned.stderr)")
            #expect(try readBytes(catalog) == before)
        }
    }

    @Test("catalog --channel writes channels/<name>/catalog.json with URLs that still reach the bundles")
    func channel() throws {
        try withTemporaryFolder { folder throws in
            let (catalog, key) = try publish(folder)
            let beta = try CLI.run(["catalog", folder + "/release", "--base-url", "./", "--output", catalog, "--channel", "beta", "--sign-key", key])
            #expect(beta.status == 0, "\(beta.stderr)")
            let channelCatalog = try read(folder + "/release/channels/beta/catalog.json")
            #expect(channelCatalog.packages.first?.url == "../../shop-1.0.0.zip")
            #expect(FileManager.default.fileExists(atPath: folder + "/release/channels/beta/catalog.json.sig"))
            #expect(try CLI.run(["catalog", folder + "/release", "--base-url", "./", "--output", catalog, "--channel", "Beta!"]).status == 64)
        }
    }

    @Test("rollout status and advance read a reports file; advance steps once, and again changes nothing")
    func statusAndAdvance() throws {
        try withTemporaryFolder { folder throws in
            let (catalog, key) = try publish(folder)
            #expect(try CLI.run(["rollout", "set", "shop", "1.1.0", "--percent", "1", "--catalog", catalog, "--sign-key", key]).status == 0)
            let since = try #require(try read(catalog).rollouts.first?.since)
            let shop = try PackageID("shop"), v110 = try SemanticVersion("1.1.0")
            var lines: [UInt8] = []
            for n in 0..<120 {
                let token = String(format: "%016x", n)
                let items: [DeviceReport.Item] = [.init(id: shop, role: .active, version: v110, token: token, state: "confirmed")]
                lines += ReportRecord(at: Timestamp(secondsSinceEpoch: since.secondsSinceEpoch + 1), via: "post", report: DeviceReport(channel: .production, items: items)).jsonLine
            }
            lines += Array("not a report\n".utf8)
            try Data(lines).write(to: URL(fileURLWithPath: folder + "/reports.jsonl"))
            let status = try CLI.run(["rollout", "status", "--catalog", catalog, "--reports", folder + "/reports.jsonl", "--json"])
            #expect(status.status == 0, "\(status.stderr)")
            let parsed = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
            let versions = parsed?["versions"] as? [[String: Any]] ?? []
            let row = versions.first { $0["version"] as? String == "1.1.0" }
            #expect(row?["installed"] as? Int == 120 && row?["confirmed"] as? Int == 120 && row?["failed"] as? Int == 0 && row?["state"] as? String == "staged")
            #expect(row?["percent"] as? Double == 1 && (row?["interval"] as? [Double])?.count == 2 && parsed?["skipped"] as? Int == 1)
            for key in ["id", "offered", "failureRate"] { #expect(row?[key] != nil, "\(key)") }

            let advance = ["rollout", "advance", "--catalog", catalog, "--reports", folder + "/reports.jsonl", "--sign-key", key,
                           "--schedule", "1,5,25,100", "--max-failure-rate", "0.05", "--min-devices", "100", "--json"]
            // The reports arrived a second after the step began; the advance runs later than that, as in life.
            while Int64(Date().timeIntervalSince1970) < since.secondsSinceEpoch + 2 { usleep(100_000) }
            let first = try CLI.run(advance)
            #expect(first.status == 0 && first.stdout.contains(#""action":"advanced""#) && first.stdout.contains(#""to":5"#), "\(first.stdout)\(first.stderr)")
            #expect(try read(catalog).rollouts.first?.permille == 50)
            let second = try CLI.run(advance)
            #expect(second.status == 0 && second.stdout.contains(#""changed":false"#) && second.stdout.contains(#""action":"waiting""#), "\(second.stdout)")
            #expect(try read(catalog).rollouts.first?.permille == 50)
            #expect(try CLI.run(advance.dropLast(7) + ["--schedule", "5,1", "--max-failure-rate", "0.05"]).status == 64)
        }
    }

    /// One report line: `items` from device `n`, received at `at`.
    func reportLine(_ n: Int, at: Timestamp, _ items: (String) -> [DeviceReport.Item]) -> [UInt8] {
        ReportRecord(at: at, via: "post", report: DeviceReport(channel: .production, items: items(String(format: "%016x", n)))).jsonLine
    }

    @Test("a release to everyone is watched: status counts failures by reason, advance halts a failing one out of packages and ends a healthy one's watch, --log appends each decision")
    func watchedReleases() throws {
        try withTemporaryFolder { folder throws in
            let (catalog, key) = try publish(folder)
            let edit = ["--catalog", catalog, "--sign-key", key]
            for version in ["1.0.0", "1.1.0"] { #expect(try CLI.run(["rollout", "set", "shop", version, "--percent", "100"] + edit).status == 0) }
            let watched = try read(catalog)
            #expect(watched.watches.map(\.version.description) == ["1.0.0", "1.1.0"] && watched.packages.count == 2)
            let since = try #require(watched.watches.map(\.since).max())
            let at = Timestamp(secondsSinceEpoch: since.secondsSinceEpoch + 1)
            let shop = try PackageID("shop"), v100 = try SemanticVersion("1.0.0"), v110 = try SemanticVersion("1.1.0")
            var lines: [UInt8] = []
            // 1.1.0: 70 devices confirmed it, 20 crashed, 10 hit a script error. 1.0.0: 60 confirmed.
            for n in 0..<100 {
                lines += reportLine(n, at: at) { token in
                    n < 70 ? [.init(id: shop, role: .active, version: v110, token: token, state: "confirmed")]
                        : [.init(id: shop, role: .failed, version: v110, token: token, why: n < 90 ? "crashed" : "script-error")]
                }
                if n < 60 { lines += reportLine(1000 + n, at: at) { [.init(id: shop, role: .active, version: v100, token: $0, state: "confirmed")] } }
            }
            let reports = folder + "/reports.jsonl"
            try Data(lines).write(to: URL(fileURLWithPath: reports))

            let status = try CLI.run(["rollout", "status", "--catalog", catalog, "--reports", reports, "--json"])
            let versions = (try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["versions"] as? [[String: Any]] ?? []
            let row = try #require(versions.first { $0["version"] as? String == "1.1.0" }, "\(status.stdout)\(status.stderr)")
            #expect(row["failuresByReason"] as? [String: Int] == ["crashed": 20, "script-error": 10] && row["watched"] as? Bool == true)
            #expect(row["failed"] as? Int == 30 && row["state"] as? String == "released" && row["since"] as? String == watched.watches[1].since.description)
            let table = try CLI.run(["rollout", "status", "--catalog", catalog, "--reports", reports])
            #expect(table.stdout.contains("released*") && table.stdout.contains("crashed 20, script-error 10"), "\(table.stdout)")

            // The log already holds a line: it is appended to, never truncated.
            let log = folder + "/decisions.jsonl"
            try Data("{\"earlier\":true}\n".utf8).write(to: URL(fileURLWithPath: log))
            let advance = ["rollout", "advance", "--reports", reports, "--schedule", "1,5,25,100", "--max-failure-rate", "0.1", "--log", log, "--json"] + edit
            while Int64(Date().timeIntervalSince1970) < at.secondsSinceEpoch + 1 { usleep(100_000) }
            let first = try CLI.run(advance + ["--confirmations", "100"])
            #expect(first.status == 0, "\(first.stderr)")
            let result = try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [String: Any]
            let steps = result?["steps"] as? [[String: Any]] ?? []
            #expect(result?["changed"] as? Bool == true && steps.map { "\($0["version"]!) \($0["action"]!)" } == ["1.0.0 watching", "1.1.0 halted"], "\(first.stdout)")
            #expect((steps.first?["reason"] as? String)?.hasPrefix("60 of 100 confirmations") == true, "\(steps)")
            // Halted: out of packages (older updaters stop offering it), halted at 100 % in rollouts (devices on it keep it).
            var now = try read(catalog)
            #expect(now.packages.map(\.version) == [v100] && now.rollouts.map(\.state) == [.halted] && now.rollouts.first?.permille == 1000)
            #expect(now.watches.map(\.version) == [v100])

            var logged = String(decoding: try readBytes(log), as: UTF8.self).split(separator: "\n").map(String.init)
            #expect(logged.count == 3 && logged[0] == "{\"earlier\":true}", "\(logged)")
            let halt = try #require(try JSONSerialization.jsonObject(with: Data(logged[2].utf8)) as? [String: Any])
            #expect(Set(halt.keys) == ["at", "serial", "id", "version", "action", "to", "reason", "maxFailureRate", "status"], "\(halt.keys)")
            #expect(halt["action"] as? String == "halted" && halt["version"] as? String == "1.1.0" && halt["to"] is NSNull && halt["reason"] is String)
            #expect(halt["serial"] as? Int == Int(now.serial) && halt["maxFailureRate"] as? Double == 0.1)
            #expect(((halt["status"] as? [String: Any])?["failuresByReason"] as? [String: Int]) == ["crashed": 20, "script-error": 10])
            #expect(try Timestamp(rfc3339: halt["at"] as? String ?? "") <= Timestamp(secondsSinceEpoch: Int64(Date().timeIntervalSince1970)))
            let watching = try #require(try JSONSerialization.jsonObject(with: Data(logged[1].utf8)) as? [String: Any])
            #expect(watching["action"] as? String == "watching" && watching["to"] is NSNull && watching["serial"] as? Int == Int(now.serial))

            // Fewer confirmations asked: 1.0.0's 60 devices, none failed (upper bound 0.06), are enough, and its watch ends.
            let second = try CLI.run(advance + ["--confirmations", "50"])
            #expect(second.status == 0 && second.stdout.contains(#""action":"watch-ended""#), "\(second.stdout)\(second.stderr)")
            now = try read(catalog)
            #expect(now.watches.isEmpty && now.packages.map(\.version) == [v100])
            logged = String(decoding: try readBytes(log), as: UTF8.self).split(separator: "\n").map(String.init)
            #expect(logged.count == 4 && logged[3].contains(#""action":"watch-ended""#))
            // Nothing left to judge: nothing changes, nothing is logged.
            let third = try CLI.run(advance + ["--confirmations", "50"])
            #expect(third.status == 0 && third.stdout.contains(#""changed":false"#) && third.stdout.contains(#""steps":[]"#), "\(third.stdout)")
            #expect(String(decoding: try readBytes(log), as: UTF8.self).split(separator: "\n").count == 4)
            #expect(try CLI.run(advance + ["--confirmations", "0"]).status == 64)
            let unwritable = try CLI.run(["rollout", "advance", "--reports", reports, "--schedule", "1,100", "--max-failure-rate", "0.05",
                                          "--log", folder + "/missing/log.jsonl"] + edit)
            #expect(unwritable.status == 1 && unwritable.stderr.contains("cannot open the log"), "\(unwritable.stderr)")
        }
    }
}
