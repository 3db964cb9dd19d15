import Testing
@testable import SatchelCore

/// The weights of the three ways (docs/formats.md, "Objects and patches"): bytes + requests × 25,000.
@Suite struct UpdatePlanCostTests {
    typealias Cost = UpdatePlan.Cost

    @Test("the request's weight is a 4G round trip (20 Mbit/s × 80 ms) shared by the 8 requests in flight")
    func constant() {
        #expect(UpdatePlan.roundTripBytes == 20_000_000 / 8 * 80 / 1000)
        #expect(UpdatePlan.requestsInFlight == 8)
        #expect(UpdatePlan.bytesPerRequest == 25_000)
        #expect(Cost(bytes: 1_000, requests: 3).weight == 76_000)
    }

    @Test("fewer bytes in many requests: the delta weighs less, though bytes alone would take the objects")
    func requestsMakeTheDeltaCheaper() {
        // The patch and 6 objects: 102,000 B + 7 × 25,000 = 277,000; the delta: 117,000 + 25,000 = 142,000.
        let objects = Cost(bytes: 102_000, requests: 7), delta = Cost(bytes: 117_000, requests: 1), full = Cost(bytes: 10_100_000, requests: 1)
        #expect(objects.bytes < delta.bytes)
        #expect(UpdatePlan.cheapest(objects: objects, delta: delta, full: full) == .delta)
    }

    @Test("no delta: requests can make the full bundle cheaper than objects that save bytes")
    func requestsMakeTheBundleCheaper() {
        // A small package: 40 objects of 2 KB against a 300 KB bundle.
        let objects = Cost(bytes: 82_000, requests: 41), full = Cost(bytes: 300_000, requests: 1)
        #expect(UpdatePlan.cheapest(objects: objects, delta: nil, full: full) == .full)
    }

    @Test("the reverse: hundreds of requests, and the objects still weigh less when the bytes they save are more")
    func objectsDespiteTheirRequests() {
        // 5 % of a 10,000-file app: 500 objects, 3 MB, against a 36 MB bundle and a delta that carries the whole manifest.
        let objects = Cost(bytes: 3_000_000, requests: 501)
        #expect(UpdatePlan.cheapest(objects: objects, delta: nil, full: Cost(bytes: 36_000_000, requests: 1)) == .objects)
        #expect(UpdatePlan.cheapest(objects: objects, delta: Cost(bytes: 16_000_000, requests: 1), full: Cost(bytes: 36_000_000, requests: 1)) == .objects)
        // A few objects against a big delta: bytes decide, as before.
        #expect(UpdatePlan.cheapest(objects: Cost(bytes: 10_000, requests: 3), delta: Cost(bytes: 1_100_000, requests: 1), full: Cost(bytes: 9_000_000, requests: 1)) == .objects)
    }

    @Test("one request each, the delta and the bundle are compared by bytes; a tie goes to the fewer requests")
    func ties() {
        let full = Cost(bytes: 100_000, requests: 1)
        #expect(UpdatePlan.cheapest(objects: nil, delta: Cost(bytes: 99_999, requests: 1), full: full) == .delta)
        #expect(UpdatePlan.cheapest(objects: nil, delta: Cost(bytes: 100_000, requests: 1), full: full) == .full)
        // 50,000 + 3 × 25,000 = 125,000 = the bundle's weight: the bundle, one request.
        #expect(UpdatePlan.cheapest(objects: Cost(bytes: 50_000, requests: 3), delta: nil, full: full) == .full)
        #expect(UpdatePlan.cheapest(objects: Cost(bytes: 49_999, requests: 3), delta: nil, full: full) == .objects)
    }
}
