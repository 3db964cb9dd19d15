import Foundation
import SatchelCore
import Testing

@Suite("Step headers (docs/formats.md, \"Steps\")")
struct UpdateStepTests {
    static let a = String(repeating: "a", count: 64)
    static let b = String(repeating: "b", count: 64)
    static let c = String(repeating: "c", count: 64)

    static func sample() throws -> UpdateStep {
        try UpdateStep(
            id: PackageID("shop"), version: SemanticVersion("1.1.0"), from: SemanticVersion("1.0.0"), fromContentHash: c, patchSize: 120,
            parts: [.object(b, size: 10, gzip: true), .diff(from: c, to: a, size: 7)])
    }

    @Test("the header is canonical JSON with its parts sorted by the content they make, and reads back the same")
    func roundTrip() throws {
        let step = try Self.sample()
        #expect(step.parts.map(\.to) == [Self.a, Self.b])
        let text = String(decoding: step.canonicalBytes, as: UTF8.self)
        #expect(text == #"{"from":"1.0.0","fromContentHash":"\#(Self.c)","id":"shop","parts":[{"from":"\#(Self.c)","size":7,"to":"\#(Self.a)"},{"gzip":true,"size":10,"to":"\#(Self.b)"}],"patch":120,"version":"1.1.0"}"#)
        #expect(try UpdateStep.decode(step.canonicalBytes) == step)
    }

    @Test("a header not in canonical form, with an unknown field, or with parts that break the rules is refused", arguments: [
        (#"{"from":"1.0.0","fromContentHash":"C","id":"shop","parts":[],"patch":120,"version":"1.1.0","extra":1}"#, "an unknown field"),
        (#"{"fromContentHash":"C","from":"1.0.0","id":"shop","parts":[],"patch":120,"version":"1.1.0"}"#, "keys out of order"),
        (#"{"from":"1.0.0","fromContentHash":"C","id":"shop","parts":[{"gzip":true,"size":1,"to":"B"},{"gzip":true,"size":1,"to":"A"}],"patch":120,"version":"1.1.0"}"#, "parts out of order"),
        (#"{"from":"1.0.0","fromContentHash":"C","id":"shop","parts":[{"gzip":true,"size":1,"to":"A"},{"gzip":false,"size":2,"to":"A"}],"patch":120,"version":"1.1.0"}"#, "a content twice"),
        (#"{"from":"1.0.0","fromContentHash":"C","id":"shop","parts":[{"from":"C","gzip":true,"size":1,"to":"A"}],"patch":120,"version":"1.1.0"}"#, "both from and gzip"),
        (#"{"from":"1.0.0","fromContentHash":"C","id":"shop","parts":[{"size":1,"to":"A"}],"patch":120,"version":"1.1.0"}"#, "neither from nor gzip"),
        (#"{"from":"1.0.0","fromContentHash":"C","id":"shop","parts":[{"from":"A","size":1,"to":"A"}],"patch":120,"version":"1.1.0"}"#, "a diff to itself"),
        (#"{"from":"1.0.0","fromContentHash":"C","id":"shop","parts":[{"from":"C","size":0,"to":"A"}],"patch":120,"version":"1.1.0"}"#, "an empty diff"),
        (#"{"from":"1.0.0","fromContentHash":"C","id":"shop","parts":[{"gzip":false,"size":-1,"to":"A"}],"patch":120,"version":"1.1.0"}"#, "a negative size"),
        (#"{"from":"1.0.0","fromContentHash":"C","id":"shop","parts":[],"patch":0,"version":"1.1.0"}"#, "no patch"),
        (#"{"from":"1.1.0","fromContentHash":"C","id":"shop","parts":[],"patch":120,"version":"1.1.0"}"#, "a step to its own base"),
        (#"{"from":"1.0.0","fromContentHash":"C","id":"shop","parts":[{"gzip":true,"size":1,"to":"ABC"}],"patch":120,"version":"1.1.0"}"#, "a short hash"),
    ])
    func refused(json: String, why: String) {
        let text = json.replacingOccurrences(of: "\"A\"", with: "\"\(Self.a)\"").replacingOccurrences(of: "\"B\"", with: "\"\(Self.b)\"")
            .replacingOccurrences(of: "\"C\"", with: "\"\(Self.c)\"")
        #expect(throws: UpdateStepError.self, "\(why)") { try UpdateStep.decode(Array(text.utf8)) }
    }

    @Test("the prefix: magic, version, a header length within the limit")
    func prefix() throws {
        let good = UpdateStep.prefix(headerLength: 300)
        #expect(good.count == UpdateStep.prefixSize && Array(good[0..<4]) == Array("SSTP".utf8) && good[4] == 1)
        #expect(try UpdateStep.headerLength(prefix: good) == 300)
        #expect(throws: UpdateStepError.badMagic) { try UpdateStep.headerLength(prefix: Array("ZIPP".utf8) + Array(good[4...])) }
        #expect(throws: UpdateStepError.unsupportedVersion(2)) { try UpdateStep.headerLength(prefix: Array(good[0..<4]) + [2] + Array(good[5...])) }
        #expect(throws: UpdateStepError.self) { try UpdateStep.headerLength(prefix: Array(good[0..<5]) + [0, 0, 0, 0]) }
        #expect(throws: UpdateStepError.self) { try UpdateStep.headerLength(prefix: Array(good[0..<5]) + [0xFF, 0xFF, 0xFF, 0xFF]) }
        #expect(throws: UpdateStepError.self) { try UpdateStep.headerLength(prefix: Array(good[0..<6])) }
    }

    @Test("the layout: the patch after the header, then each part in order, ending exactly at the file's end")
    func layout() throws {
        let step = try Self.sample()
        let layout = try step.layout(headerLength: 50, fileSize: 9 + 50 + 120 + 7 + 10)
        #expect(layout.patch.offset == 59 && layout.patch.size == 120)
        #expect(layout.parts == [179, 186])
        #expect(throws: UpdateStepError.sizeMismatch(declared: 196, actual: 197)) { try step.layout(headerLength: 50, fileSize: 197) }
        #expect(throws: UpdateStepError.sizeMismatch(declared: 196, actual: 195)) { try step.layout(headerLength: 50, fileSize: 195) }
    }

    @Test("the catalog names steps in content.steps, sorted by from; one from the entry's own version, or twice from one base, is refused")
    func catalogField() throws {
        let step = CatalogStep(from: try SemanticVersion("1.0.0"), url: "steps/shop/1.1.0/from-1.0.0-0123456789abcdef.step", size: 99, sha256: Self.a)
        let older = CatalogStep(from: try SemanticVersion("0.9.0"), url: "steps/shop/1.1.0/from-0.9.0-0123456789abcdef.step", size: 98, sha256: Self.b)
        let content = CatalogContent(manifest: Self.c, objects: "objects/", patches: [], steps: [step, older])
        #expect(content.steps?.map(\.from.description) == ["0.9.0", "1.0.0"])
        let entry = CatalogEntry(
            id: try PackageID("shop"), version: try SemanticVersion("1.1.0"), url: "shop-1.1.0.zip", size: 10, sha256: Self.a, content: content)
        let catalog = try Catalog(expires: Timestamp(secondsSinceEpoch: 4_000_000_000), packages: [entry])
        let text = String(decoding: catalog.canonicalBytes, as: UTF8.self)
        #expect(text.contains(#""steps":[{"from":"0.9.0","sha256":"\#(Self.b)","size":98,"url":"steps/shop/1.1.0/from-0.9.0-0123456789abcdef.step"}"#))
        #expect(try Catalog.decode(catalog.canonicalBytes).packages.first?.content?.steps?.count == 2)

        var itself = entry
        itself.content?.steps = [CatalogStep(from: try SemanticVersion("1.1.0"), url: "x.step", size: 1, sha256: Self.a)]
        #expect(throws: CatalogError.self) { try Catalog(expires: Timestamp(secondsSinceEpoch: 4_000_000_000), packages: [itself]) }
        var twice = entry
        twice.content?.steps = [step, step]
        #expect(throws: CatalogError.self) { try Catalog(expires: Timestamp(secondsSinceEpoch: 4_000_000_000), packages: [twice]) }
    }

    @Test("a CDN may keep a step a year (named by its bytes), as objects and diffs; patches a day")
    func caching() {
        let forever = "public, max-age=31536000, immutable, no-transform"
        #expect(ReleaseCaching.cacheControl(forPublished: "/steps/shop/1.2.0/from-1.1.0-0123456789abcdef.step") == forever)
        #expect(ReleaseCaching.cacheControl(forPublished: "diffs/0b/\(Self.a)-\(Self.b)") == forever)
        #expect(ReleaseCaching.cacheControl(forPublished: "patches/shop/1.2.0/from-1.1.0.json.gz") == "public, max-age=86400, no-transform")
    }

    @Test("the tie order: the bundle, the delta, the step, the objects; the lightest wins")
    func cheapest() {
        let one = UpdatePlan.Cost(bytes: 100_000, requests: 1)
        #expect(UpdatePlan.cheapest(step: one, objects: nil, delta: one, full: one) == .full)
        #expect(UpdatePlan.cheapest(step: one, objects: nil, delta: UpdatePlan.Cost(bytes: 100_001, requests: 1), full: UpdatePlan.Cost(bytes: 100_001, requests: 1)) == .step)
        #expect(UpdatePlan.cheapest(step: one, objects: UpdatePlan.Cost(bytes: 50_000, requests: 3), delta: nil, full: one) == .full)
        #expect(UpdatePlan.cheapest(step: UpdatePlan.Cost(bytes: 50_000, requests: 1), objects: UpdatePlan.Cost(bytes: 10_000, requests: 3), delta: nil, full: one) == .step)
        #expect(UpdatePlan.cheapest(step: UpdatePlan.Cost(bytes: 99_999, requests: 1), objects: UpdatePlan.Cost(bytes: 10_000, requests: 2), delta: one, full: one) == .objects)
    }
}
