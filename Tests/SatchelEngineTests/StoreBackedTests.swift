import Foundation
import SatchelBundle
import SatchelCore
@testable import SatchelEngine
import SatchelHTTP
@testable import SatchelStore
import SatchelTestSupport
import Testing
import SatchelPublishing

@Suite("The engine over a real store")
struct StoreBackedTests {
    /// Packs a package whose `video.mp4` holds `payload`, and returns the bundle.
    func bundle(_ folder: String, version: String, payload: [UInt8]) throws -> String {
        let source = folder + "/src-\(version)"
        try makeTree(source, ["index.html": "v\(version)"])
        try Data(payload).write(to: URL(fileURLWithPath: source + "/video.mp4"))
        let options = PackOptions(id: try PackageID("shop"), version: try SemanticVersion(version), scope: try Scope(hosts: [HostPattern("m.shop.com")]))
        return try Packer.pack(source: source, options: options, outputFolder: folder + "/out").bundle
    }

    @Test("an activation and a gc during an in-flight 100 MB response: it completes byte-exact")
    func inFlight() async throws {
        try await withTemporaryFolder { folder async throws in
            let first = Array(try #require(FileHandle(forReadingAtPath: "/dev/urandom")).readData(ofLength: 100 << 20))
            let store = try PackageStore(root: folder + "/store")
            _ = try store.install(bundle: bundle(folder, version: "1.0.0", payload: first))
            try store.confirm(try PackageID("shop"))
            let engine = try ResourceEngine(source: store, configuration: EngineConfiguration(activation: .immediate))
            let response = try #require(await engine.get("satchel://m.shop.com/video.mp4").response)
            guard case .file(let region) = response.body else { Issue.record("expected a file region"); return }
            var received: [UInt8] = []
            received.reserveCapacity(first.count)
            var iterator = region.chunks().makeAsyncIterator()
            while received.count < first.count / 2, let chunk = try await iterator.next() { received += chunk }

            // Mid-response: two new versions are installed and confirmed, the engine moves to the newest, and gc
            // deletes the first version's folder (the rule keeps only the fallback, 1.5.0, besides the active one).
            _ = try store.install(bundle: bundle(folder, version: "1.5.0", payload: Array(first.prefix(500))))
            try store.confirm(try PackageID("shop"))
            _ = try store.install(bundle: bundle(folder, version: "2.0.0", payload: Array(first.prefix(1000))))
            try store.confirm(try PackageID("shop"))
            #expect(try await engine.get("satchel://m.shop.com/").response?.body.collect() == Array("v2.0.0".utf8))
            #expect(try store.collectGarbage() == ["shop@1.0.0"])
            #expect(!FileManager.default.fileExists(atPath: store.layout.version(try PackageID("shop"), try SemanticVersion("1.0.0"))))

            while let chunk = try await iterator.next() { received += chunk }
            #expect(received.count == first.count)
            // memcmp: an element-wise == over 100 MB is slow in a debug build.
            #expect(received.withUnsafeBytes { r in first.withUnsafeBytes { f in memcmp(r.baseAddress!, f.baseAddress!, f.count) } } == 0)
        }
    }

    @Test("immediate mode never waits on the store's pin lock on a request's thread: while gc or another process holds it, the old versions answer, then the new ones")
    func reloadDoesNotWaitForThePinLock() async throws {
        try await withTemporaryFolder { folder async throws in
            let store = try PackageStore(root: folder + "/store")
            _ = try store.install(bundle: bundle(folder, version: "1.0.0", payload: [1]))
            let engine = try ResourceEngine(source: store, configuration: EngineConfiguration(activation: .immediate))
            #expect(try await engine.get("satchel://m.shop.com/").response?.body.collect() == Array("v1.0.0".utf8))

            // Another holder of the pin lock (gc sweeping, another process pinning); then 2.0.0 becomes active.
            var holder: StoreLock? = try StoreLock(path: store.layout.pinLock)
            _ = try store.install(bundle: bundle(folder, version: "2.0.0", payload: [2]))
            // The request runs on a thread of its own, as a request's thread would (and so that a request that did wait
            // for the lock would hold no thread of the cooperative pool).
            let answered = Locked<[UInt8]??>(nil)
            Thread {
                let result = engine.handle(ResourceRequest(url: "satchel://m.shop.com/"))
                var bytes: [UInt8]?
                if case .response(let response) = result, case .bytes(let body) = response.body { bytes = body }
                answered.withLock { $0 = .some(bytes) }
            }.start()
            // A liveness bound, not a speed goal: the request must not wait for the lock's holder at all.
            let finished = await eventually(within: .seconds(60)) { answered.withLock { $0 != nil } }
            #expect(finished, "a request waited on the pin lock")
            #expect(answered.withLock { $0 } == .some(Array("v1.0.0".utf8)))
            holder = nil
            _ = holder
            _ = await eventually(within: .seconds(600)) { answered.withLock { $0 != nil } }
            #expect(try await engine.get("satchel://m.shop.com/").response?.body.collect() == Array("v2.0.0".utf8))
        }
    }

    @Test("a pinned engine keeps its versions safe from gc until it goes away")
    func pins() async throws {
        try await withTemporaryFolder { folder async throws in
            let store = try PackageStore(root: folder + "/store")
            _ = try store.install(bundle: bundle(folder, version: "1.0.0", payload: [1, 2, 3]))
            try store.confirm(try PackageID("shop"))
            var engine: ResourceEngine? = try ResourceEngine(source: store)
            for version in ["2.0.0", "3.0.0"] {
                _ = try store.install(bundle: bundle(folder, version: version, payload: [4, 5, 6]))
                try store.confirm(try PackageID("shop"))
            }
            // 1.0.0 is neither active, nor the fallback (2.0.0), nor the newest confirmed: only the pin keeps it.
            #expect(try store.collectGarbage().isEmpty)
            #expect(try await engine?.get("satchel://m.shop.com/video.mp4").response?.body.collect() == [1, 2, 3])
            engine = nil
            #expect(try store.collectGarbage() == ["shop@1.0.0"])
        }
    }

    @Test("the bounded memory probe: 1,000 random ranges over a 1 GiB sparse file in a child process")
    func memory() async throws {
        let probe = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("SatchelEngineProbe").path
        let outcome = try await runProcess(probe, [])
        try #require(outcome.status == 0, "\(outcome.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as! [String: Any]
        let growth = try #require(report["peakGrowthBytes"] as? Int)
        #expect(report["ranges"] as? Int == 1000)
        #expect((report["bytesServed"] as? Int ?? 0) > 100 << 20)
        #expect(growth < 32 << 20, "peak RSS grew by \(growth) bytes")
    }
}
