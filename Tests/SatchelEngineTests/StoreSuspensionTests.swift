import Foundation
import SatchelCore
@testable import SatchelEngine
@testable import SatchelStore
import SatchelTestSupport
import SatchelWebKit
import Testing
import SatchelPublishing

/// An app's engine over its store across suspensions (decision 0037): no lock held while suspended, the pin held again
/// after, and versions swept during a long suspension read again. The lease's clock is injected, never slept on.
@Suite("StoreSuspension: the engine's pins across the app's suspension")
struct StoreSuspensionTests {
    func bundle(_ folder: String, version: String) throws -> String {
        let source = folder + "/src-\(version)"
        try makeTree(source, ["index.html": "v\(version)"])
        let options = PackOptions(id: try PackageID("shop"), version: try SemanticVersion(version), scope: try Scope(hosts: [HostPattern("m.shop.com")]))
        return try Packer.pack(source: source, options: options, outputFolder: folder + "/out").bundle
    }

    @Test("the engine's pin holds no lock while suspended and holds it again after; what a sweep took meanwhile is read again")
    func engineAcrossSuspensions() async throws {
        try await withTemporaryFolder { folder async throws in
            let clock = Locked<Int64>(1_700_000_000_000)
            var configuration = StoreConfiguration()
            configuration.suspendedPinLease = .seconds(60)
            configuration.now = { clock.withLock { $0 } }
            let root = folder + "/store"
            let store = try PackageStore(root: root, configuration: configuration)
            let shop = try PackageID("shop")
            _ = try store.install(bundle: bundle(folder, version: "1.0.0"))
            try store.confirm(shop)
            let engine = try ResourceEngine(source: store)
            // Installed while the app runs: served from the next launch. gc would keep 2.0.0 (active) and 1.5.0 (its
            // fallback), and delete 1.0.0 but for the engine's pin.
            for version in ["1.5.0", "2.0.0"] {
                _ = try store.install(bundle: bundle(folder, version: version))
                try store.confirm(shop)
            }
            let suspension = StoreSuspension(locks: store, engine: engine)
            #expect(lockedFiles(under: root).count == 1)

            #expect(suspension.suspend().pins == 1)
            #expect(lockedFiles(under: root) == [])
            // A short suspension: nothing was swept, the pin is held again and the launch's version still serves.
            let back = suspension.resume()
            #expect(back.resumed == LocksResumed(held: 1))
            #expect(!back.reloaded && back.failures.isEmpty)
            #expect(lockedFiles(under: root).count == 1)
            #expect(try await engine.get("satchel://m.shop.com/").response?.body.collect() == Array("v1.0.0".utf8))

            // A long one: the lease ends, and another process's gc takes 1.0.0 with the pin.
            suspension.suspend()
            let other = try PackageStore(root: root, configuration: configuration)
            #expect(try other.collectGarbage() == [])
            clock.withLock { $0 += 60_000 }
            #expect(try other.collectGarbage() == ["shop@1.0.0"])
            let late = suspension.resume()
            #expect(late.resumed == LocksResumed(lost: [shop: [try SemanticVersion("1.0.0")]]))
            #expect(late.reloaded && late.failures.isEmpty)
            #expect(try await engine.get("satchel://m.shop.com/").response?.body.collect() == Array("v2.0.0".utf8))
            // The versions it serves now are pinned, held.
            #expect(lockedFiles(under: root).count == 1)
            #expect(other.livePins() == [shop: [try SemanticVersion("2.0.0")]])
        }
    }
}
