import Foundation
import SatchelCore
import SatchelTestSupport
import Testing

@Suite("satchel catalog --channel and satchel rollout: catalogs changed in place, signed, refusals")
struct RolloutCLITests {
    /// Two versions of `shop` packed into `folder/release`, a key pair in `folder/keys`, and production's catalog.
    func publish(_ folder: String) async throws -> (catalog: String, key: String) {
        var next = app
        next["app.js"] = "console.log(2)"
        for (version, files) in [("1.0.0", app), ("1.1.0", next)] {
            try makeTree(folder + "/src-\(version)", files)
            let pack = try await CLI.run(["pack", folder + "/src-\(version)", "--id", "shop", "--version", version, "--host", "m.shop.example",
                                    "--output", folder + "/release", "--quiet"])
            #expect(pack.status == 0, "\(pack.stderr)")
        }
        #expect(try await CLI.run(["keygen", "--output", folder + "/keys"]).status == 0)
        let catalog = folder + "/release/catalog.json"
        let made = try await CLI.run(["catalog", folder + "/release", "--base-url", "./", "--output", catalog, "--sign-key", folder + "/keys/satchel.key",
                                "--serial", "10", "--report-url", "https://reports.example/r"])
        #expect(made.status == 0, "\(made.stderr)")
        return (catalog, folder + "/keys/satchel.key")
    }

    func read(_ path: String) async throws -> Catalog { try Catalog.decode(try readBytes(path)) }

    @Test("rollout set, halt, revoke and set 100: each moves the version, grows the serial and re-signs; catalog keeps the rollout on the next release")
    func lifecycle() async throws {
        try await withTemporaryFolder { folder async throws in
            let (catalog, key) = try await publish(folder)
            let edit = ["--catalog", catalog, "--sign-key", key]
            let set = try await CLI.run(["rollout", "set", "shop", "1.1.0", "--percent", "12.5"] + edit)
            #expect(set.status == 0 && set.stdout == "staged shop 1.1.0 at 12.5 %\n", "\(set.stderr)")
            var now = try await read(catalog)
            #expect(now.serial == 11 && now.packages.map(\.version.description) == ["1.0.0"] && now.rollouts.first?.permille == 125)
            #expect(now.reportURL == "https://reports.example/r")
            let verify = try VerifyingKey(base64: String(decoding: try readBytes(folder + "/keys/satchel.pub"), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
            let signature = try Signature(base64: String(decoding: try readBytes(catalog + ".sig"), as: UTF8.self))
            #expect(verify.isValid(signature, for: try readBytes(catalog)))

            // The next publication of the folder keeps 1.1.0 staged (serial one more).
            let again = try await CLI.run(["catalog", folder + "/release", "--base-url", "./", "--output", catalog, "--sign-key", key])
            #expect(again.status == 0, "\(again.stderr)")
            now = try await read(catalog)
            #expect(now.rollouts.first?.state == .staged && now.rollouts.first?.permille == 125 && now.serial > 11)

            #expect(try await CLI.run(["rollout", "halt", "shop", "1.1.0"] + edit).stdout == "halted shop 1.1.0\n")
            await #expect(try read(catalog).rollouts.first?.state == .halted)
            #expect(try await CLI.run(["rollout", "revoke", "shop", "1.1.0"] + edit).stdout == "revoked shop 1.1.0\n")
            await #expect(try read(catalog).rollouts.first?.state == .revoked)
            #expect(try await CLI.run(["rollout", "set", "shop", "1.1.0", "--percent", "100"] + edit).stdout == "released shop 1.1.0 to every device\n")
            now = try await read(catalog)
            #expect(now.rollouts.isEmpty && now.packages.count == 2)
            // Released to everyone, and watched from then on; a hand-made halt replaces the watch, and a second release
            // watches it again.
            #expect(now.watches.map(\.version.description) == ["1.1.0"])
            #expect(try await CLI.run(["rollout", "halt", "shop", "1.1.0"] + edit).status == 0)
            now = try await read(catalog)
            #expect(now.watches.isEmpty && now.packages.count == 1 && now.rollouts.first?.state == .halted && now.rollouts.first?.permille == 1000)
            #expect(try await CLI.run(["rollout", "set", "shop", "1.1.0", "--percent", "100"] + edit).status == 0)
            await #expect(try read(catalog).watches.map(\.version.description) == ["1.1.0"])
            #expect(try await CLI.run(["rollout", "set", "shop", "1.1.0", "--percent", "50"] + edit).status == 0)
            now = try await read(catalog)
            #expect(now.watches.isEmpty && now.rollouts.first?.state == .staged && now.rollouts.first?.permille == 500)
            #expect(try await CLI.run(["rollout", "set", "shop", "1.1.0", "--percent", "100"] + edit).status == 0)
            // The next publication of the folder keeps the watch (its start too): the release is still being judged.
            let watched = try await read(catalog).watches
            #expect(try await CLI.run(["catalog", folder + "/release", "--base-url", "./", "--output", catalog, "--sign-key", key]).status == 0)
            await #expect(try read(catalog).watches == watched && !watched.isEmpty)

            // Refusals: exit 64 for bad usage, 1 for what is not there; the catalog unchanged either way.
            let before = try readBytes(catalog)
            #expect(try await CLI.run(["rollout", "set", "shop", "1.1.0", "--percent", "12.55"] + edit).status == 64)
            let missing = try await CLI.run(["rollout", "halt", "shop", "9.9.9"] + edit)
            #expect(missing.status == 1 && missing.stderr.contains("does not list shop 9.9.9"))
            let unsigned = try await CLI.run(["rollout", "halt", "shop", "1.1.0", "--catalog", catalog])
            #expect(unsigned.status == 1 && unsigned.stderr.contains("pass --sign-key"), "\(unsigned.stderr)")
            #expect(try readBytes(catalog) == before)
        }
    }

    @Test("catalog --channel writes channels/<name>/catalog.json with URLs that still reach the bundles")
    func channel() async throws {
        try await withTemporaryFolder { folder async throws in
            let (catalog, key) = try await publish(folder)
            let beta = try await CLI.run(["catalog", folder + "/release", "--base-url", "./", "--output", catalog, "--channel", "beta", "--sign-key", key])
            #expect(beta.status == 0, "\(beta.stderr)")
            let channelCatalog = try await read(folder + "/release/channels/beta/catalog.json")
            #expect(channelCatalog.packages.first?.url == "../../shop-1.0.0.zip")
            #expect(FileManager.default.fileExists(atPath: folder + "/release/channels/beta/catalog.json.sig"))
            #expect(try await CLI.run(["catalog", folder + "/release", "--base-url", "./", "--output", catalog, "--channel", "Beta!"]).status == 64)
        }
    }

    @Test("rollout status and advance read a reports file; advance steps once, and again changes nothing")
    func statusAndAdvance() async throws {
        try await withTemporaryFolder { folder async throws in
            let (catalog, key) = try await publish(folder)
            #expect(try await CLI.run(["rollout", "set", "shop", "1.1.0", "--percent", "1", "--catalog", catalog, "--sign-key", key]).status == 0)
            let since = try await #require(try read(catalog).rollouts.first?.since)
            let shop = try PackageID("shop"), v110 = try SemanticVersion("1.1.0")
            var lines: [UInt8] = []
            for n in 0..<120 {
                let token = String(format: "%016x", n)
                let items: [DeviceReport.Item] = [.init(id: shop, role: .active, version: v110, token: token, state: "confirmed")]
                lines += ReportRecord(at: Timestamp(secondsSinceEpoch: since.secondsSinceEpoch + 1), via: "post", report: DeviceReport(channel: .production, items: items)).jsonLine
            }
            lines += Array("not a report\n".utf8)
            try Data(lines).write(to: URL(fileURLWithPath: folder + "/reports.jsonl"))
            let status = try await CLI.run(["rollout", "status", "--catalog", catalog, "--reports", folder + "/reports.jsonl", "--json"])
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
            while Int64(Date().timeIntervalSince1970) < since.secondsSinceEpoch + 2 { try await Task.sleep(for: .milliseconds(100)) }
            let first = try await CLI.run(advance)
            #expect(first.status == 0 && first.stdout.contains(#""action":"advanced""#) && first.stdout.contains(#""to":5"#), "\(first.stdout)\(first.stderr)")
            await #expect(try read(catalog).rollouts.first?.permille == 50)
            let second = try await CLI.run(advance)
            #expect(second.status == 0 && second.stdout.contains(#""changed":false"#) && second.stdout.contains(#""action":"waiting""#), "\(second.stdout)")
            await #expect(try read(catalog).rollouts.first?.permille == 50)
            #expect(try await CLI.run(advance.dropLast(7) + ["--schedule", "5,1", "--max-failure-rate", "0.05"]).status == 64)
        }
    }

    /// Reports of `devices` devices on shop 1.0.0 and 1.1.0, each line as JSON (the POST's shape) or, every third, as
    /// the nginx log_format of docs/formats.md writes it (header values, `at` with an offset); some fail with reasons,
    /// and lines that are no reports sit among them.
    func mixedReports(_ devices: Range<Int>, at: Timestamp) throws -> [[UInt8]] {
        let shop = try PackageID("shop"), v100 = try SemanticVersion("1.0.0"), v110 = try SemanticVersion("1.1.0")
        var lines: [[UInt8]] = []
        for n in devices {
            let token = String(format: "%016x", n &* 2_654_435_761)
            let items: [DeviceReport.Item] = switch n % 7 {
            case 0: [.init(id: shop, role: .failed, version: v110, token: token, why: n % 2 == 0 ? "crashed" : nil), .init(id: shop, role: .active, version: v100, token: token, state: "confirmed")]
            case 1: [.init(id: shop, role: .offered, version: v110, token: token, cohort: n % 1000)]
            default: [.init(id: shop, role: .active, version: v110, token: token, state: n % 3 == 0 ? "trial" : "confirmed")]
            }
            let record = ReportRecord(at: Timestamp(secondsSinceEpoch: at.secondsSinceEpoch + Int64(n % 5)), via: "post", report: DeviceReport(channel: .production, items: items))
            if n % 3 == 0 {
                let report = record.report.headerFields[1].value.replacingOccurrences(of: "\"", with: "\\\"")
                let local = String(Timestamp(secondsSinceEpoch: record.at.secondsSinceEpoch + 3600).description.dropLast()) + "+01:00"
                lines.append(Array(#"{"at":"\#(local)","via":"header","channel":"","report":"\#(report)"}"#.utf8))
            } else {
                lines.append(Array(record.jsonLine.dropLast()))
            }
            if n % 50 == 0 { lines.append(Array("GET /catalog.json 200".utf8)) }
        }
        return lines
    }

    func write(_ lines: [[UInt8]], to path: String, newlineAtEnd: Bool = true, gzipMembers: Int = 0) async throws {
        let text = lines.map { $0 + [0x0A] }.joined()
        let bytes = newlineAtEnd ? Array(text) : Array(text.dropLast())
        guard gzipMembers > 0 else { return try Data(bytes).write(to: URL(fileURLWithPath: path)) }
        // Several gzip members, one after another, as `cat a.gz b.gz` or nginx's buffered gzip logs write them.
        var joined = Data()
        let size = (bytes.count + gzipMembers - 1) / gzipMembers
        for start in stride(from: 0, to: bytes.count, by: size) {
            try Data(bytes[start..<min(bytes.count, start + size)]).write(to: URL(fileURLWithPath: path + ".part"))
            _ = try await run("/usr/bin/gzip", ["-f", "-n", path + ".part"])
            joined += try Data(contentsOf: URL(fileURLWithPath: path + ".part.gz"))
        }
        try? FileManager.default.removeItem(atPath: path + ".part.gz")
        try joined.write(to: URL(fileURLWithPath: path))
    }

    @Test("rollout status reads several --reports (gzip of several members, nginx lines, a last line cut short) as the reference count does; --state reads on from where it stopped, through growth and rotation, starts over when an input changed, and refuses a damaged state")
    func streamedReportsAndState() async throws {
        try await withTemporaryFolder { folder async throws in
            let (catalog, key) = try await publish(folder)
            #expect(try await CLI.run(["rollout", "set", "shop", "1.1.0", "--percent", "10", "--catalog", catalog, "--sign-key", key]).status == 0)
            let since = try await #require(try read(catalog).rollouts.first?.since)
            let at = Timestamp(secondsSinceEpoch: since.secondsSinceEpoch + 1)
            let all = try mixedReports(0..<900, at: at)
            let (old, live, state) = (folder + "/reports.1.gz", folder + "/reports.log", folder + "/state/reports.state")
            try FileManager.default.createDirectory(atPath: folder + "/state", withIntermediateDirectories: true)
            try await write(Array(all[0..<300]), to: old, gzipMembers: 3)
            // The live log's last line is being written: no newline yet.
            try await write(Array(all[300..<500]) + [Array(all[500].prefix(40))], to: live, newlineAtEnd: false)

            /// status --json as the reference count gives it, and as the streaming count gives it with the state.
            func compare(_ inputs: [String], note expectedNote: Bool = false, _ comment: Comment) async throws {
                let reports = inputs.flatMap { ["--reports", $0] }
                let reference = try await CLI.run(["rollout", "status", "--catalog", catalog, "--json", "--reference-count"] + reports)
                let streamed = try await CLI.run(["rollout", "status", "--catalog", catalog, "--json", "--state", state] + reports)
                #expect(reference.status == 0 && streamed.status == 0, "\(reference.stderr)\(streamed.stderr)")
                #expect(streamed.stdout == reference.stdout, comment)
                #expect(streamed.stderr.contains("read from the start") == expectedNote, "\(comment): \(streamed.stderr)")
                #expect(streamed.stdout.contains(#""failuresByReason":{"crashed":"#), "\(streamed.stdout)")
            }
            let plain = try await CLI.run(["rollout", "status", "--catalog", catalog, "--json", "--reports", old, "--reports", live])
            let reference = try await CLI.run(["rollout", "status", "--catalog", catalog, "--json", "--reference-count", "--reports", old, "--reports", live])
            #expect(plain.status == 0 && plain.stdout == reference.stdout, "\(plain.stdout)\(plain.stderr)")
            #expect(plain.stdout.contains(#""skipped":11"#), "ten lines that are no reports and the cut line: \(plain.stdout)")
            try await compare([old, live], "first run: everything read, the state written")
            #expect(FileManager.default.fileExists(atPath: state) && !FileManager.default.fileExists(atPath: state + ".tmp-0"))
            try await compare([old, live], "a second run with nothing new")

            // The live log grows: its cut line is finished and more follow.
            let handle = try #require(FileHandle(forWritingAtPath: live))
            handle.seekToEndOfFile()
            handle.write(Data((Array(all[500].dropFirst(40)) + [0x0A] + Array(all[501..<700].map { $0 + [0x0A] }.joined())).count > 0
                ? Array(all[500].dropFirst(40)) + [0x0A] + Array(all[501..<700].map { $0 + [0x0A] }.joined()) : []))
            try handle.close()
            try await compare([old, live], "the live log grew")

            // Rotation: the live log renamed and compressed, a new one begun; inputs are known by content, not name.
            let rotated = folder + "/reports.2.gz"
            let liveBytes = try readBytes(live)
            try FileManager.default.removeItem(atPath: live)
            try Data(liveBytes).write(to: URL(fileURLWithPath: folder + "/reports.2"))
            _ = try await run("/usr/bin/gzip", ["-n", folder + "/reports.2"])
            try await write(Array(all[700..<800]), to: live)
            try await compare([old, rotated, live], "rotated")

            // An input rewritten (not grown): its earlier counts cannot be taken back, so every input is read again.
            try await write(Array(all[0..<150]), to: old, gzipMembers: 1)
            try await compare([old, rotated, live], note: true, "an input changed")
            // Left out: the same.
            try await compare([rotated, live], note: true, "an input left out")

            // A state that is not one, or is damaged, is refused, naming the file; the catalog is not the state's business.
            try Data("{\"expires\":\"2030-01-01T00:00:00Z\"}".utf8).write(to: URL(fileURLWithPath: state))
            let refused = try await CLI.run(["rollout", "status", "--catalog", catalog, "--reports", live, "--state", state])
            #expect(refused.status == 1 && refused.stderr.contains(state) && refused.stderr.contains("not a rollout report state"), "\(refused.stderr)")
            let damagedGzip = folder + "/broken.gz"
            try Data(try readBytes(rotated).dropLast(9)).write(to: URL(fileURLWithPath: damagedGzip))
            let broken = try await CLI.run(["rollout", "status", "--catalog", catalog, "--reports", damagedGzip])
            #expect(broken.status == 1 && broken.stderr.contains(damagedGzip), "\(broken.stderr)")
            #expect(try await CLI.run(["rollout", "status", "--catalog", catalog]).status == 64)
        }
    }

    @Test("rollout advance --state judges from the counts a full count gives, also after a step moved the start: the state keeps per device the latest time of each fact")
    func advanceWithState() async throws {
        try await withTemporaryFolder { folder async throws in
            let (catalog, key) = try await publish(folder)
            #expect(try await CLI.run(["rollout", "set", "shop", "1.1.0", "--percent", "1", "--catalog", catalog, "--sign-key", key]).status == 0)
            let reports = folder + "/reports.log", state = folder + "/advance.state", before = folder + "/before.json"
            var since = try await #require(try read(catalog).rollouts.first?.since)
            var lines = try mixedReports(0..<400, at: Timestamp(secondsSinceEpoch: since.secondsSinceEpoch + 1))
            for round in 0..<2 {
                try await write(lines, to: reports)
                while Int64(Date().timeIntervalSince1970) < since.secondsSinceEpoch + 6 { try await Task.sleep(for: .milliseconds(100)) }
                // The catalog as the run finds it: the reference count over it is what the run must have judged.
                try? FileManager.default.removeItem(atPath: before)
                try FileManager.default.copyItem(atPath: catalog, toPath: before)
                let run = try await CLI.run(["rollout", "advance", "--catalog", catalog, "--sign-key", key, "--reports", reports, "--state", state,
                                       "--schedule", "1,5,25,100", "--max-failure-rate", "0.3", "--min-devices", "50", "--json"])
                #expect(run.status == 0 && !run.stderr.contains("read from the start"), "\(run.stderr)")
                let reference = try await CLI.run(["rollout", "status", "--catalog", before, "--reports", reports, "--reference-count", "--json"])
                let steps = (try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])?["steps"] as? [[String: Any]] ?? []
                let rows = (try JSONSerialization.jsonObject(with: Data(reference.stdout.utf8)) as? [String: Any])?["versions"] as? [[String: Any]] ?? []
                let judged = try #require(steps.first?["status"] as? NSDictionary, "\(run.stdout)")
                let counted = try #require(rows.first { $0["version"] as? String == "1.1.0" }.map { $0 as NSDictionary })
                #expect(judged == counted, "round \(round): \(judged) against \(counted)")
                #expect(steps.first?["action"] as? String == "advanced", "round \(round): \(run.stdout)")
                // The step moved the start: reports after it come from more devices, appended to the same log.
                since = try await #require(try read(catalog).rollouts.first?.since)
                lines += try mixedReports(400..<(700 + round * 100), at: Timestamp(secondsSinceEpoch: since.secondsSinceEpoch + 1))
            }
        }
    }

    /// One report line: `items` from device `n`, received at `at`.
    func reportLine(_ n: Int, at: Timestamp, _ items: (String) -> [DeviceReport.Item]) -> [UInt8] {
        ReportRecord(at: at, via: "post", report: DeviceReport(channel: .production, items: items(String(format: "%016x", n)))).jsonLine
    }

    @Test("a release to everyone is watched: status counts failures by reason, advance halts a failing one out of packages and ends a healthy one's watch, --log appends each decision")
    func watchedReleases() async throws {
        try await withTemporaryFolder { folder async throws in
            let (catalog, key) = try await publish(folder)
            let edit = ["--catalog", catalog, "--sign-key", key]
            for version in ["1.0.0", "1.1.0"] { #expect(try await CLI.run(["rollout", "set", "shop", version, "--percent", "100"] + edit).status == 0) }
            let watched = try await read(catalog)
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

            let status = try await CLI.run(["rollout", "status", "--catalog", catalog, "--reports", reports, "--json"])
            let versions = (try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["versions"] as? [[String: Any]] ?? []
            let row = try #require(versions.first { $0["version"] as? String == "1.1.0" }, "\(status.stdout)\(status.stderr)")
            #expect(row["failuresByReason"] as? [String: Int] == ["crashed": 20, "script-error": 10] && row["watched"] as? Bool == true)
            #expect(row["failed"] as? Int == 30 && row["state"] as? String == "released" && row["since"] as? String == watched.watches[1].since.description)
            let table = try await CLI.run(["rollout", "status", "--catalog", catalog, "--reports", reports])
            #expect(table.stdout.contains("released*") && table.stdout.contains("crashed 20, script-error 10"), "\(table.stdout)")

            // The log already holds a line: it is appended to, never truncated.
            let log = folder + "/decisions.jsonl"
            try Data("{\"earlier\":true}\n".utf8).write(to: URL(fileURLWithPath: log))
            let advance = ["rollout", "advance", "--reports", reports, "--schedule", "1,5,25,100", "--max-failure-rate", "0.1", "--log", log, "--json"] + edit
            while Int64(Date().timeIntervalSince1970) < at.secondsSinceEpoch + 1 { try await Task.sleep(for: .milliseconds(100)) }
            let first = try await CLI.run(advance + ["--confirmations", "100"])
            #expect(first.status == 0, "\(first.stderr)")
            let result = try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [String: Any]
            let steps = result?["steps"] as? [[String: Any]] ?? []
            #expect(result?["changed"] as? Bool == true && steps.map { "\($0["version"]!) \($0["action"]!)" } == ["1.0.0 watching", "1.1.0 halted"], "\(first.stdout)")
            #expect((steps.first?["reason"] as? String)?.hasPrefix("60 of 100 confirmations") == true, "\(steps)")
            // Halted: out of packages (older updaters stop offering it), halted at 100 % in rollouts (devices on it keep it).
            var now = try await read(catalog)
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
            let second = try await CLI.run(advance + ["--confirmations", "50"])
            #expect(second.status == 0 && second.stdout.contains(#""action":"watch-ended""#), "\(second.stdout)\(second.stderr)")
            now = try await read(catalog)
            #expect(now.watches.isEmpty && now.packages.map(\.version) == [v100])
            logged = String(decoding: try readBytes(log), as: UTF8.self).split(separator: "\n").map(String.init)
            #expect(logged.count == 4 && logged[3].contains(#""action":"watch-ended""#))
            // Nothing left to judge: nothing changes, nothing is logged.
            let third = try await CLI.run(advance + ["--confirmations", "50"])
            #expect(third.status == 0 && third.stdout.contains(#""changed":false"#) && third.stdout.contains(#""steps":[]"#), "\(third.stdout)")
            #expect(String(decoding: try readBytes(log), as: UTF8.self).split(separator: "\n").count == 4)
            #expect(try await CLI.run(advance + ["--confirmations", "0"]).status == 64)
            let unwritable = try await CLI.run(["rollout", "advance", "--reports", reports, "--schedule", "1,100", "--max-failure-rate", "0.05",
                                          "--log", folder + "/missing/log.jsonl"] + edit)
            #expect(unwritable.status == 1 && unwritable.stderr.contains("cannot open the log"), "\(unwritable.stderr)")
        }
    }
}
