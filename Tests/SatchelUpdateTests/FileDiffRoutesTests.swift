import SatchelCore
import SatchelDiff
import Testing
@testable import SatchelUpdate

@Suite("Choosing diffs: when the index pays, which diff per file")
struct FileDiffRoutesTests {
    static let sha = (0..<10).map { String(repeating: String($0), count: 64) }

    @Test("the index is asked for only when what diffs could save exceeds it and its request, and the objects can still win")
    func indexCanPay() {
        let full = UpdatePlan.Cost(bytes: 10_000_000, requests: 1)
        let needed = [NeededContent(objectSize: 20_000, size: 60_000), NeededContent(objectSize: 20_000, size: 60_000)]
        // 40,000 - 2 bytes to save at most: an index of 14,997 and its 25,000-byte request just fits, 14,998 not.
        #expect(FileDiffRoutes.indexCanPay(indexSize: 14_997, patchSize: 500, needed: needed, delta: nil, full: full))
        #expect(!FileDiffRoutes.indexCanPay(indexSize: 14_998, patchSize: 500, needed: needed, delta: nil, full: full))
        #expect(!FileDiffRoutes.indexCanPay(indexSize: 100, patchSize: 500, needed: [], delta: nil, full: full))
        // A target no diff could make (past the device's 32 MiB) never pays for an index, however large its object.
        let huge = [NeededContent(objectSize: 30_000_000, size: 40 << 20)]
        #expect(!FileDiffRoutes.indexCanPay(indexSize: 100, patchSize: 500, needed: huge, delta: nil, full: full))
        // A delta lighter than the objects at their very best (patch, index, a byte each, 4 requests): not asked for.
        let best = UpdatePlan.Cost(bytes: 500 + 100 + 2, requests: 4).weight
        #expect(!FileDiffRoutes.indexCanPay(indexSize: 100, patchSize: 500, needed: needed, delta: UpdatePlan.Cost(bytes: best - 25_000, requests: 1), full: full))
        #expect(FileDiffRoutes.indexCanPay(indexSize: 100, patchSize: 500, needed: needed, delta: UpdatePlan.Cost(bytes: best - 24_999, requests: 1), full: full))
    }

    @Test("per file the smallest applicable diff from a held content; none past the limits, none from what is not held")
    func routes() throws {
        let s = Self.sha
        let limits = FileDiffLimits.device
        let index = FileDiffIndex(id: try PackageID("shop"), version: try SemanticVersion("1.1.0"), diffs: [
            .init(from: s[0], to: s[4], size: 300, sha256: s[7]),
            .init(from: s[1], to: s[4], size: 200, sha256: s[7]),   // the smallest for s[4]
            .init(from: s[3], to: s[4], size: 100, sha256: s[7]),   // smaller, but s[3] is not held
            .init(from: s[2], to: s[5], size: 100, sha256: s[7]),   // s[5]'s source is past its window
            .init(from: s[1], to: s[6], size: 9_000, sha256: s[7]), // not smaller than s[6]'s object
            .init(from: s[8], to: s[5], size: 100, sha256: s[7]),   // s[5] has no route here: another package may hold s[8]
        ])
        let held = [s[0]: Int64(50_000), s[1]: 40_000, s[2]: Int64(limits.windowFloor) + 1]
        let contents = HeldContents(held.mapValues { HeldContent(size: $0, source: .file("/dev/null")) })
        let needed = [
            s[4]: NeededContent(objectSize: 10_000, size: 45_000), s[5]: NeededContent(objectSize: 10_000, size: 45_000),
            s[6]: NeededContent(objectSize: 9_000, size: 45_000),
        ]
        let routes = FileDiffRoutes.routes(in: index, needed: needed, held: contents, limits: limits)
        #expect(routes.mapValues(\.size) == [s[4]: 200], "\(routes)")
        // Sources looked for in other packages: only for contents without a route here (s[4] has one, so not s[3]).
        #expect(FileDiffRoutes.sourcesNotHeld(in: index, needed: needed, held: contents) == [s[8]])
        // A window past the limit: a 100-byte target may read 8 MiB, not one byte more.
        #expect(FileDiffRoutes.fits(diffSize: 10, sourceSize: Int64(limits.windowFloor), targetSize: 100, limits: limits))
        #expect(!FileDiffRoutes.fits(diffSize: 10, sourceSize: Int64(limits.windowFloor) + 1, targetSize: 100, limits: limits))
        #expect(!FileDiffRoutes.fits(diffSize: 10, sourceSize: 100, targetSize: Int64(limits.maxTarget) + 1, limits: limits))
    }
}
