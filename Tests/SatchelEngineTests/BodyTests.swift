import Foundation
import SatchelCore
@testable import SatchelEngine
import SatchelHTTP
import SatchelTestSupport
import Testing

@Suite("Body restoration in the engine and the body store")
struct BodyTests {
    @Test("a restored POST is a miss carrying the restored request, satchel headers gone")
    func restoredMiss() async throws {
        try await withTemporaryFolder { folder async throws in
            let secret = BodyProofSecret.random()
            let engine = try ResourceEngine(source: FolderSource([makePackage(in: folder, files: ["index.html": text("x")])]), configuration: EngineConfiguration(bodyProof: .required(secret)))
            func proven(_ request: ResourceRequest) -> ResourceRequest { BodyProof.attaching(to: request, secret: secret) }
            let result = engine.handle(proven(ResourceRequest(method: "POST", url: "satchel://m.shop.com/api/cart", headers: ["X-Satchel-Body": "%7B%22a%22%3A1%7D", "X-Satchel-Content-Type": "application/json"])))
            let miss = try #require(result.miss)
            #expect(miss.bodyChannel == .header)
            #expect(miss.request.body == Array("{\"a\":1}".utf8))
            #expect(miss.request.headers["Content-Type"] == "application/json")
            #expect(miss.request.headers["X-Satchel-Body"] == nil)
            #expect(miss.request.headers["X-Satchel-Token"] == nil, "the proof is not forwarded")
            #expect(miss.upstreamURL == "https://m.shop.com/api/cart")

            try engine.bodyStore.put("b1", StoredBody(bytes: [9, 9], contentType: "application/octet-stream"))
            // Without a proof nothing is restored, and the stored body is not consumed.
            let unproven = try #require(engine.handle(ResourceRequest(method: "POST", url: "satchel://other.example/u", headers: ["X-Satchel-Body-Id": "b1"])).response)
            #expect(unproven.status == 403)
            let stored = try #require(engine.handle(proven(ResourceRequest(method: "POST", url: "satchel://other.example/u", headers: ["X-Satchel-Body-Id": "b1"]))).miss)
            #expect(stored.request.body == [9, 9])
            #expect(stored.bodyChannel == .bodyStore)
            let lost = try #require(engine.handle(proven(ResourceRequest(method: "POST", url: "satchel://other.example/u", headers: ["X-Satchel-Body-Id": "b1"]))).response)
            #expect(lost.status == 400)
            #expect(lost.headers["X-Satchel-Error"]?.contains("body lost") == true)
            let tooBig = try #require(engine.handle(proven(ResourceRequest(method: "POST", url: "satchel://other.example/u", headers: ["BODY": String(repeating: "a", count: 20_000)]))).response)
            #expect(tooBig.status == 413)
        }
    }

    @Test("the legacy hooks carry no proof: their bodies are restored only when the engine is told to accept unproven bodies")
    func unprovenOptIn() async throws {
        try await withTemporaryFolder { folder async throws in
            let source = FolderSource([try makePackage(in: folder, files: ["index.html": text("x")])])
            let seed = ResourceRequest(url: "satchel://m.shop.com/login?POST_DATA=user%3Dalice%26password%3Dhunter2")
            let strict = try ResourceEngine(source: source)
            let refused = try #require(strict.handle(seed).response)
            #expect(refused.status == 403)
            #expect(refused.headers["X-Content-Type-Options"] == "nosniff")
            let lenient = try ResourceEngine(source: source, configuration: EngineConfiguration(bodyProof: .notRequired))
            let restored = try #require(lenient.handle(seed).miss)
            #expect(restored.request.method == "POST")
            #expect(restored.request.body == Array("user=alice&password=hunter2".utf8))
        }
    }

    @Test("the body store is bounded, one-shot and expiring")
    func store() throws {
        let clock = Locked(ContinuousClock.now)
        let store = BodyStore(limits: BodyStore.Limits(maxBytes: 10, maxEntries: 2, maxBodyBytes: 8, ttl: .seconds(5)), now: { clock.withLock { $0 } })
        try store.put("a", StoredBody(bytes: [1, 2, 3]))
        #expect(throws: BodyStore.Refusal.bodyTooLarge(bytes: 9, limit: 8)) { try store.put("big", StoredBody(bytes: Array(repeating: 0, count: 9))) }
        try store.put("b", StoredBody(bytes: Array(repeating: 0, count: 7)))
        #expect(throws: BodyStore.Refusal.tooManyBodies(limit: 2)) { try store.put("c", StoredBody(bytes: [1])) }
        #expect(store.take("a") == StoredBody(bytes: [1, 2, 3]))
        #expect(store.take("a") == nil)
        #expect(throws: BodyStore.Refusal.storeFull(limit: 10)) { try store.put("d", StoredBody(bytes: Array(repeating: 0, count: 4))) }
        clock.withLock { $0 = $0 + .seconds(6) }
        #expect(store.take("b") == nil)
        #expect(store.bytes == 0)
        #expect(throws: BodyStore.Refusal.invalidID("../x")) { try store.put("../x", StoredBody(bytes: [])) }
    }
}
