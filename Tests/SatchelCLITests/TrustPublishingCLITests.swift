import Foundation
import SatchelCore
import SatchelTestSupport
import Testing

/// The publishing side and the store with trust, through the binary: pack, catalog and rollout signing with several
/// keys, `catalog --trust` naming and publishing the trust versions, `install` and `check` with `--root-public-key`.
@Suite("Trust through the CLI: pack, catalog, rollout, install and check")
struct TrustPublishingCLITests {
    static let expires = "2031-01-01T00:00:00Z"

    func keys(_ folder: String, _ names: [String]) async throws {
        for name in names { #expect(try await CLI.run(["keygen", "--output", "\(folder)/\(name)"]).status == 0) }
    }

    func pub(_ folder: String, _ name: String) -> String { "\(folder)/\(name)/satchel.pub" }
    func key(_ folder: String, _ name: String) -> String { "\(folder)/\(name)/satchel.key" }

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    /// trust/1.json: root r1, catalog c1 (threshold `catalogThreshold` over c1 and c2 when 2), bundles b1 and b2 with
    /// threshold `bundleThreshold`; signed by r1 (complete) unless `signed` is false.
    func trustInit(_ folder: String, bundleThreshold: Int = 1, catalogThreshold: Int = 1, signed: Bool = true, expires: String = Self.expires) async throws -> ProcessOutcome {
        try await CLI.run(["trust", "init", "--root", pub(folder, "r1"), "--bundle-signer", pub(folder, "b1"), "--bundle-signer", pub(folder, "b2"),
                     "--bundle-threshold", "\(bundleThreshold)", "--catalog-signer", pub(folder, "c1"), "--catalog-signer", pub(folder, "c2"),
                     "--catalog-threshold", "\(catalogThreshold)", "--expires", expires, "--output", folder + "/trust"]
                    + (signed ? ["--sign-key", key(folder, "r1")] : []))
    }

    @Test("pack and catalog with two keys: satchel.sig and catalog.json.sig by the first, .sigs by both; catalog --trust names and publishes the newest version, entries carry the bundle's .sigs; rollout keeps the version")
    func publishing() async throws {
        try await withTemporaryFolder { folder async throws in
            try await keys(folder, ["r1", "b1", "b2", "c1", "c2"])
            try makeTree(folder + "/src", app)
            let pack = try await CLI.run(["pack", folder + "/src", "--id", "shop", "--version", "1.0.0", "--host", "m.shop.example",
                                    "--sign-key", key(folder, "b1"), "--sign-key", key(folder, "b2"), "--output", folder + "/release", "--json"])
            #expect(pack.status == 0, "\(pack.stderr)")
            let bundle = folder + "/release/shop-1.0.0.zip"
            #expect(try json(pack.stdout)["signatures"] as? String == bundle + ".sigs")
            #expect(try await CLI.run(["verify", bundle, "--public-key", pub(folder, "b1")]).status == 0)
            let bundleSigs = try SignatureFile.decode(try readBytes(bundle + ".sigs"))
            #expect(bundleSigs.signatures.count == 2)

            await #expect(try trustInit(folder, bundleThreshold: 2, catalogThreshold: 2).status == 0)
            let output = folder + "/cdn/catalog.json"
            let catalog = try await CLI.run(["catalog", folder + "/release", "--base-url", "./", "--expires", Self.expires, "--serial", "1",
                                       "--trust", folder + "/trust", "--sign-key", key(folder, "c1"), "--sign-key", key(folder, "c2"),
                                       "--output", output, "--json"])
            #expect(catalog.status == 0 && catalog.stderr.isEmpty, "\(catalog.stderr)")
            let summary = try json(catalog.stdout)
            #expect(summary["trust"] as? Int == 1 && summary["signatures"] as? String == output + ".sigs", "\(summary)")
            #expect(try readBytes(folder + "/cdn/trust/1.json") == readBytes(folder + "/trust/1.json"))
            let written = try Catalog.decode(try readBytes(output))
            #expect(written.trust == 1 && written.packages.first?.signatures == bundleSigs.signatures)
            let catalogSigs = try SignatureFile.decode(try readBytes(output + ".sigs"))
            #expect(catalogSigs.covers(try readBytes(output)) && catalogSigs.signatures.count == 2)

            // rollout keeps the trust version the catalog names; a single key leaves no stale .sigs behind.
            let halt = try await CLI.run(["rollout", "halt", "shop", "1.0.0", "--catalog", output, "--sign-key", key(folder, "c1")])
            #expect(halt.status == 0, "\(halt.stderr)")
            #expect(halt.stderr.contains("catalog role needs 2 signatures") == false)  // no --trust: nothing to weigh against
            #expect(try Catalog.decode(try readBytes(output)).trust == 1)
            #expect(!FileManager.default.fileExists(atPath: output + ".sigs"))

            // The next trust version, named by rollout --trust; one catalog key short of version 2's threshold is said.
            let update = try await CLI.run(["trust", "update", folder + "/trust", "--expires", Self.expires, "--sign-key", key(folder, "r1")])
            #expect(update.status == 0, "\(update.stderr)")
            let renamed = try await CLI.run(["rollout", "set", "shop", "1.0.0", "--percent", "100", "--catalog", output, "--trust", folder + "/trust",
                                       "--sign-key", key(folder, "c1")])
            #expect(renamed.status == 0 && renamed.stderr.contains("catalog role needs 2 signatures; the keys given make 1"), "\(renamed.stderr)")
            #expect(try Catalog.decode(try readBytes(output)).trust == 2)
            #expect(listing(folder + "/cdn/trust") == ["1.json", "2.json"])
        }
    }

    @Test("catalog --trust refuses (exit 1, naming the check) a version short of its root threshold, an expired newest, and a published version changed")
    func trustRefusals() async throws {
        try await withTemporaryFolder { folder async throws in
            try await keys(folder, ["r1", "b1", "b2", "c1", "c2"])
            try makeTree(folder + "/src", app)
            #expect(try await CLI.run(["pack", folder + "/src", "--id", "shop", "--version", "1.0.0", "--host", "m.shop.example",
                                 "--sign-key", key(folder, "b1"), "--output", folder + "/release", "--quiet"]).status == 0)
            let catalog = { (extra: [String]) in
                try await CLI.run(["catalog", folder + "/release", "--base-url", "./", "--trust", folder + "/trust", "--sign-key", key(folder, "c1"),
                             "--output", folder + "/cdn/catalog.json"] + extra)
            }
            await #expect(try trustInit(folder, signed: false).status == 0)
            let unsigned = try await catalog([])
            #expect(unsigned.status == 1 && unsigned.stderr.contains("threshold: trust version 1 has root signatures 0 of 1"), "\(unsigned.stderr)")
            #expect(!FileManager.default.fileExists(atPath: folder + "/cdn/catalog.json"))
            try FileManager.default.removeItem(atPath: folder + "/trust")
            await #expect(try trustInit(folder, expires: "2001-01-01T00:00:00Z").status == 0)
            let expired = try await catalog([])
            #expect(expired.status == 1 && expired.stderr.contains("expired: trust version 1 expired at 2001-01-01T00:00:00Z"), "\(expired.stderr)")
            try FileManager.default.removeItem(atPath: folder + "/trust")
            await #expect(try trustInit(folder).status == 0)
            await #expect(try catalog([]).status == 0)
            // Another version 1 (another expiry) where version 1 is published already: refused, the published one kept.
            let first = try readBytes(folder + "/cdn/trust/1.json")
            let other = try await CLI.run(["trust", "init", "--root", pub(folder, "r1"), "--bundle-signer", pub(folder, "b1"), "--catalog-signer", pub(folder, "c1"),
                                     "--expires", "2032-01-01T00:00:00Z", "--sign-key", key(folder, "r1"), "--output", folder + "/trust2"])
            #expect(other.status == 0)
            let changed = try await CLI.run(["catalog", folder + "/release", "--base-url", "./", "--trust", folder + "/trust2", "--output", folder + "/cdn/catalog.json"])
            #expect(changed.status == 1 && changed.stderr.contains("is published with other bytes"), "\(changed.stderr)")
            #expect(try readBytes(folder + "/cdn/trust/1.json") == first)
            // A malformed key file stays a usage error.
            try Data("not a key".utf8).write(to: URL(fileURLWithPath: folder + "/bad.key"))
            await #expect(try catalog(["--sign-key", folder + "/bad.key"]).status == 64)
        }
    }

    @Test("install and check with --root-public-key: a .sigs beside the bundle counts toward the bundles threshold; a revoked-only version is reported, and keeps serving")
    func storeWithRoots() async throws {
        try await withTemporaryFolder { folder async throws in
            try await keys(folder, ["r1", "b1", "b2", "c1", "c2"])
            try makeTree(folder + "/src", app)
            #expect(try await CLI.run(["pack", folder + "/src", "--id", "shop", "--version", "1.0.0", "--host", "m.shop.example",
                                 "--sign-key", key(folder, "b1"), "--output", folder + "/release", "--quiet"]).status == 0)
            let bundle = folder + "/release/shop-1.0.0.zip"
            let store = folder + "/store"
            let roots = ["--store", store, "--root-public-key", pub(folder, "r1")]
            // Roots and no trust version held (the updater keeps them): nothing is installable yet.
            let none = try await CLI.run(["install", bundle] + roots)
            #expect(none.status == 1 && none.stderr.contains("refused: threshold"), "\(none.stderr)")
            #expect(!FileManager.default.fileExists(atPath: store + "/packages/shop"))
            // The device holds version 1 (bundles b1 and b2, two of them), as an update would have kept it.
            await #expect(try trustInit(folder, bundleThreshold: 2).status == 0)
            try FileManager.default.createDirectory(atPath: store + "/downloads/trust", withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: folder + "/trust/1.json", toPath: store + "/downloads/trust/1.json")
            let short = try await CLI.run(["install", bundle, "--json"] + roots)
            #expect(short.status == 1 && short.stderr.contains("threshold: bundles role: 1 of 2 signatures"), "\(short.stderr)")
            #expect(try await CLI.run(["sign", bundle, "--sign-key", key(folder, "b2")]).status == 0)
            let installed = try await CLI.run(["install", bundle] + roots)
            #expect(installed.status == 0, "\(installed.stderr)")
            #expect(try await CLI.run(["check"] + roots).status == 0)

            // Version 2 drops both bundle keys for c2 (for the test's sake): 1.0.0 keeps serving, check reports it.
            let update = try await CLI.run(["trust", "update", folder + "/trust", "--remove-bundle-signer", pub(folder, "b1"),
                                      "--remove-bundle-signer", pub(folder, "b2"), "--add-bundle-signer", pub(folder, "c2"),
                                      "--bundle-threshold", "1", "--expires", Self.expires, "--sign-key", key(folder, "r1")])
            #expect(update.status == 0, "\(update.stderr)")
            try FileManager.default.copyItem(atPath: folder + "/trust/2.json", toPath: store + "/downloads/trust/2.json")
            let check = try await CLI.run(["check", "--json"] + roots)
            #expect(check.status == 1, "\(check.stdout)")
            let problems = try #require(try json(check.stdout)["problems"] as? [[String: String]])
            #expect(problems.map { $0["kind"] } == ["revoked"] && problems.first?["id"] == "shop", "\(problems)")
            let listed = try await CLI.run(["list", "--json"] + roots)
            #expect(listed.status == 0 && listed.stdout.contains("\"active\":\"1.0.0\""))
            #expect(try await CLI.run(["check"] + roots).stdout.contains("signed only by keys a trust version revoked"))

            // A malformed --root-public-key is a usage error.
            try Data("nope".utf8).write(to: URL(fileURLWithPath: folder + "/bad.pub"))
            #expect(try await CLI.run(["list", "--store", store, "--root-public-key", folder + "/bad.pub"]).status == 64)
        }
    }
}
