import Foundation
import Testing
import SatchelBundle
import SatchelCore
@testable import SatchelStore
import SatchelTestSupport
#if canImport(Glibc)
import Glibc
#endif

@Suite("A full disk, on a real small file system")
struct DiskFullTests {
    /// Mounts a 1 MiB tmpfs (root is available here). If the mount is refused the test fails: a disk-full
    /// path that is never exercised is not tested.
    @Test("ENOSPC is one typed error: staging cleaned, store unchanged, no retry")
    func diskFull() throws {
        try withTemporaryFolder { folder throws in
            let mountPoint = folder + "/small"
            try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
            let mount = try runProcess("/bin/mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mountPoint])
            try #require(mount.status == 0, "mounting a tmpfs failed: \(mount.stderr)")
            defer { _ = try? runProcess("/bin/umount", [mountPoint]) }

            let factory = BundleFactory(folder: folder)
            let store = try PackageStore(root: mountPoint + "/store")
            _ = try store.install(bundle: factory.bundle(version: "1.0.0"))
            // 1.5 MB of incompressible data: the bundle is small enough to read but too big to extract here.
            var random = SystemRandomNumberGenerator()
            let noise = (0..<1_500_000).map { _ in UInt8.random(in: 0...255, using: &random) }
            let source = folder + "/big"
            try makeTree(source, ["index.html": "big"])
            try Data(noise).write(to: URL(fileURLWithPath: source + "/video.bin"))
            let big = try Packer.pack(
                source: source,
                options: PackOptions(id: PackageID("shop"), version: SemanticVersion("2.0.0"), scope: Scope(hosts: [HostPattern("m.shop.example")])),
                outputFolder: folder + "/out").bundle
            let before = try snapshot(store.layout.root)
            let started = Date()
            #expect(throws: StoreError.self) { try store.install(bundle: big) }
            do { _ = try store.install(bundle: big) } catch {
                guard case StoreError.diskFull(let path) = error else { Issue.record("expected diskFull, got \(error)"); return }
                #expect(path.hasPrefix(store.layout.root + "/staging/"))
            }
            #expect(Date().timeIntervalSince(started) < 30, "a full disk must fail fast, not retry")
            #expect(try snapshot(store.layout.root) == before)
            #expect(listing(store.layout.root + "/staging").isEmpty)
            #expect(try store.state(of: id("shop"))?.active == v("1.0.0"))
            #expect(try store.check().isEmpty)
        }
    }
}
