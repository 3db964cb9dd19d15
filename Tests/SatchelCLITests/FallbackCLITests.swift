import Foundation
import SatchelTestSupport
import Testing

@Suite("Fallbacks and bundles through the CLI, as a new user meets them")
struct FallbackCLITests {
    func pack(_ folder: String, version: String, environment: [String: String] = ["SOURCE_DATE_EPOCH": "1700000000"]) async throws -> String {
        let source = folder + "/src-\(version)"
        try makeTree(source, app.merging(["index.html": "<h1>\(version)</h1>", "guide/café/名前.html": "<p>\(version)</p>"]) { $1 })
        let outcome = try await CLI.run(
            ["pack", source, "--id", "shop", "--version", version, "--host", "m.shop.example", "--output", folder + "/out-\(version)", "--quiet"],
            environment: environment)
        try #require(outcome.status == 0, "\(outcome.stderr)")
        return folder + "/out-\(version)/shop-\(version).zip"
    }

    @Test("install 1.0.0, install 1.1.0, rollback returns to 1.0.0, which list showed as the fallback")
    func installInstallRollback() async throws {
        try await withTemporaryFolder { folder async throws in
            let store = folder + "/store"
            #expect(try await CLI.run(["install", try pack(folder, version: "1.0.0"), "--store", store]).status == 0)
            #expect(try await CLI.run(["install", try pack(folder, version: "1.1.0"), "--store", store]).status == 0)
            let list = try await CLI.run(["list", "--store", store])
            #expect(list.stdout.hasPrefix("shop 1.1.0 (trial, 0 launches): m.shop.example /"), "\(list.stdout)")
            #expect(list.stdout.contains("; falls back to 1.0.0; also installed: 1.0.0"), "\(list.stdout)")
            let rollback = try await CLI.run(["rollback", "shop", "--store", store])
            #expect(rollback.status == 0 && rollback.stdout == "shop rolled back to 1.0.0\n", "\(rollback.stderr)")
            let after = try await CLI.run(["list", "--store", store, "--json"])
            let packages = try JSONSerialization.jsonObject(with: Data(after.stdout.utf8)) as! [[String: Any]]
            #expect(packages.first?["active"] as? String == "1.0.0")
            #expect(packages.first?["failed"] as? [String] == ["1.1.0"])
        }
    }

    @Test("pack gives the same bytes under any time zone and locale (the archive code sets neither)")
    func packIgnoresTimeZoneAndLocale() async throws {
        try await withTemporaryFolder { folder async throws in
            var outputs: [[UInt8]] = []
            for (zone, locale) in [("UTC", "C.UTF-8"), ("Pacific/Kiritimati", "C"), ("America/Los_Angeles", "C")] {
                let bundle = try await pack(folder + "/\(zone.replacingOccurrences(of: "/", with: "-"))", version: "1.0.0", environment: [
                    "SOURCE_DATE_EPOCH": "1700000000", "TZ": zone, "LC_ALL": locale, "LANG": locale,
                ])
                outputs.append(try readBytes(bundle))
            }
            #expect(outputs.allSatisfy { $0 == outputs[0] })
            // The non-ASCII name made it through under the "C" locale too.
            #expect(outputs[1].firstRange(of: Array("guide/café/名前.html".utf8)) != nil)
        }
    }
}
