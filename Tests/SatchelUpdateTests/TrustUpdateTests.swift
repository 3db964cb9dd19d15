import Foundation
import SatchelBundle
import SatchelCore
import SatchelHTTP
import SatchelPublishing
import SatchelStore
import SatchelTestSupport
import Testing
@testable import SatchelUpdate

/// A release on a fake CDN with trust documents (docs/formats.md, "Trust"): `trust/<n>.json` beside production's
/// catalog, bundles signed by bundle keys (their `.sigs` beside them), catalogs signed by catalog keys.
private final class TrustRelease: @unchecked Sendable {
    let folder: String
    let origin = FakeOrigin()
    let base = "https://cdn.example/releases/"
    let roots = (0..<3).map { _ in SigningKey.generate() }
    let catalogKeys = (0..<2).map { _ in SigningKey.generate() }
    let bundleKeys = (0..<2).map { _ in SigningKey.generate() }
    let stranger = SigningKey.generate()
    var bundles: [String: String] = [:]

    init(folder: String) throws {
        self.folder = folder
        for version in ["1.0.0", "1.1.0"] { bundles[version] = try pack(version, signer: bundleKeys[0]) }
    }

    var catalogURL: String { base + "catalog.json" }
    static let big = hexText(seed: "big", count: 400_000)

    /// Packs a version of the shop into the release folder (1.1.0 adds a file to 1.0.0's), signed by `signer`.
    func pack(_ version: String, signer: SigningKey?) throws -> String {
        var files = (0..<30).reduce(into: [String: String]()) { $0["assets/file\($1).js"] = String(repeating: "x\($1)", count: 300) }
        files["index.html"] = "<h1>\(version)</h1>"
        files["media/big.txt"] = Self.big  // unchanged: objects are the cheapest way from any version
        if version != "1.0.0" { files["assets/new-\(version).js"] = hexText(seed: version, count: 4000) }
        let source = folder + "/src-\(version)-\(UUID().uuidString)"
        try makeTree(source, files)
        let options = PackOptions(
            id: try PackageID("shop"), version: try SemanticVersion(version), scope: try Scope(hosts: [HostPattern("m.shop.example")]),
            signingKey: signer, sourceDateEpoch: 1_700_000_000)
        return try Packer.pack(source: source, options: options, outputFolder: folder + "/release").bundle
    }

    /// `<bundle>.sigs` with a keyed signature by each of `keys`.
    func sign(_ bundle: String, with keys: [SigningKey]) throws {
        let manifest = try BundleReader(path: bundle).manifestBytes
        var file = SignatureFile(for: manifest)
        for key in keys { file = try file.adding(key, over: manifest) }
        try Data(file.canonicalBytes).write(to: URL(fileURLWithPath: bundle + SignatureFile.suffix))
    }

    /// Trust version `version`, published at `trust/<version>.json`.
    @discardableResult
    func trust(
        _ version: Int64, roots: [SigningKey], catalog: [SigningKey]? = nil, catalogThreshold: Int = 1, bundles: [SigningKey]? = nil,
        bundleThreshold: Int = 1, expires: Int64 = 4_000_000_000, signedBy: [SigningKey]
    ) throws -> TrustDocument {
        let document = try TrustDocument(version: version, expires: Timestamp(secondsSinceEpoch: expires), roles: [
            .root: RoleDefinition(keys: roots.map(\.verifyingKey), threshold: 1),
            .catalog: RoleDefinition(keys: (catalog ?? [catalogKeys[0]]).map(\.verifyingKey), threshold: catalogThreshold),
            .bundles: RoleDefinition(keys: (bundles ?? [bundleKeys[0]]).map(\.verifyingKey), threshold: bundleThreshold),
        ]).signed(by: signedBy)
        origin.put(trustURL(version), document.canonicalBytes)
        return document
    }

    func trustURL(_ version: Int64) -> String { base + "trust/\(version).json" }

    /// The release folder catalogued (objects, patches, entries' signatures from `.sigs`) and uploaded, with a catalog
    /// naming `trust`, signed by the first of `signers` in `catalog.json.sig` and by all of them in `catalog.json.sigs`.
    @discardableResult
    func publish(trust: Int64?, serial: Int64, signers: [SigningKey], expires: Int64 = 4_000_000_000) throws -> Catalog {
        let contents = try ReleaseFolder.read(folder + "/release", baseURL: "")
        let catalog = try Catalog(expires: Timestamp(secondsSinceEpoch: expires), packages: contents.entries, serial: serial, trust: trust)
        let bytes = catalog.canonicalBytes
        origin.put(catalogURL, bytes)
        origin.remove(catalogURL + ".sig")
        origin.remove(catalogURL + ".sigs")
        if let first = signers.first { origin.put(catalogURL + ".sig", Array(try first.signature(for: bytes).base64.utf8)) }
        if signers.count > 1 {
            var file = SignatureFile(for: bytes)
            for key in signers { file = try file.adding(key, over: bytes) }
            origin.put(catalogURL + ".sigs", file.canonicalBytes)
        }
        try origin.putFiles(of: folder + "/release", at: base)
        return catalog
    }

    /// A device that ships version 1's roots (r0) and 1.0.0 as a built-in.
    func store(_ name: String) throws -> PackageStore {
        try PackageStore(root: folder + "/" + name, configuration: StoreConfiguration(
            builtIns: [bundles["1.0.0"]!], trustAnchor: try TrustAnchor(rootKeys: [roots[0].verifyingKey])))
    }

    func updater(_ store: PackageStore, plainKeys: [VerifyingKey] = []) -> Updater {
        Updater(store: store, fetcher: origin, options: UpdaterOptions(
            catalogURL: catalogURL, trustedKeys: plainKeys, retry: RetryPolicy(attempts: 3, initialDelay: .milliseconds(1), maxDelay: .milliseconds(5))))
    }

    var trustRequests: [Int64] {
        origin.requests.compactMap { request in
            request.url.hasPrefix(base + "trust/") ? Int64(request.url.dropFirst(base.count + 6).dropLast(5)) : nil
        }
    }
}

/// Everything under the store, the kept trust documents and the updater's record included (only the lock, the catalog
/// cache and partial downloads left out): a refused catalog changes none of it.
private func fullSnapshot(_ root: String) throws -> [String: [UInt8]] {
    try treeSnapshot(root) { path in
        path == "lock" || (path.hasPrefix("downloads/") && !path.hasPrefix("downloads/trust") && path != "downloads/updater.json")
    }
}

/// Everything but the updater's folder and the lock: what serves.
private func packagesSnapshot(_ root: String) throws -> [String: [UInt8]] {
    try treeSnapshot(root) { $0 == "lock" || $0.hasPrefix("downloads") }
}

@Suite("The updater with root keys: the trust walk, catalog and bundle thresholds, TUF's attacks refused")
struct TrustUpdateTests {
    @Test("a device shipping version 1's roots walks a root rotation over three versions, one at a time and never past the one named, keeps them, and updates")
    func rotationWalk() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try TrustRelease(folder: folder)
            let r = release.roots
            try release.trust(1, roots: [r[0]], signedBy: [r[0]])
            try release.trust(2, roots: [r[1]], signedBy: [r[0], r[1]])
            let third = try release.trust(3, roots: [r[2]], signedBy: [r[1], r[2]])
            try release.trust(4, roots: [r[2]], signedBy: [r[2]])  // published early: no catalog names it yet
            try release.publish(trust: 3, serial: 10, signers: [release.catalogKeys[0]])
            let store = try release.store("store")

            let report = try await release.updater(store).run()
            #expect(report.failures.isEmpty, "\(report.failures)")
            #expect(report.outcomes.first?.to == "1.1.0" && report.outcomes.first?.action == .installed)
            #expect(release.trustRequests == [1, 2, 3])
            #expect(report.catalog.trustVersion == 3 && report.catalog.signed)
            #expect(listing(store.layout.trust) == ["1.json", "2.json", "3.json"])
            #expect(try readBytes(store.layout.trust + "/3.json") == third.canonicalBytes)
            #expect(store.trustState()?.version == 3)
            #expect(store.keptTrust.floor(for: release.catalogURL) == SerialFloor(serial: 10, trustVersion: 3))

            // Naming what it holds, the device fetches no trust document.
            let before = release.trustRequests.count
            let again = try await release.updater(store).run()
            #expect(again.failures.isEmpty && again.outcomes.first?.action == .upToDate && release.trustRequests.count == before)
        }
    }

    /// A device that walked to version 2 (catalog key c0 replaced by c1) and installed 1.1.0 through it.
    fileprivate func deviceAtVersionTwo(_ release: TrustRelease) async throws -> PackageStore {
        let r = release.roots
        try release.trust(1, roots: [r[0]], signedBy: [r[0]])
        try release.trust(2, roots: [r[0]], catalog: [release.catalogKeys[1]], signedBy: [r[0]])
        try release.publish(trust: 2, serial: 10, signers: [release.catalogKeys[1]])
        let store = try release.store("store")
        let report = try await release.updater(store).run()
        #expect(report.failures.isEmpty && report.outcomes.first?.to == "1.1.0" && store.trustState()?.version == 2)
        return store
    }

    /// Runs the update, expecting the catalog refused by the trust check `check`, and the store unchanged.
    fileprivate func refused(_ release: TrustRelease, _ store: PackageStore, check: String, _ comment: Comment) async throws {
        let before = try fullSnapshot(store.layout.root)
        do {
            let report = try await release.updater(store).run()
            Issue.record("accepted (\(report.outcomes), \(report.failures)): \(comment)")
        } catch {
            guard case .trust(_, let refusal) = error else {
                Issue.record("refused otherwise: \(error): \(comment)")
                return
            }
            #expect(refusal.check == check, "\(error): \(comment)")
            // Each says its check in words; a document that breaks its format says which rule (its size, here).
            let words = check == "document" ? "more than the 65536 allowed (refused before parsing)" : "refused: " + check.replacingOccurrences(of: "-", with: " ")
            #expect("\(error)".contains(words), "\(error)")
        }
        #expect(try fullSnapshot(store.layout.root) == before, comment)
    }

    @Test("TUF's attacks on the catalog and its trust, each refused naming the check, with nothing stored changed")
    func attacksRefused() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try TrustRelease(folder: folder)
            let store = try await deviceAtVersionTwo(release)
            let (r, c) = (release.roots, release.catalogKeys)
            try release.publish(trust: 1, serial: 11, signers: [c[0]])
            try await refused(release, store, check: "older-trust-version", "a catalog naming an older trust version (mix-and-match)")
            try release.publish(trust: 2, serial: 11, signers: [c[0]])
            try await refused(release, store, check: "revoked-key", "a leaked catalog key used after its rotation")
            try release.publish(trust: nil, serial: 11, signers: [c[1]])
            try await refused(release, store, check: "no-trust-version", "a catalog naming no trust version once one is held")
            try release.publish(trust: 2, serial: 11, signers: [release.stranger])
            try await refused(release, store, check: "threshold", "a catalog signed by a key the device never saw")

            // trust/3.json rolled back to version 2's bytes, expired, oversized, or signed by no root.
            try release.publish(trust: 3, serial: 11, signers: [c[1]])
            release.origin.put(release.trustURL(3), try readBytes(store.layout.trust + "/2.json"))
            try await refused(release, store, check: "rollback", "a trust document rolled back")
            try release.trust(3, roots: [r[0]], catalog: [c[1]], expires: 1_000_000_000, signedBy: [r[0]])
            try await refused(release, store, check: "expired", "an expired newest trust document (indefinite freeze)")
            release.origin.put(release.trustURL(3), Array(repeating: UInt8(ascii: " "), count: TrustDocument.maxBytes + 1) + [UInt8(ascii: "{")])
            try await refused(release, store, check: "document", "an oversized trust document (endless data)")
            try release.trust(3, roots: [r[0]], catalog: [c[1]], signedBy: [release.stranger])
            try await refused(release, store, check: "key-not-trusted", "a trust document signed by no root")

            // Version 3 asks two catalog keys: one is short of the threshold; both (in catalog.json.sigs) pass.
            try release.trust(3, roots: [r[0]], catalog: [c[0], c[1]], catalogThreshold: 2, signedBy: [r[0]])
            try release.publish(trust: 3, serial: 11, signers: [c[1]])
            try await refused(release, store, check: "threshold", "a catalog short of its threshold")
            try release.publish(trust: 3, serial: 11, signers: [c[1], c[0]])
            let report = try await release.updater(store).run()
            #expect(report.catalog.trustVersion == 3 && listing(store.layout.trust) == ["1.json", "2.json", "3.json"])
        }
    }

    @Test("fast-forward: a leaked catalog key signs a huge serial; once a trust version drops that key, honest catalogs are accepted again")
    func fastForwardRecovery() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try TrustRelease(folder: folder)
            let (r, c) = (release.roots, release.catalogKeys)
            try release.trust(1, roots: [r[0]], signedBy: [r[0]])
            try release.publish(trust: 1, serial: 1_000_000_000_000, signers: [c[0]])
            let store = try release.store("store")
            _ = try await release.updater(store).run()
            try release.publish(trust: 1, serial: 20, signers: [c[0]])
            await #expect(throws: UpdateError.catalogReplayed(url: release.catalogURL, serial: 20, last: 1_000_000_000_000)) {
                try await release.updater(store).run()
            }
            // Rotated: version 2 drops c0. Kept before a crash lost the floor's update, it still resets the floor.
            let second = try release.trust(2, roots: [r[0]], catalog: [c[1]], signedBy: [r[0]])
            try store.keptTrust.keep([second])
            try release.publish(trust: 2, serial: 20, signers: [c[1]])
            let report = try await release.updater(store).run()
            #expect(report.failures.isEmpty && report.catalog.catalog.serial == 20)
            #expect(store.keptTrust.floor(for: release.catalogURL) == SerialFloor(serial: 20, trustVersion: 2))
            // The floor binds again under version 2.
            try release.publish(trust: 2, serial: 19, signers: [c[1]])
            await #expect(throws: UpdateError.catalogReplayed(url: release.catalogURL, serial: 19, last: 20)) {
                try await release.updater(store).run()
            }
        }
    }

    @Test("a bundle signed by a catalog key, or short of the bundles threshold, is refused whichever way it comes; the store unchanged")
    func bundleThresholds() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try TrustRelease(folder: folder)
            let store = try await deviceAtVersionTwo(release)
            let (r, c, b) = (release.roots, release.catalogKeys, release.bundleKeys)
            let installed = try packagesSnapshot(store.layout.root)
            func refusedBundle(_ check: String, _ comment: Comment) async throws {
                let report = try await release.updater(store).run()
                let failure = report.failures.first?.error
                guard case .store(.untrustedBundle(_, _, let refusal)) = failure else {
                    Issue.record("expected the bundle refused for its signatures, got \(String(describing: failure)): \(comment)")
                    return
                }
                #expect(refusal.check == check, "\(refusal): \(comment)")
                #expect(try packagesSnapshot(store.layout.root) == installed, comment)
                #expect(report.outcomes.isEmpty)
            }
            // 1.2.0 signed by the catalog key (which version 3 also holds, to be sure catalog keys never count).
            try release.trust(3, roots: [r[0]], catalog: [c[1]], signedBy: [r[0]])
            release.bundles["1.2.0"] = try release.pack("1.2.0", signer: c[1])
            try release.publish(trust: 3, serial: 20, signers: [c[1]])
            try await refusedBundle("key-not-trusted", "a bundle signed by a catalog key")
            #expect(!release.origin.requests.contains { $0.url.hasSuffix("shop-1.2.0.zip") }, "the objects' refusal is final")

            // Version 4: bundles b0 and b1, two of them. 1.2.0 by b0 alone is short; with b1 in its .sigs it installs,
            // through the step from 1.1.0, carrying the entry's signatures.
            try release.trust(4, roots: [r[0]], catalog: [c[1]], bundles: [b[0], b[1]], bundleThreshold: 2, signedBy: [r[0]])
            release.bundles["1.2.0"] = try release.pack("1.2.0", signer: b[0])
            try release.publish(trust: 4, serial: 21, signers: [c[1]])
            try await refusedBundle("threshold", "a bundle short of its threshold")
            try release.sign(release.bundles["1.2.0"]!, with: [b[1]])
            let catalog = try release.publish(trust: 4, serial: 22, signers: [c[1]])
            #expect(catalog.packages.last?.signatures.map(\.keyID) == [b[1].keyID])
            let report = try await release.updater(store).run()
            #expect(report.failures.isEmpty, "\(report.failures)")
            #expect(report.outcomes.first?.via == .step && report.outcomes.first?.to == "1.2.0", "\(report.outcomes)")
            #expect(listing(store.layout.root + "/packages/shop/signatures") == ["1.2.0.sigs"])
            #expect(try store.check().isEmpty)
        }
    }

    @Test("an app with plain keys only ignores trust: a release that has it keeps updating it (the migration)")
    func plainKeysIgnoreTrust() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try TrustRelease(folder: folder)
            try release.trust(1, roots: [release.roots[0]], catalog: [release.bundleKeys[0]], signedBy: [release.roots[0]])
            try release.publish(trust: 1, serial: 5, signers: [release.bundleKeys[0]])
            let key = release.bundleKeys[0].verifyingKey
            let store = try PackageStore(root: folder + "/plain", configuration: StoreConfiguration(trustedKeys: [key], builtIns: [release.bundles["1.0.0"]!]))
            let report = try await release.updater(store, plainKeys: [key]).run()
            #expect(report.failures.isEmpty && report.outcomes.first?.to == "1.1.0" && report.catalog.trustVersion == nil)
            #expect(release.trustRequests.isEmpty && !FileManager.default.fileExists(atPath: store.layout.trust))
        }
    }
}
