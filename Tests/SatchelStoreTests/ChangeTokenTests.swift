import Foundation
import SatchelCore
@testable import SatchelStore
import SatchelTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The store-wide change counter (`generation`), what opening a store looks at, and launches that change nothing.
@Suite("Change token and open cost")
struct ChangeTokenTests {
    /// The token a store object that shares no memory with the writer reads (another process's view: the counter is
    /// only on disk), once its cached token is older than its freshness.
    func freshToken(_ store: PackageStore) async -> [Int64] {
        try? await Task.sleep(nanoseconds: PackageStore.changeTokenFreshness * 2)
        return store.changeToken()
    }

    func counter(_ store: PackageStore) throws -> Int64 { try #require(store.generation.read()).value }

    /// Runs a mutation through `store` and checks the counter's new value and another store object's token.
    func expectBump(_ label: String, store: PackageStore, reader: PackageStore, _ operation: () throws -> Void) async throws {
        let before = try counter(store)
        let token = await freshToken(reader)
        try operation()
        let after = try counter(store)
        #expect(after > before && after % 2 == 0, "\(label): \(before) -> \(after)")
        await #expect(freshToken(reader) != token, "\(label): another store object's token did not change")
    }

    @Test("every install, activation, state change and removal moves the counter to a new even value; a refusal does not")
    func everyMutationBumps() async throws {
        try await withTemporaryFolder { folder async throws in
            let factory = BundleFactory(folder: folder)
            let store = try PackageStore(root: folder + "/store")
            let reader = try PackageStore(root: folder + "/store")
            let shop = id("shop")
            try await expectBump("install", store: store, reader: reader) { try store.install(bundle: factory.bundle(version: "1.0.0")) }
            try await expectBump("confirm", store: store, reader: reader) { try store.confirm(shop) }
            try await expectBump("install on trial", store: store, reader: reader) { try store.install(bundle: factory.bundle(version: "1.1.0")) }
            try await expectBump("launch counting a trial", store: store, reader: reader) { _ = try store.beginLaunch() }
            try await expectBump("rollback", store: store, reader: reader) { try store.rollback(shop) }
            try await expectBump("activate", store: store, reader: reader) { try store.activate(shop, v("1.1.0")) }
            try await expectBump("a judge's confirm", store: store, reader: reader) {
                let confirmed = try store.confirmTrial(shop, version: v("1.1.0"))
                #expect(confirmed)
            }
            try await expectBump("install of a second package", store: store, reader: reader) { try store.install(bundle: factory.bundle(id: "cart", version: "1.0.0", host: "cart.example")) }
            try await expectBump("a judge's rollback", store: store, reader: reader) {
                try store.install(bundle: factory.bundle(id: "cart", version: "1.1.0", host: "cart.example"))
                _ = try store.rollBackTrial(id("cart"), version: v("1.1.0"), because: .crashed)
                #expect(try store.state(of: id("cart"))?.active == v("1.0.0"))
            }
            try await expectBump("removal of a package", store: store, reader: reader) { try store.remove(id("cart")) }
            try store.install(bundle: factory.bundle(version: "1.2.0"))
            try store.confirm(shop)
            try await expectBump("removal of a version", store: store, reader: reader) { try store.remove(shop, version: v("1.0.0")) }
            try store.install(bundle: factory.bundle(version: "1.3.0"))
            try store.confirm(shop)
            try await expectBump("gc", store: store, reader: reader) {
                let removed = try store.collectGarbage()
                #expect(removed == ["shop@1.1.0"])
            }

            let before = try counter(store)
            #expect(throws: StoreError.self) { try store.confirm(shop) }
            // (Written out: `#expect(throws:)` around this call crashes the 6.3 compiler's SendNonSendable pass.)
            do {
                try store.remove(shop, version: v("1.3.0"))
                Issue.record("removing the active version was not refused")
            } catch {}
            #expect(try counter(store) == before)
        }
    }

    @Test("a change made by another store object, as by another process, is seen at the reader's next look")
    func anotherWriterIsSeen() async throws {
        try await withTemporaryFolder { folder async throws in
            let factory = BundleFactory(folder: folder)
            let reader = try PackageStore(root: folder + "/store")
            let writer = try PackageStore(root: folder + "/store")
            try writer.install(bundle: factory.bundle(version: "1.0.0"))
            let token = await freshToken(reader)
            await #expect(freshToken(reader) == token, "an unchanged store must keep its token, or an engine reloads on every request")
            try writer.confirm(id("shop"))
            await #expect(freshToken(reader) != token)
            #expect(try reader.state(of: id("shop"))?.isTrial == false)
        }
    }

    @Test("a writer killed between its state switch and its closing bump: readers see the switch, and the next open evens the counter")
    func killedWriter() async throws {
        try await withTemporaryFolder { folder async throws in
            let factory = BundleFactory(folder: folder)
            let root = folder + "/store"
            let writer = try PackageStore(root: root)
            try writer.install(bundle: factory.bundle(version: "1.0.0"))
            let reader = try PackageStore(root: root)
            let settled = await freshToken(reader)
            #expect(try counter(reader) % 2 == 0)

            // The writer's operation as a kill would leave it: the counter made odd, the state switched, no end.
            do {
                let lock = try StoreLock(path: writer.layout.lockFile)
                defer { withExtendedLifetime(lock) {} }
                try writer.beginChange()
                // A reader looking now, before the switch, reads the old state under an odd counter...
                let during = await freshToken(reader)
                #expect(during != settled)
                #expect(try reader.state(of: id("shop"))?.isTrial == true)
                var confirmed = try #require(try writer.state(of: id("shop")))
                try confirmed.confirm()
                try writer.writeState(confirmed, for: id("shop"), replacing: try writer.storedState(of: id("shop")))
                writer.operation.withLock { $0 = PackageStore.Operation() }
                // ...and the switch changes its token although the counter does not move again.
                let after = await freshToken(reader)
                #expect(after != during)
                await #expect(freshToken(reader) == after, "an odd counter with nothing changing must still give a stable token")
            }
            #expect(try counter(reader) % 2 == 1)
            let odd = await freshToken(reader)
            _ = try PackageStore(root: root)
            #expect(try counter(reader) % 2 == 0)
            await #expect(freshToken(reader) != odd)
            #expect(try reader.state(of: id("shop"))?.isTrial == false)
        }
    }

    @Test("opening a store of many packages reads none of them; a marked package is the only one recovered")
    func openReadsNoPackage() async throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let root = folder + "/store"
            let store = try PackageStore(root: root)
            let site = try factory.bundle(id: "p00", version: "1.0.0", host: "p00.example")
            try store.install(bundle: site)
            for number in 1..<12 {
                try store.install(bundle: factory.bundle(id: String(format: "p%02d", number), version: "1.0.0", host: "p\(number).example"))
            }
            #expect(FileSystem.list(store.layout.staging).isEmpty, "a finished install leaves no marker")
            let accessed = try FaultInjection.recordingAccesses(under: root) { _ = try PackageStore(root: root) }
            #expect(accessed.filter { $0.hasPrefix(store.layout.packages + "/") }.isEmpty, "\(accessed)")

            // What an install killed between its rename and its state switch leaves: a version nothing refers to,
            // and the marker written before the rename.
            let leftover = store.layout.version(id("p05"), v("2.0.0"))
            try FileManager.default.copyItem(atPath: store.layout.version(id("p05"), v("1.0.0")), toPath: leftover)
            #expect(FileManager.default.createFile(atPath: store.layout.recoveryMarker(id("p05")), contents: nil))
            let recovered = try FaultInjection.recordingAccesses(under: root) { _ = try PackageStore(root: root) }
            let packagesSeen = Set(recovered.compactMap { path -> String? in
                guard path.hasPrefix(store.layout.packages + "/") else { return nil }
                return path.dropFirst(store.layout.packages.count + 1).split(separator: "/").first.map(String.init)
            })
            #expect(packagesSeen == ["p05"])
            #expect(!FileManager.default.fileExists(atPath: leftover))
            #expect(FileSystem.list(store.layout.staging).isEmpty)
            #expect(try store.state(of: id("p05"))?.active == v("1.0.0"))
        }
    }

    @Test("a version kept for a running engine is removed by the first open after its pin is gone, found by its marker")
    func pinnedLeftover() async throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let root = folder + "/store"
            let store = try PackageStore(root: root)
            for version in ["1.0.0", "1.1.0", "1.2.0"] {
                try store.install(bundle: factory.bundle(version: version))
                try store.confirm(id("shop"))
            }
            var pin: VersionPin? = try store.pin([id("shop"): v("1.0.0")])
            try store.remove(id("shop"), version: v("1.0.0"))
            let kept = store.layout.version(id("shop"), v("1.0.0"))
            #expect(FileManager.default.fileExists(atPath: kept))
            _ = try PackageStore(root: root)
            #expect(FileManager.default.fileExists(atPath: kept), "still pinned")
            #expect(FileSystem.list(store.layout.staging) == ["recover-shop"])
            pin = nil
            _ = pin
            _ = try PackageStore(root: root)
            #expect(!FileManager.default.fileExists(atPath: kept))
            #expect(FileSystem.list(store.layout.staging).isEmpty)
        }
    }

    @Test("a launch rewrites no state it does not change: confirmed packages and trials that ran out with nowhere to go")
    func launchLeavesUnchangedStates() async throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let store = try PackageStore(root: folder + "/store", configuration: StoreConfiguration(maxTrialLaunches: 1))
            try store.install(bundle: factory.bundle(version: "1.0.0"))
            try store.confirm(id("shop"))
            try store.install(bundle: factory.bundle(id: "cart", version: "1.0.0", host: "cart.example"))
            _ = try store.beginLaunch()
            #expect(try store.beginLaunch().exhaustedWithoutFallback == ["cart"])
            func identity(_ package: String) throws -> [String] {
                let attributes = try FileManager.default.attributesOfItem(atPath: store.layout.state(id(package)))
                return [FileAttributeKey.systemFileNumber, .modificationDate, .size].map { "\(attributes[$0] ?? "none")" }
            }
            let before = (try identity("shop"), try identity("cart"), try counter(store))
            for _ in 0..<3 {
                let report = try store.beginLaunch()
                #expect(report.exhaustedWithoutFallback == ["cart"])
                #expect(report.trials.isEmpty && report.rolledBack.isEmpty)
            }
            #expect(try identity("shop") == before.0)
            #expect(try identity("cart") == before.1)
            #expect(try counter(store) == before.2)
            #expect(try store.state(of: id("cart")) == PackageState(active: v("1.0.0"), trial: v("1.0.0"), launches: 2, history: [], failed: [v("1.0.0")]))

            // Once there is somewhere to go (a version it fell from is back on disk), the next launch goes there.
            var exhausted = PackageState(active: v("1.1.0"), trial: v("1.1.0"), launches: 2, history: [v("1.0.0")], failed: [v("1.1.0")])
            #expect(exhausted.beginLaunch(maxTrialLaunches: 1, in: AvailableVersions(installed: [v("1.1.0")])) == .exhaustedWithoutFallback(v("1.1.0")))
            #expect(exhausted.launches == 2)
            #expect(exhausted.beginLaunch(maxTrialLaunches: 1, in: AvailableVersions(installed: [v("1.0.0"), v("1.1.0")]))
                == .rolledBack(from: v("1.1.0"), to: v("1.0.0")))
        }
    }
}
