@testable import SatchelStore
import Foundation
import SatchelBundle
import SatchelCore
import SatchelPublishing
import SatchelTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("A full disk, on a real small file system")
struct DiskFullTests {
    /// On a 1 MiB tmpfs (``withSmallFileSystem``; a refused mount fails the test): a disk-full
    /// path that is never exercised is not tested.
    @Test("ENOSPC is one typed error: staging cleaned, store unchanged, no retry")
    func diskFull() async throws {
        try await withTemporaryFolder { folder async throws in
            let mountPoint = folder + "/small"
            try await withSmallFileSystem(at: mountPoint, size: "1m") { () async throws in
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
                #expect(Date().timeIntervalSince(started) < 300, "a full disk must fail, not retry for ever")
                #expect(try snapshot(store.layout.root) == before)
                #expect(listing(store.layout.root + "/staging").isEmpty)
                #expect(try store.state(of: id("shop"))?.active == v("1.0.0"))
                #expect(try store.check().isEmpty)
            }
        }
    }
}
