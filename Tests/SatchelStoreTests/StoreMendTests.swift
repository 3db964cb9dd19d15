import Foundation
import SatchelBundle
import SatchelCore
@testable import SatchelStore
import SatchelPlatform
import SatchelTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Regression tests for what a code review found in the store; each would have failed before its fix.
@Suite("Store review mends")
struct StoreMendTests {
    @Test("a failed rename in writeAtomically closes its descriptor once, not again after the number was reused")
    func writeAtomicallyClosesOnce() throws {
        try withTemporaryFolder { folder throws in
            // Renaming a file over a non-empty folder fails.
            try makeTree(folder + "/target", ["inside": "x"])
            let reused = Locked<Int32>(-1)
            #expect(throws: StoreError.self) {
                try FileSystem.writeAtomically(Array("data".utf8), to: folder + "/target") {
                    // The temporary's descriptor was just closed; the lowest free number is likely that one.
                    reused.withLock { $0 = open("/dev/null", O_RDONLY) }
                }
            }
            let descriptor = reused.withLock { $0 }
            #expect(descriptor >= 0)
            // Still open: the failed rename did not close it a second time.
            #expect(fcntl(descriptor, F_GETFD) != -1)
            close(descriptor)
            #expect(listing(folder) == ["target"], "the temporary is removed")
        }
    }

    @Test("StagingSink records the files a delta prepares (links and copies) and their folders for the per-file sync")
    func stagingRecordsPreparedFiles() throws {
        try withTemporaryFolder { folder throws in
            let sink = StagingSink(root: folder, fileCount: 2)
            let linked = FileRecord(path: try SafePath(validating: "a/b/linked.js"), size: 1, sha256: String(repeating: "0", count: 64), mime: "text/javascript")
            let destination = try sink.prepare(linked)
            #expect(destination == folder + "/a/b/linked.js")
            try Data("x".utf8).write(to: URL(fileURLWithPath: destination))
            let written = FileRecord(path: try SafePath(validating: "a/written.css"), size: 1, sha256: String(repeating: "0", count: 64), mime: "text/css")
            try sink.begin(written)
            try "y".utf8.withContiguousStorageIfAvailable { try sink.write(UnsafeRawBufferPointer($0)) }
            try sink.end(written)
            #expect(sink.createdEntries == [folder + "/a", folder + "/a/b", folder + "/a/b/linked.js", folder + "/a/written.css"])
            // The path Apple platforms take (no syncfs): every entry flushed, folders included, then one flush to the media.
            let descriptor = open(folder, O_RDONLY | O_DIRECTORY)
            #expect(descriptor >= 0)
            defer { close(descriptor) }
            try FileSystem.syncEach(sink.createdEntries + [folder], thenFlush: descriptor, path: folder)
        }
    }

    @Test("a pin file is never visible unlocked: a concurrent stale-pin sweep never deletes a live pin")
    func pinVisibleOnlyWhenLocked() throws {
        try withTemporaryFolder { folder throws in
            let pins = folder + "/pins"
            try FileSystem.makeDirectory(pins)
            let stop = Locked(false)
            let sweeps = Locked(0)
            let sweeper = Thread {
                // What livePins does for every pin file, without any lock: a free flock means a dead owner.
                while !stop.withLock({ $0 }) {
                    for name in FileSystem.list(pins) where name.hasSuffix(".pin") { _ = VersionPin.readIfHeld(pins + "/" + name, now: 0) }
                    sweeps.withLock { $0 += 1 }
                }
            }
            sweeper.start()
            defer { stop.withLock { $0 = true } }
            var lost = 0
            for _ in 0..<3000 {
                let pin = try VersionPin(folder: pins, versions: [try PackageID("shop"): try SemanticVersion("1.0.0")])
                if !FileManager.default.fileExists(atPath: pin.path) { lost += 1 }
                pin.release()
            }
            #expect(lost == 0, "\(lost) live pins were swept away")
            #expect(sweeps.withLock { $0 } > 0)
        }
    }

    @Test("an engine pinning while another process activates and collects garbage keeps the versions it serves")
    func pinningIsAtomicWithGC() async throws {
        try await withTemporaryFolder { folder async throws in
            let factory = BundleFactory(folder: folder)
            let store = try PackageStore(root: folder + "/store")
            for version in ["1.0.0", "1.1.0", "1.2.0"] {
                try store.install(bundle: factory.bundle(version: version))
                try store.confirm(id("shop"))
            }
            try store.activate(id("shop"), v("1.0.0"))
            // Another process's view of the same store, opened beforehand.
            let other = try PackageStore(root: folder + "/store")
            let collected = Locked<[String]?>(nil)
            // On a thread of its own: the hook below waits for the other view's gc, which must not hold a thread of
            // the cooperative pool while it does.
            let engine = try await onOwnThread { () throws in
                let otherDone = DispatchSemaphore(value: 0)
                let stillRunning = Locked(false)
                store.pinningHook.withLock {
                    $0 = {
                        // Between reading "1.0.0 is active" and pinning it: activate 1.2.0 and gc, which would delete 1.0.0.
                        DispatchQueue.global().async {
                            try? other.activate(id("shop"), v("1.2.0"))
                            collected.withLock { $0 = try? other.collectGarbage() }
                            otherDone.signal()
                        }
                        // With the pin lock held, gc cannot get there; give it a moment to try.
                        let waited = otherDone.wait(timeout: .now() + 1)
                        stillRunning.withLock { $0 = waited == .timedOut }
                    }
                }
                let pinned = try (store as PackageSource).pinnedPackages()
                store.pinningHook.withLock { $0 = nil }
                if stillRunning.withLock({ $0 }) { otherDone.wait() }
                return pinned
            }
            #expect(engine.packages.map(\.label) == ["shop@1.0.0"])
            #expect(collected.withLock { $0 } == [], "gc must see the pin and keep 1.0.0")
            #expect(FileManager.default.fileExists(atPath: store.layout.version(id("shop"), v("1.0.0")) + "/index.html"))
            withExtendedLifetime(engine.pin) {}
        }
    }
}
