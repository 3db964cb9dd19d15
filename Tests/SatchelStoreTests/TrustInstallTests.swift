import Foundation
import SatchelBundle
import SatchelCore
@testable import SatchelStore
import SatchelTestSupport
import Testing

/// Keys and trust documents for the store's tests: one root, a catalog key, two bundle keys, a stranger.
struct StoreTrustKeys {
    let root = SigningKey.generate()
    let catalog = SigningKey.generate()
    let bundles = [SigningKey.generate(), SigningKey.generate()]
    let stranger = SigningKey.generate()

    var anchor: TrustAnchor { try! TrustAnchor(rootKeys: [root.verifyingKey]) }

    func document(_ version: Int64, bundles: [SigningKey], threshold: Int = 1) throws -> TrustDocument {
        try TrustDocument(version: version, expires: Timestamp(secondsSinceEpoch: 4_000_000_000), roles: [
            .root: RoleDefinition(keys: [root.verifyingKey], threshold: 1),
            .catalog: RoleDefinition(keys: [catalog.verifyingKey], threshold: 1),
            .bundles: RoleDefinition(keys: bundles.map(\.verifyingKey), threshold: threshold),
        ]).signed(by: root)
    }
}

@Suite("The store with trust: the bundles role's threshold, kept signatures, revocation that never strands")
struct TrustInstallTests {
    let keys = StoreTrustKeys()

    func store(_ root: String, builtIns: [String] = [], plainKeys: [VerifyingKey] = []) throws -> PackageStore {
        try PackageStore(root: root, configuration: StoreConfiguration(trustedKeys: plainKeys, builtIns: builtIns, trustAnchor: keys.anchor))
    }

    /// A `satchel.sig` by a key the device never saw cannot be named (it has no key id): that refusal is the threshold.
    @Test("a bundle unsigned, or signed by a catalog key or a key the device never saw, is refused naming the check; the store unchanged")
    func arbitrarySoftware() throws {
        try withTemporaryFolder { folder in
            let store = try store(folder + "/store")
            try store.keptTrust.keep([try keys.document(1, bundles: [keys.bundles[0]])])
            let before = try snapshot(store.layout.root)
            for (signer, check) in [(nil, "threshold"), (keys.catalog, "key-not-trusted"), (keys.stranger, "threshold")] as [(SigningKey?, String)] {
                let bundle = try BundleFactory(folder: folder, key: signer).bundle(version: "1.0.0")
                do {
                    try store.install(bundle: bundle)
                    Issue.record("installed a bundle signed by \(signer.map { "\($0.keyID)" } ?? "nobody")")
                } catch let error as StoreError {
                    guard case .untrustedBundle(let id, let version, let refusal) = error else { Issue.record("\(error)"); continue }
                    #expect(id == "shop" && version == "1.0.0" && refusal.check == check, "\(refusal)")
                    #expect("\(error)".hasPrefix("bundle shop 1.0.0 refused: \(check.replacingOccurrences(of: "-", with: " "))"), "\(error)")
                }
                #expect(try snapshot(store.layout.root) == before)
            }
            // A catalog key alone never makes a bundle installable, even beside keyed signatures of its own.
            let byCatalog = try BundleFactory(folder: folder, key: keys.catalog).bundle(version: "1.0.0")
            let manifest = try BundleReader(path: byCatalog).manifestBytes
            #expect(throws: StoreError.self) {
                try store.install(bundle: byCatalog, signatures: [try KeyedSignature(signing: manifest, with: keys.catalog)])
            }
            let good = try BundleFactory(folder: folder, key: keys.bundles[0]).bundle(version: "1.0.0")
            #expect(try store.install(bundle: good).version.description == "1.0.0")
            // satchel.sig alone met the threshold: nothing is kept beside the version.
            #expect(listing(store.layout.root + "/packages/shop") == ["state.json", "versions"])
            #expect(try store.check().isEmpty)
        }
    }

    @Test("threshold 2: satchel.sig counts as one, keyed signatures (given, or offered by the task) make up the rest and are kept beside the version")
    func thresholdTwo() async throws {
        try await withTemporaryFolder { folder async throws in
            let store = try store(folder + "/store")
            try store.keptTrust.keep([try keys.document(1, bundles: keys.bundles, threshold: 2)])
            let factory = BundleFactory(folder: folder, key: keys.bundles[0])
            let bundle = try factory.bundle(version: "1.0.0")
            let manifest = try BundleReader(path: bundle).manifestBytes
            let before = try snapshot(store.layout.root)
            do {
                try store.install(bundle: bundle)
                Issue.record("installed short of the threshold")
            } catch {
                #expect("\(error)".contains("threshold: bundles role: 1 of 2 signatures"), "\(error)")
            }
            // The same key again, keyed, is still one key.
            #expect(throws: StoreError.self) { try store.install(bundle: bundle, signatures: [try KeyedSignature(signing: manifest, with: keys.bundles[0])]) }
            #expect(try snapshot(store.layout.root) == before)
            let second = try KeyedSignature(signing: manifest, with: keys.bundles[1])
            try store.install(bundle: bundle, signatures: [second])
            let kept = try SignatureFile.decode(try readBytes(store.layout.root + "/packages/shop/signatures/1.0.0.sigs"))
            #expect(kept.signatures == [second] && kept.covers(manifest))
            #expect(try store.check().isEmpty)

            // Given with the install, as the updater gives a version assembled from objects its entry's signatures.
            let next = try factory.bundle(version: "1.1.0")
            let nextManifest = try BundleReader(path: next).manifestBytes
            let offered = try KeyedSignature(signing: nextManifest, with: keys.bundles[1])
            try store.install(bundle: next, signatures: [offered])
            #expect(try store.state(of: id("shop"))?.active.description == "1.1.0")
            // gc removes 1.0.0 once 1.2.0 is confirmed over 1.1.0, and its kept signatures with it.
            let last = try factory.bundle(version: "1.2.0")
            try store.install(bundle: last, signatures: [try KeyedSignature(signing: try BundleReader(path: last).manifestBytes, with: keys.bundles[1])])
            try store.confirm(id("shop"))
            #expect(try store.collectGarbage() == ["shop@1.0.0"])
            #expect(listing(store.layout.root + "/packages/shop/signatures") == ["1.1.0.sigs", "1.2.0.sigs"])
        }
    }

    @Test("after a trust version drops a bundle key, installed versions and built-ins keep serving, check reports them, new bundles by it are refused")
    func revocationNeverStrands() throws {
        try withTemporaryFolder { folder in
            let old = BundleFactory(folder: folder, key: keys.bundles[0])
            let builtIn = try old.bundle(id: "docs", version: "0.9.0", host: "docs.example")
            let root = folder + "/store"
            let first = try store(root, builtIns: [builtIn])
            try first.keptTrust.keep([try keys.document(1, bundles: [keys.bundles[0]])])
            try first.install(bundle: try old.bundle(version: "1.0.0"))
            try first.confirm(id("shop"))
            #expect(try first.check().isEmpty)

            // Version 2 gives the bundles role to bundles[1] alone: bundles[0] is revoked.
            try first.keptTrust.keep([try keys.document(2, bundles: [keys.bundles[1]])])
            let reopened = try store(root, builtIns: [builtIn])
            #expect(reopened.builtInRefusals.isEmpty && reopened.builtInPackages.map(\.id.value) == ["docs"])
            #expect(try reopened.state(of: id("shop"))?.active.description == "1.0.0")
            let problems = try reopened.check()
            #expect(Set(problems.map(\.kind)) == [.revoked] && Set(problems.map(\.id)) == ["shop", "docs"], "\(problems)")
            let before = try snapshot(root)
            do {
                try reopened.install(bundle: try old.bundle(version: "1.1.0"))
                Issue.record("installed a bundle signed by a revoked key")
            } catch let error as StoreError {
                guard case .untrustedBundle(_, _, let refusal) = error else { Issue.record("\(error)"); return }
                #expect(refusal.check == "revoked-key" && "\(refusal)".contains("\(keys.bundles[0].keyID)"), "\(refusal)")
            }
            #expect(try snapshot(root) == before)
            try reopened.install(bundle: try BundleFactory(folder: folder, key: keys.bundles[1]).bundle(version: "1.1.0"))
            #expect(try reopened.check().map(\.id) == ["docs"])
        }
    }

    @Test("roots and no trust version held: the plain keys count until one is; roots alone refuse every bundle")
    func beforeTheFirstVersion() throws {
        try withTemporaryFolder { folder in
            let plain = SigningKey.generate()
            let bundle = try BundleFactory(folder: folder, key: plain).bundle(version: "1.0.0")
            let withPlain = try store(folder + "/a", plainKeys: [plain.verifyingKey])
            try withPlain.install(bundle: bundle)
            #expect(try withPlain.check().isEmpty)
            // Once a first version is held, only its roles count: the plain key no role holds is revoked.
            try withPlain.keptTrust.keep([try keys.document(1, bundles: [keys.bundles[0]])])
            #expect(try withPlain.check().map(\.kind) == [.revoked])
            let rootsOnly = try store(folder + "/b")
            #expect(throws: StoreError.self) { try rootsOnly.install(bundle: bundle) }
        }
    }

    @Test("kept trust documents are read back in order, walked from the anchor; a damaged one costs only itself and what follows")
    func keptDocuments() throws {
        try withTemporaryFolder { folder in
            let store = try store(folder + "/store")
            #expect(store.trustState()?.version == 0)
            try store.keptTrust.keep([try keys.document(1, bundles: [keys.bundles[0]]), try keys.document(2, bundles: [keys.bundles[1]])])
            #expect(listing(store.layout.trust) == ["1.json", "2.json"])
            #expect(store.trustState()?.version == 2)
            try Data("{}".utf8).write(to: URL(fileURLWithPath: store.layout.trust + "/2.json"))
            #expect(store.trustState()?.version == 1)
            let plain = try PackageStore(root: folder + "/store")
            #expect(plain.trustState() == nil)
            // An app that ships version 2 as its anchor, and the document itself, holds it with nothing kept.
            let second = try keys.document(2, bundles: [keys.bundles[1]])
            let shipped = try PackageStore(root: folder + "/shipped", configuration: StoreConfiguration(
                trustAnchor: TrustAnchor(document: second), trustDocuments: [second.canonicalBytes]))
            #expect(shipped.trustState()?.version == 2 && listing(shipped.layout.trust).isEmpty)
        }
    }
}
