import Foundation
import Testing
import SatchelBundle
import SatchelCore
@testable import SatchelStore
import SatchelTestSupport

@Suite("Trial, confirm, rollback, remove, gc, pins, check and recovery")
struct LifecycleTests {
    @Test("an unconfirmed trial rolls back after its launches, persisted across reopening the store")
    func trialRollback() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let configuration = StoreConfiguration(maxTrialLaunches: 2)
            var store = try PackageStore(root: folder + "/store", configuration: configuration)
            _ = try store.install(bundle: factory.bundle(version: "1.0.0"))
            try store.confirm(id("shop"))
            _ = try store.install(bundle: factory.bundle(version: "1.1.0"))
            #expect(try store.beginLaunch().trials == ["shop": 1])
            // Opening, listing and checking are not launches.
            store = try PackageStore(root: folder + "/store", configuration: configuration)
            _ = try store.list()
            _ = try store.check()
            #expect(try store.state(of: id("shop"))?.launches == 1)
            #expect(try store.beginLaunch().trials == ["shop": 2])
            store = try PackageStore(root: folder + "/store", configuration: configuration)
            let report = try store.beginLaunch()
            #expect(report.rolledBack == [TrialRollback(id: "shop", from: "1.1.0", to: "1.0.0")])
            #expect(try store.state(of: id("shop")) == PackageState(active: v("1.0.0"), trial: nil, launches: 0, history: [v("1.0.0")], failed: [v("1.1.0")]))
            // The failed trial stays on disk (an explicit activate may still choose it) until gc.
            store = try PackageStore(root: folder + "/store", configuration: configuration)
            #expect(store.installedVersions(of: id("shop")) == [v("1.0.0"), v("1.1.0")])
            #expect(try store.collectGarbage() == ["shop@1.1.0"])
        }
    }

    @Test("two installs without a confirm; rollback returns to the first, and a failing second trial falls back to it")
    func twoInstallsNeverStrand() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let configuration = StoreConfiguration(maxTrialLaunches: 2)
            let store = try PackageStore(root: folder + "/store", configuration: configuration)
            try store.install(bundle: factory.bundle(version: "1.0.0"))
            try store.install(bundle: factory.bundle(version: "1.1.0"))
            // Reopening (recovery) keeps 1.0.0: it served and did not fail.
            let reopened = try PackageStore(root: folder + "/store", configuration: configuration)
            #expect(reopened.installedVersions(of: id("shop")) == [v("1.0.0"), v("1.1.0")])
            #expect(try reopened.list().first?.fallback == "1.0.0")
            #expect(try reopened.rollback(id("shop")).active == v("1.0.0"))

            // The same again, but 1.1.0 crashes on every launch instead.
            let other = try PackageStore(root: folder + "/other", configuration: configuration)
            try other.install(bundle: factory.bundle(version: "1.0.0"))
            try other.install(bundle: factory.bundle(version: "1.1.0"))
            for _ in 0..<2 { _ = try other.beginLaunch() }
            let report = try other.beginLaunch()
            #expect(report.rolledBack == [TrialRollback(id: "shop", from: "1.1.0", to: "1.0.0")])
            #expect(report.exhaustedWithoutFallback.isEmpty)
            #expect(try other.state(of: id("shop"))?.failed == [v("1.1.0")])
            // Never chosen again automatically: a later failure of 1.0.0 does not go "back" to 1.1.0.
            for _ in 0..<2 { _ = try other.beginLaunch() }
            #expect(try other.beginLaunch().exhaustedWithoutFallback == ["shop"])
            #expect(try other.state(of: id("shop"))?.active == v("1.0.0"))
        }
    }

    @Test("a failed version is refused by an automatic install, unchanged, and accepted by an explicit one")
    func failedNotReinstalledAutomatically() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let store = try PackageStore(root: folder + "/store")
            try store.install(bundle: factory.bundle(version: "1.0.0"))
            try store.confirm(id("shop"))
            let failing = try factory.bundle(version: "1.1.0")
            try store.install(bundle: failing)
            try store.rollback(id("shop"))
            let before = try snapshot(store.layout.root)
            #expect(throws: StoreError.failedBefore(id: "shop", version: "1.1.0")) { try store.install(bundle: failing) }
            #expect(try snapshot(store.layout.root) == before)
            try store.install(bundle: failing, retryingFailed: true)
            #expect(try store.state(of: id("shop")) == PackageState(active: v("1.1.0"), trial: v("1.1.0"), launches: 0, history: [v("1.0.0")]))
        }
    }

    @Test("a first version past its launches has nothing to fall back to and stays active")
    func firstTrial() throws {
        try withTemporaryFolder { folder throws in
            let store = try PackageStore(root: folder + "/store", configuration: StoreConfiguration(maxTrialLaunches: 1))
            _ = try store.install(bundle: BundleFactory(folder: folder).bundle(version: "1.0.0"))
            _ = try store.beginLaunch()
            #expect(try store.beginLaunch().exhaustedWithoutFallback == ["shop"])
            #expect(try store.state(of: id("shop"))?.active == v("1.0.0"))
        }
    }

    @Test("rollback walks back through confirmed versions, never forth again")
    func rollbackHistory() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let store = try PackageStore(root: folder + "/store")
            for version in ["1.0.0", "1.1.0", "1.2.0"] {
                _ = try store.install(bundle: factory.bundle(version: version))
                try store.confirm(id("shop"))
            }
            _ = try store.install(bundle: factory.bundle(version: "2.0.0"))
            #expect(try store.rollback(id("shop")).active == v("1.2.0"))
            #expect(try store.rollback(id("shop")).active == v("1.1.0"))
            #expect(try store.rollback(id("shop")).active == v("1.0.0"))
            #expect(throws: StoreError.noEarlierConfirmedVersion(id: "shop")) { try store.rollback(id("shop")) }
            #expect(throws: StoreError.notInTrial(id: "shop")) { try store.confirm(id("shop")) }
            #expect(throws: StoreError.packageNotInstalled("nope")) { try store.rollback(id("nope")) }
        }
    }

    @Test("activate switches to an installed version; unknown versions are refused")
    func activate() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let store = try PackageStore(root: folder + "/store")
            _ = try store.install(bundle: factory.bundle(version: "1.0.0"))
            try store.confirm(id("shop"))
            _ = try store.install(bundle: factory.bundle(version: "1.1.0"))
            try store.activate(id("shop"), v("1.0.0"))
            #expect(try store.state(of: id("shop"))?.active == v("1.0.0"))
            #expect(try store.state(of: id("shop"))?.isTrial == false)
            #expect(throws: StoreError.versionNotInstalled(id: "shop", version: "9.9.9")) { try store.activate(id("shop"), v("9.9.9")) }
        }
    }

    @Test("remove refuses what the rule keeps (the active version, its fallback) and removes others or the whole package")
    func remove() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let store = try PackageStore(root: folder + "/store")
            _ = try store.install(bundle: factory.bundle(version: "1.0.0"))
            try store.confirm(id("shop"))
            _ = try store.install(bundle: factory.bundle(version: "1.1.0"))
            let before = try snapshot(store.layout.root)
            #expect(throws: StoreError.activeVersion(id: "shop", version: "1.1.0")) { try store.remove(id("shop"), version: v("1.1.0")) }
            #expect(throws: StoreError.keptByRule(id: "shop", version: "1.0.0", reason: .fallback)) { try store.remove(id("shop"), version: v("1.0.0")) }
            #expect(throws: StoreError.versionNotInstalled(id: "shop", version: "9.0.0")) { try store.remove(id("shop"), version: v("9.0.0")) }
            #expect(try snapshot(store.layout.root) == before)
            try store.confirm(id("shop"))
            _ = try store.install(bundle: factory.bundle(version: "1.2.0"))
            // 1.2.0 on trial falls back to 1.1.0, the newest confirmed; 1.0.0 is kept by nothing.
            try store.remove(id("shop"), version: v("1.0.0"))
            #expect(store.installedVersions(of: id("shop")) == [v("1.1.0"), v("1.2.0")])
            #expect(try store.state(of: id("shop"))?.history == [v("1.1.0")])
            try store.remove(id("shop"))
            #expect(try store.packageIDs().isEmpty)
            #expect(listing(store.layout.root + "/staging").isEmpty)
        }
    }

    @Test("gc keeps the active, last confirmed, trial, pinned and --keep versions")
    func gc() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let store = try PackageStore(root: folder + "/store")
            for version in ["1.0.0", "1.1.0", "1.2.0", "1.3.0"] {
                _ = try store.install(bundle: factory.bundle(version: version))
                try store.confirm(id("shop"))
            }
            _ = try store.install(bundle: factory.bundle(version: "2.0.0"))  // trial; confirmed is 1.3.0
            let pin = try store.pin([id("shop"): v("1.0.0")])
            #expect(try store.collectGarbage(keep: 1) == ["shop@1.1.0"])
            #expect(store.installedVersions(of: id("shop")) == [v("1.0.0"), v("1.2.0"), v("1.3.0"), v("2.0.0")])
            pin.release()
            #expect(try store.collectGarbage() == ["shop@1.0.0", "shop@1.2.0"])
            #expect(store.installedVersions(of: id("shop")) == [v("1.3.0"), v("2.0.0")])
            #expect(try store.rollback(id("shop")).active == v("1.3.0"))
        }
    }

    @Test("a pin whose owner is gone is stale and removed; a live one is honoured by recovery too")
    func pins() throws {
        try withTemporaryFolder { folder throws in
            let store = try PackageStore(root: folder + "/store")
            _ = try store.install(bundle: BundleFactory(folder: folder).bundle(version: "1.0.0"))
            let pin = try store.pin([id("shop"): v("1.0.0")])
            #expect(store.livePins()[id("shop")] == [v("1.0.0")])
            // A pin file left by a dead process: present, but nobody holds its lock.
            try Data("shop 0.9.0\n".utf8).write(to: URL(fileURLWithPath: store.layout.root + "/pins/dead.pin"))
            #expect(store.livePins()[id("shop")] == [v("1.0.0")])
            #expect(!FileManager.default.fileExists(atPath: store.layout.root + "/pins/dead.pin"))
            withExtendedLifetime(pin) {}
        }
    }

    @Test("check reports changed, missing and extra files of active versions")
    func check() throws {
        try withTemporaryFolder { folder throws in
            let key = SigningKey.generate()
            let store = try PackageStore(root: folder + "/store", configuration: StoreConfiguration(trustedKeys: [key.verifyingKey]))
            _ = try store.install(bundle: BundleFactory(folder: folder, key: key).bundle(version: "1.0.0"))
            let root = store.layout.version(id("shop"), v("1.0.0"))
            try Data("tampered".utf8).write(to: URL(fileURLWithPath: root + "/css/app.css"))
            try Data("body{!".utf8).write(to: URL(fileURLWithPath: root + "/index.html"))  // same size? no: a size change
            try FileManager.default.removeItem(atPath: root + "/js/app.mjs")
            try Data("x".utf8).write(to: URL(fileURLWithPath: root + "/extra.js"))
            try Data("bm90IGEgc2lnbmF0dXJl".utf8).write(to: URL(fileURLWithPath: root + "/satchel.sig"))
            let problems = try store.check().map { "\($0.path):\($0.kind.rawValue)" }.sorted()
            #expect(problems == ["css/app.css:sizeMismatch", "extra.js:unexpected", "index.html:sizeMismatch", "js/app.mjs:missing", "satchel.sig:signature"])
            // Same size, different bytes: a hash mismatch.
            let original = try readBytes(root + "/img/logo.png")
            var flipped = original
            flipped[0] ^= 1
            try Data(flipped).write(to: URL(fileURLWithPath: root + "/img/logo.png"))
            #expect(try store.check().contains { $0.path == "img/logo.png" && $0.kind == .hashMismatch })
        }
    }

    @Test("opening a store recovers: stale staging, temporary state, unreferenced versions, stateless packages")
    func recovery() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            var store = try PackageStore(root: folder + "/store")
            _ = try store.install(bundle: factory.bundle(version: "1.0.0"))
            let root = store.layout.root
            let stateBefore = try readBytes(root + "/packages/shop/state.json")
            try makeTree(root + "/staging/install-1-abc", ["index.html": "half"])
            try Data("{\"active\":".utf8).write(to: URL(fileURLWithPath: root + "/packages/shop/state.json.123-456.tmp"))
            try makeTree(root + "/packages/shop/versions/9.9.9", ["index.html": "never activated"])
            try makeTree(root + "/packages/ghost/versions/1.0.0", ["index.html": "first install killed before its state"])
            // The markers those installs wrote before their renames: an open recovers only the packages they name.
            try makeTree(root + "/staging", ["recover-shop": "", "recover-ghost": ""])
            store = try PackageStore(root: root)
            #expect(listing(root + "/staging").isEmpty)
            #expect(listing(root + "/packages") == ["shop"])
            #expect(listing(root + "/packages/shop") == ["state.json", "versions"])
            #expect(listing(root + "/packages/shop/versions") == ["1.0.0"])
            #expect(try readBytes(root + "/packages/shop/state.json") == stateBefore)
            #expect(try store.check().isEmpty)
        }
    }

    @Test("a store of an unknown layout or with a damaged state file is refused, not rewritten")
    func unsupported() throws {
        try withTemporaryFolder { folder throws in
            try makeTree(folder + "/future", ["store.json": #"{"layout":2}"#])
            #expect(throws: StoreError.unsupportedLayout(path: folder + "/future/store.json", layout: 2)) { try PackageStore(root: folder + "/future") }
            let store = try PackageStore(root: folder + "/store")
            _ = try store.install(bundle: BundleFactory(folder: folder).bundle(version: "1.0.0"))
            try Data("garbage".utf8).write(to: URL(fileURLWithPath: store.layout.root + "/packages/shop/state.json"))
            #expect(throws: StoreError.self) { try store.state(of: id("shop")) }
        }
    }
}
