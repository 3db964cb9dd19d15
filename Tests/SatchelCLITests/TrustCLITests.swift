import Foundation
import SatchelCore
import SatchelTestSupport
import Testing

@Suite("satchel trust init / update and satchel sign: files, JSON, refusals and exit codes")
struct TrustCLITests {
    static let expires = "2031-01-01T00:00:00Z"

    /// Key pairs made by `satchel keygen`, by name: `<folder>/<name>/satchel.key` and `.pub`.
    func keys(_ folder: String, _ names: [String]) async throws {
        for name in names {
            let made = try await CLI.run(["keygen", "--output", "\(folder)/\(name)"])
            #expect(made.status == 0, "\(made.stderr)")
        }
    }

    func pub(_ folder: String, _ name: String) -> String { "\(folder)/\(name)/satchel.pub" }
    func key(_ folder: String, _ name: String) -> String { "\(folder)/\(name)/satchel.key" }

    func verifyingKey(_ folder: String, _ name: String) throws -> VerifyingKey {
        try VerifyingKey(base64: String(decoding: try readBytes(pub(folder, name)), as: UTF8.self))
    }

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    func initialise(_ folder: String, signers: [String]) async throws -> ProcessOutcome {
        try await CLI.run(["trust", "init", "--root", pub(folder, "r1"), "--root", pub(folder, "r2"), "--root-threshold", "2",
                     "--bundle-signer", pub(folder, "b1"), "--catalog-signer", pub(folder, "c1"), "--expires", Self.expires,
                     "--output", folder + "/trust", "--json"] + signers.flatMap { ["--sign-key", key(folder, $0)] })
    }

    @Test("init, sign and update write versions a device walks: short thresholds exit 0 and say so, a second holder completes them")
    func rotation() async throws {
        try await withTemporaryFolder { folder async throws in
            try await keys(folder, ["r1", "r2", "r3", "b1", "c1", "c2"])
            let first = try await initialise(folder, signers: ["r1"])
            #expect(first.status == 0 && first.stderr.isEmpty, "\(first.stderr)")
            let firstJSON = try json(first.stdout)
            #expect(Set(firstJSON.keys) == ["version", "file", "root", "complete"])
            #expect(firstJSON["version"] as? Int == 1 && firstJSON["file"] as? String == folder + "/trust/1.json")
            #expect(firstJSON["complete"] as? Bool == false && (firstJSON["root"] as? [String: Int]) == ["have": 1, "need": 2])
            // The second root holder signs offline; signing twice changes nothing.
            let second = try await CLI.run(["sign", folder + "/trust/1.json", "--sign-key", key(folder, "r2")])
            #expect(second.status == 0 && second.stdout.contains("root signatures 2 of 2 (complete)"), "\(second.stdout)\(second.stderr)")
            let before = try readBytes(folder + "/trust/1.json")
            let again = try await CLI.run(["sign", folder + "/trust/1.json", "--sign-key", key(folder, "r2"), "--json"])
            let againJSON = try json(again.stdout)
            #expect(again.status == 0 && againJSON["added"] as? [String] == [])
            #expect(try readBytes(folder + "/trust/1.json") == before)

            // Version 2: r1 leaves the roots for r3, c1 leaves the catalog role for c2; r2 (in both) signs at once.
            let update = try await CLI.run(["trust", "update", folder + "/trust", "--add-root", pub(folder, "r3"), "--remove-root", pub(folder, "r1"),
                                      "--add-catalog-signer", pub(folder, "c2"), "--remove-catalog-signer", pub(folder, "c1"),
                                      "--expires", Self.expires, "--sign-key", key(folder, "r2"), "--json"])
            #expect(update.status == 0, "\(update.stderr)")
            let updateJSON = try json(update.stdout)
            #expect(Set(updateJSON.keys) == ["version", "file", "root", "complete"])
            #expect(updateJSON["version"] as? Int == 2 && updateJSON["file"] as? String == folder + "/trust/2.json")
            // need: version 1's root threshold (2) plus version 2's (2); r2 fills one slot of each.
            #expect(updateJSON["complete"] as? Bool == false && (updateJSON["root"] as? [String: Int]) == ["have": 2, "need": 4])
            for holder in ["r1", "r3"] {
                let signed = try await CLI.run(["sign", folder + "/trust/2.json", "--sign-key", key(folder, holder)])
                #expect(signed.status == 0, "\(signed.stderr)")
            }
            let last = try await CLI.run(["sign", folder + "/trust/2.json", "--sign-key", key(folder, "r3"), "--json"])
            let lastJSON = try json(last.stdout)
            #expect(lastJSON["complete"] as? Bool == true)

            // A device with version 1's roots walks to 2, and the dropped catalog key resets its serial floor.
            let anchor = try TrustAnchor(rootKeys: [verifyingKey(folder, "r1"), verifyingKey(folder, "r2")], threshold: 2)
            var walk = try TrustState(anchor: anchor).walk(toCatalogNaming: 2)
            while case .fetch(let version) = walk.next { try walk.receive(try readBytes("\(folder)/trust/\(version).json")) }
            let state = try walk.finish(at: Timestamp(secondsSinceEpoch: 1_800_000_000))
            #expect(state.version == 2 && walk.droppedCatalogKey)
            let (c1, r1) = (try verifyingKey(folder, "c1").keyID, try verifyingKey(folder, "r1").keyID)
            #expect(state.isRevoked(c1) && state.isRevoked(r1))
            #expect(Array(state.signers(for: .catalog).keys.keys) == [try verifyingKey(folder, "c2").keyID])
        }
    }

    @Test("refusals: malformed key files are usage errors (64); broken rules and untrusted keys exit 1 naming the check")
    func refusals() async throws {
        try await withTemporaryFolder { folder async throws in
            try await keys(folder, ["r1", "r2", "b1", "c1", "x"])
            try Data("not a key".utf8).write(to: URL(fileURLWithPath: folder + "/bad.pub"))
            let badKey = try await CLI.run(["trust", "init", "--root", folder + "/bad.pub", "--bundle-signer", pub(folder, "b1"),
                                      "--catalog-signer", pub(folder, "c1"), "--output", folder + "/t"])
            #expect(badKey.status == 64 && badKey.stderr.contains("--root \(folder)/bad.pub: malformed public key"), "\(badKey.stderr)")
            let badSignKey = try await CLI.run(["sign", folder + "/nothing.json", "--sign-key", folder + "/bad.pub"])
            #expect(badSignKey.status == 64)
            let noKey = try await CLI.run(["sign", folder + "/nothing.json"])
            #expect(noKey.status == 64)
            let zero = try await CLI.run(["trust", "init", "--root", pub(folder, "r1"), "--root-threshold", "0", "--bundle-signer", pub(folder, "b1"),
                                    "--catalog-signer", pub(folder, "c1"), "--output", folder + "/t"])
            #expect(zero.status == 64)
            let tooHigh = try await CLI.run(["trust", "init", "--root", pub(folder, "r1"), "--root-threshold", "2", "--bundle-signer", pub(folder, "b1"),
                                       "--catalog-signer", pub(folder, "c1"), "--output", folder + "/t"])
            #expect(tooHigh.status == 1 && tooHigh.stderr == "error: \(folder)/t/1.json: has threshold 2 for role root, which has 1 key; a threshold is at least 1 and at most the role's keys\n")
            #expect(!FileManager.default.fileExists(atPath: folder + "/t/1.json"))
            let stranger = try await initialise(folder, signers: ["x"])
            #expect(stranger.status == 1 && stranger.stderr.hasPrefix("error: --sign-key \(key(folder, "x")): key not trusted: "), "\(stranger.stderr)")
            #expect(!FileManager.default.fileExists(atPath: folder + "/trust/1.json"))

            // Version 1 short of its threshold: update refuses to build on it; sign by a non-root is refused.
            await #expect(try initialise(folder, signers: ["r1"]).status == 0)
            let onShort = try await CLI.run(["trust", "update", folder + "/trust", "--sign-key", key(folder, "r1")])
            #expect(onShort.status == 1 && onShort.stderr.contains("threshold: trust version 1 has root signatures 1 of 2"), "\(onShort.stderr)")
            let byCatalogKey = try await CLI.run(["sign", folder + "/trust/1.json", "--sign-key", key(folder, "c1")])
            #expect(byCatalogKey.status == 1 && byCatalogKey.stderr.contains("key not trusted"))
            await #expect(try initialise(folder, signers: ["r1", "r2"]).status == 1)  // the folder already holds version 1
            #expect(try await CLI.run(["sign", folder + "/trust/1.json", "--sign-key", key(folder, "r2")]).status == 0)
            let absent = try await CLI.run(["trust", "update", folder + "/trust", "--remove-bundle-signer", pub(folder, "c1")])
            #expect(absent.status == 1 && absent.stderr.contains("is not a bundles key of trust version 1"), "\(absent.stderr)")
            let emptied = try await CLI.run(["trust", "update", folder + "/trust", "--remove-catalog-signer", pub(folder, "c1")])
            #expect(emptied.status == 1 && emptied.stderr.contains("has threshold 1 for role catalog, which has 0 keys"), "\(emptied.stderr)")
            #expect(!FileManager.default.fileExists(atPath: folder + "/trust/2.json"))
            let empty = try await CLI.run(["trust", "update", folder + "/nowhere"])
            #expect(empty.status == 1 && empty.stderr.contains("holds no trust version"))

            // A document edited by hand (not canonical) is refused by name.
            let text = String(decoding: try readBytes(folder + "/trust/1.json"), as: UTF8.self)
            try Data((text + "\n").utf8).write(to: URL(fileURLWithPath: folder + "/trust/1.json"))
            let edited = try await CLI.run(["sign", folder + "/trust/1.json", "--sign-key", key(folder, "r2")])
            #expect(edited.status == 1 && edited.stderr.contains("is not in canonical form"), "\(edited.stderr)")
            let notAnything = try await CLI.run(["sign", folder + "/r1/satchel.pub", "--sign-key", key(folder, "r1")])
            #expect(notAnything.status == 1 && notAnything.stderr.contains("is neither a bundle"))

            // Legal but probably not meant: written, with a warning (one key for catalogs and code; an expiry passed).
            let lax = try await CLI.run(["trust", "init", "--root", pub(folder, "r1"), "--bundle-signer", pub(folder, "c1"), "--catalog-signer", pub(folder, "c1"),
                                   "--expires", "2020-01-01T00:00:00Z", "--sign-key", key(folder, "r1"), "--output", folder + "/lax"])
            #expect(lax.status == 0 && FileManager.default.fileExists(atPath: folder + "/lax/1.json"))
            #expect(lax.stderr.contains("is both a catalog and a bundles key in trust version 1") && lax.stderr.contains("which has passed"), "\(lax.stderr)")
        }
    }

    @Test("sign a catalog and a bundle: signatures in .sigs beside them, idempotent, the legacy .sig untouched, counted by role")
    func detached() async throws {
        try await withTemporaryFolder { folder async throws in
            try await keys(folder, ["r1", "r2", "b1", "b2", "c1", "c2"])
            try makeTree(folder + "/src", app)
            let pack = try await CLI.run(["pack", folder + "/src", "--id", "shop", "--version", "1.0.0", "--host", "m.shop.example",
                                    "--sign-key", key(folder, "b1"), "--output", folder + "/release", "--quiet"])
            #expect(pack.status == 0, "\(pack.stderr)")
            let catalog = try await CLI.run(["catalog", folder + "/release", "--base-url", "./", "--expires", Self.expires, "--serial", "1",
                                       "--sign-key", key(folder, "c1"), "--output", folder + "/release/catalog.json"])
            #expect(catalog.status == 0, "\(catalog.stderr)")
            let legacy = try readBytes(folder + "/release/catalog.json.sig")
            let signed = try await CLI.run(["sign", folder + "/release/catalog.json", "--sign-key", key(folder, "c2"), "--json"])
            #expect(signed.status == 0, "\(signed.stderr)")
            let summary = try json(signed.stdout)
            #expect(summary["kind"] as? String == "catalog" && summary["signatures"] as? String == folder + "/release/catalog.json.sigs")
            #expect(summary["count"] as? Int == 1)
            let sigs = try readBytes(folder + "/release/catalog.json.sigs")
            #expect(try await CLI.run(["sign", folder + "/release/catalog.json", "--sign-key", key(folder, "c2")]).status == 0)
            #expect(try readBytes(folder + "/release/catalog.json.sigs") == sigs)
            #expect(try readBytes(folder + "/release/catalog.json.sig") == legacy)

            // A catalog role of 2: c2's keyed signature plus c1's legacy catalog.json.sig meet it.
            let roles: [TrustRole: RoleDefinition] = [
                .root: RoleDefinition(keys: [try verifyingKey(folder, "r1")], threshold: 1),
                .catalog: RoleDefinition(keys: [try verifyingKey(folder, "c1"), try verifyingKey(folder, "c2")], threshold: 2),
                .bundles: RoleDefinition(keys: [try verifyingKey(folder, "b1"), try verifyingKey(folder, "b2")], threshold: 2),
            ]
            let trust = try TrustDocument(version: 1, expires: try Timestamp(rfc3339: Self.expires), roles: roles)
            let catalogBytes = try readBytes(folder + "/release/catalog.json")
            let file = try SignatureFile.decode(sigs)
            #expect(file.covers(catalogBytes))
            let legacySignature = try Signature(base64: String(decoding: legacy, as: UTF8.self))
            #expect(try trust.signers(.catalog).verify(catalogBytes, signatures: file.signatures, legacy: legacySignature).have == 2)
            #expect(throws: TrustRefusal.self) { try trust.signers(.catalog).verify(catalogBytes, signatures: file.signatures) }

            // The bundle: b2 signs its satchel.json into shop-1.0.0.zip.sigs; with satchel.sig (b1) the bundles role of 2 is met.
            let bundle = folder + "/release/shop-1.0.0.zip"
            let bundleBytes = try readBytes(bundle)
            let bundleSigned = try await CLI.run(["sign", bundle, "--sign-key", key(folder, "b2"), "--json"])
            #expect(bundleSigned.status == 0, "\(bundleSigned.stderr)")
            let bundleJSON = try json(bundleSigned.stdout)
            #expect(bundleJSON["kind"] as? String == "bundle")
            #expect(try readBytes(bundle) == bundleBytes)  // the bundle itself is not touched: its catalog sha256 holds
            let manifest = try await CLI.run(["inspect", bundle, "--json"])
            let manifestBytes = Array(manifest.stdout.utf8.dropLast())  // inspect --json prints the bytes and a newline
            let bundleFile = try SignatureFile.decode(try readBytes(bundle + ".sigs"))
            #expect(bundleFile.sha256 == Digests.sha256Hex(manifestBytes))
            // satchel.sig as pack wrote it (Ed25519 is deterministic on Linux, so signing again gives the same bytes).
            let packed = try SigningKey(base64: String(decoding: try readBytes(key(folder, "b1")), as: UTF8.self)).signature(for: manifestBytes)
            #expect(try await CLI.run(["verify", bundle, "--public-key", pub(folder, "b1")]).status == 0)
            #expect(try trust.signers(.bundles).verify(manifestBytes, signatures: bundleFile.signatures, legacy: packed).have == 2)
            // The catalog keys alone never make it installable.
            let byCatalogKey = try await CLI.run(["sign", bundle, "--sign-key", key(folder, "c1"), "--sign-key", key(folder, "c2")])
            #expect(byCatalogKey.status == 0)
            let widened = try SignatureFile.decode(try readBytes(bundle + ".sigs"))
            #expect(widened.signatures.count == 3)
            let catalogKeys = [try verifyingKey(folder, "c1").keyID, try verifyingKey(folder, "c2").keyID]
            let byCatalogKeys = widened.signatures.filter { catalogKeys.contains($0.keyID) }
            #expect(byCatalogKeys.count == 2)
            #expect(throws: TrustRefusal.self) { try trust.signers(.bundles).verify(manifestBytes, signatures: byCatalogKeys) }
        }
    }
}
