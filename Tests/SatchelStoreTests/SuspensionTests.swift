import Foundation
import Testing
import SatchelBundle
import SatchelCore
@testable import SatchelStore
import SatchelTestSupport

/// A store in an App Group container holds no lock while its app is suspended (decision 0037): iOS ends an app
/// suspended with a file lock on a file in a shared container. Pins let go of their flock and keep their versions by a
/// lease meanwhile; clocks are injected, never slept on.
@Suite("Suspension: no lock held while suspended, versions kept by a lease, pins taken back")
struct SuspensionTests {
    static let lease: Int64 = 3_600_000  // one hour, in milliseconds
    static let start: Int64 = 1_700_000_000_000

    /// A store on `root` whose wall clock is `clock`; `app` and `other` play two processes sharing the container (flock
    /// locks belong to open file descriptions, so two stores in one process conflict exactly as two processes do).
    static func store(_ root: String, clock: Locked<Int64>) throws -> PackageStore {
        var configuration = StoreConfiguration()
        configuration.suspendedPinLease = .milliseconds(lease)
        configuration.now = { clock.withLock { $0 } }
        return try PackageStore(root: root, configuration: configuration)
    }

    /// shop 1.0.0 to 1.3.0, each confirmed: gc keeps 1.3.0 (active) and 1.2.0 (its fallback) and deletes the others
    /// unless something pins them.
    static func fourVersions(_ store: PackageStore, _ folder: String) throws {
        let factory = BundleFactory(folder: folder)
        for version in ["1.0.0", "1.1.0", "1.2.0", "1.3.0"] {
            _ = try store.install(bundle: factory.bundle(version: version))
            try store.confirm(id("shop"))
        }
    }

    @Test("after suspend no file under the store is locked, and another process's gc keeps the pinned version until the lease ends")
    func suspendedPinsHoldNoLock() throws {
        try withTemporaryFolder { folder throws in
            let clock = Locked(Self.start)
            let root = folder + "/store"
            let app = try Self.store(root, clock: clock)
            try Self.fourVersions(app, folder)
            let pin = try app.pin([id("shop"): v("1.0.0")])
            let pinName = "pins/" + (pin.path as NSString).lastPathComponent
            // The check sees this process's own lock: an empty answer below means no lock, not a blind check.
            #expect(lockedFiles(under: root) == [pinName])

            let suspended = app.suspend()
            #expect(suspended == LocksSuspended(pins: 1, leaseEnds: Self.start + Self.lease))
            #expect(lockedFiles(under: root) == [])
            #expect(FileManager.default.fileExists(atPath: pin.path))

            let other = try Self.store(root, clock: clock)
            #expect(try other.collectGarbage() == ["shop@1.1.0"])
            clock.withLock { $0 = Self.start + Self.lease - 1 }
            #expect(try other.collectGarbage() == [])
            #expect(other.installedVersions(of: id("shop")) == [v("1.0.0"), v("1.2.0"), v("1.3.0")])
            // The lease ended and the app did not come back (iOS ends suspended apps without a word): the pin is a dead
            // process's, and its version goes.
            clock.withLock { $0 = Self.start + Self.lease }
            #expect(try other.collectGarbage() == ["shop@1.0.0"])
            #expect(!FileManager.default.fileExists(atPath: pin.path))
            withExtendedLifetime(pin) {}
        }
    }

    @Test("resume takes the lock back: the version is kept whatever the clock says, and the lease line is gone")
    func resumeHoldsAgain() throws {
        try withTemporaryFolder { folder throws in
            let clock = Locked(Self.start)
            let root = folder + "/store"
            let app = try Self.store(root, clock: clock)
            try Self.fourVersions(app, folder)
            let pin = try app.pin([id("shop"): v("1.0.0")])
            let pinName = "pins/" + (pin.path as NSString).lastPathComponent
            app.suspend()
            let other = try Self.store(root, clock: clock)
            #expect(try other.collectGarbage() == ["shop@1.1.0"])
            clock.withLock { $0 = Self.start + Self.lease / 2 }

            #expect(try app.resume() == LocksResumed(held: 1))
            #expect(lockedFiles(under: root) == [pinName])
            #expect(try String(contentsOfFile: pin.path, encoding: .utf8) == "shop 1.0.0\n")
            clock.withLock { $0 = Self.start + 10 * Self.lease }
            #expect(try other.collectGarbage() == [])
            #expect(app.installedVersions(of: id("shop")) == [v("1.0.0"), v("1.2.0"), v("1.3.0")])
            // A second resume finds nothing to do; the pin ends as it always did.
            #expect(try app.resume() == LocksResumed())
            pin.release()
            #expect(lockedFiles(under: root) == [])
            #expect(try other.collectGarbage() == ["shop@1.0.0"])
        }
    }

    @Test("a pin swept after its lease is made again when its versions are intact, and reports the versions that went")
    func resumeAfterSweep() throws {
        try withTemporaryFolder { folder throws in
            let clock = Locked(Self.start)
            let root = folder + "/store"
            let app = try Self.store(root, clock: clock)
            try Self.fourVersions(app, folder)
            let gone = try app.pin([id("shop"): v("1.0.0")])
            let intact = try app.pin([id("shop"): v("1.3.0")])
            app.suspend()
            clock.withLock { $0 = Self.start + Self.lease }
            let other = try Self.store(root, clock: clock)
            #expect(try other.collectGarbage() == ["shop@1.0.0", "shop@1.1.0"])
            // Both pins were a dead process's to the sweeper: both files went, 1.3.0 stayed because it is active.
            #expect(listing(root + "/pins").filter { $0.hasSuffix(".pin") } == [])

            #expect(try app.resume() == LocksResumed(repinned: 1, lost: [id("shop"): [v("1.0.0")]]))
            #expect(lockedFiles(under: root) == ["pins/" + (intact.path as NSString).lastPathComponent])
            #expect(try String(contentsOfFile: intact.path, encoding: .utf8) == "shop 1.3.0\n")
            #expect(other.livePins() == [id("shop"): [v("1.3.0")]])
            // The lost pin protects nothing and is not retried; what the engine serves now it pins anew (reload()).
            #expect(try app.resume() == LocksResumed())
            let (packages, now) = try app.pinnedPackages()
            #expect(packages.map(\.manifest.version) == [v("1.3.0")])
            #expect(lockedFiles(under: root).count == 2)
            withExtendedLifetime((gone, now)) {}
        }
    }

    @Test("a version removed and installed again while the app was suspended is not the folder it pinned: reported lost")
    func reinstalledIsLost() throws {
        try withTemporaryFolder { folder throws in
            let clock = Locked(Self.start)
            let root = folder + "/store"
            let app = try Self.store(root, clock: clock)
            try Self.fourVersions(app, folder)
            let pin = try app.pin([id("shop"): v("1.0.0")])
            app.suspend()
            clock.withLock { $0 = Self.start + Self.lease + 1 }
            let other = try Self.store(root, clock: clock)
            #expect(try other.collectGarbage() == ["shop@1.0.0", "shop@1.1.0"])
            _ = try other.install(bundle: BundleFactory(folder: folder).bundle(version: "1.0.0"))
            #expect(other.installedVersions(of: id("shop")) == [v("1.0.0"), v("1.2.0"), v("1.3.0")])
            // Same number, but not the files the engine indexed when it pinned: it must read them again.
            #expect(try app.resume() == LocksResumed(lost: [id("shop"): [v("1.0.0")]]))
            #expect(lockedFiles(under: root) == [])
            withExtendedLifetime(pin) {}
        }
    }

    @Test("a pin made while suspended holds no lock until resume")
    func pinWhileSuspended() throws {
        try withTemporaryFolder { folder throws in
            let clock = Locked(Self.start)
            let root = folder + "/store"
            let app = try Self.store(root, clock: clock)
            try Self.fourVersions(app, folder)
            app.suspend()
            let (packages, pin) = try app.pinnedPackages()
            let late = try app.pin([id("shop"): v("1.0.0")])
            #expect(packages.map(\.manifest.version) == [v("1.3.0")])
            #expect(lockedFiles(under: root) == [])
            let other = try Self.store(root, clock: clock)
            #expect(try other.collectGarbage() == ["shop@1.1.0"])
            #expect(try app.resume() == LocksResumed(held: 2))
            #expect(lockedFiles(under: root).count == 2)
            withExtendedLifetime((pin, late)) {}
        }
    }

    @Test("a suspended store refuses what would take its lock, stops an install at its next file, and says when it let go")
    func noLockTakenWhileSuspended() throws {
        try withTemporaryFolder { folder throws in
            let clock = Locked(Self.start)
            let root = folder + "/store"
            let app = try Self.store(root, clock: clock)
            let factory = BundleFactory(folder: folder)
            _ = try app.install(bundle: factory.bundle(version: "1.0.0"))
            let bundle = try factory.bundle(version: "1.1.0")
            let before = try snapshot(root)
            // The app goes to the background while an install holds the store's lock.
            let unlocked = Locked<[[String]]>([])
            let suspended = Locked<LocksSuspended?>(nil)
            app.lockedHook.withLock { hook in
                hook = { @Sendable in
                    app.lockedHook.withLock { $0 = nil }
                    suspended.withLock { $0 = app.suspend(whenUnlocked: { unlocked.withLock { $0.append(lockedFiles(under: root)) } }) }
                }
            }
            #expect(throws: StoreError.suspended(store: root, lock: root + "/lock")) { try app.install(bundle: bundle) }
            #expect(suspended.withLock { $0 } == LocksSuspended(inFlight: 1))
            // Told once, after the install had let go of the lock.
            #expect(unlocked.withLock { $0 } == [[]])
            #expect(try snapshot(root) == before)

            #expect(throws: StoreError.suspended(store: root, lock: root + "/lock")) { try app.confirm(id("shop")) }
            #expect(throws: StoreError.suspended(store: root, lock: root + "/lock")) { try app.collectGarbage() }
            // Nothing holds a lock: told at once.
            let told = Locked(0)
            #expect(app.suspend(whenUnlocked: { told.withLock { $0 += 1 } }) == LocksSuspended())
            #expect(told.withLock { $0 } == 1)

            #expect(try app.resume() == LocksResumed())
            #expect(try app.install(bundle: bundle).version == v("1.1.0"))
        }
    }

    @Test("the lease line is one old runtimes ignore, and a pin file without a lock or a live lease is a dead process's")
    func leaseLine() throws {
        try withTemporaryFolder { folder throws in
            let clock = Locked(Self.start)
            let app = try Self.store(folder + "/store", clock: clock)
            let pin = try app.pin([id("shop"): v("1.0.0")])
            app.suspend()
            let text = try String(contentsOfFile: pin.path, encoding: .utf8)
            #expect(text == "shop 1.0.0\nsuspended until \(Self.start + Self.lease)\n")
            // What an older runtime parses: lines of exactly two words.
            #expect(text.split(separator: "\n").filter { $0.split(separator: " ").count == 2 } == ["shop 1.0.0"])
            #expect(VersionPin.readIfHeld(pin.path, now: Self.start + Self.lease - 1)?.map(\.1) == [v("1.0.0")])
            #expect(VersionPin.readIfHeld(pin.path, now: Self.start + Self.lease) == nil)
            #expect(!FileManager.default.fileExists(atPath: pin.path))
            withExtendedLifetime(pin) {}
        }
    }
}
