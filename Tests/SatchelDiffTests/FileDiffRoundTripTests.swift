import SatchelDiff
@testable import SatchelPublishing
import Testing

@Suite("File diffs: what the encoder writes, the decoder gives back")
struct FileDiffRoundTripTests {
    /// Encodes, checks the header against the pair, applies, and returns the diff.
    @discardableResult
    static func roundTrip(_ source: [UInt8], _ target: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) throws -> [UInt8] {
        let diff = try #require(FileDiffEncoder.encode(source: source, target: target), sourceLocation: sourceLocation)
        let header = try FileDiff.header(of: diff)
        #expect(header.sourceSize == source.count, sourceLocation: sourceLocation)
        #expect(header.targetSize == target.count, sourceLocation: sourceLocation)
        #expect(try FileDiff.apply(diff, to: source) == target, sourceLocation: sourceLocation)
        return diff
    }

    @Test("empty source, empty target, both empty")
    func empties() throws {
        let text = Array("export const answer = 42;\n".utf8)
        try Self.roundTrip([], text)
        try Self.roundTrip(text, [])
        let both = try Self.roundTrip([], [])
        #expect(both.count <= 20, "an empty diff is its header: \(both.count) bytes")
    }

    @Test("identical files: one copy, a diff of a few bytes")
    func identical() throws {
        let bundle = Samples.bundle(release: 1)
        let diff = try Self.roundTrip(bundle, bundle)
        #expect(diff.count < 32, "\(diff.count) bytes for \(bundle.count) identical ones")
    }

    @Test("content shifted by an insertion and a deletion")
    func shifted() throws {
        let source = Samples.bundle(release: 1)
        var target = source
        target.insert(contentsOf: Array("/* a new banner comment, added at the top of the file */\n".utf8), at: 0)
        target.removeSubrange(20_000..<20_500)
        target.insert(contentsOf: Array("let inserted=\"in the middle\";".utf8), at: 10_000)
        let diff = try Self.roundTrip(source, target)
        #expect(diff.count < 200, "\(diff.count) bytes")
    }

    @Test("random bytes: unrelated, and a random file with a few bytes changed")
    func random() throws {
        let source = Samples.random(100_000, seed: 1)
        let unrelated = Samples.random(70_000, seed: 2)
        let diff = try Self.roundTrip(source, unrelated)
        #expect(diff.count <= unrelated.count + 64, "random data grows by the header only: \(diff.count)")
        var edited = source
        for index in stride(from: 500, to: edited.count, by: 9_973) { edited[index] ^= 0x5A }
        let small = try Self.roundTrip(source, edited)
        #expect(small.count < 200, "\(small.count) bytes for 11 changed bytes")
    }

    @Test("a bundle rebuilt with new content hashes and one module edited: well under its gzip size")
    func renamedHashes() throws {
        let source = Samples.bundle(release: 1)
        let target = Samples.bundle(release: 2)
        let diff = try Self.roundTrip(source, target)
        // 120 hashes of 20 hex digits changed: about 1,200 bytes of entropy, and one edited line.
        let gzip = try #require(RawDeflate.compress(target, level: 6)).count
        #expect(diff.count < 2_000, "\(diff.count) bytes; gzip of the target: \(gzip)")
        #expect(diff.count * 5 < gzip, "at most a fifth of a gzip of the target")
    }

    @Test("self-repeating target: copies from the target already written, overlapping ones included")
    func selfCopies() throws {
        let target = Array(String(repeating: "abcabcabcX", count: 500).utf8) + Array(repeating: 0, count: 10_000)
        let diff = try Self.roundTrip([], target)
        #expect(diff.count < 100, "\(diff.count) bytes")
    }

    @Test("8 MiB: a large file with scattered edits and a moved block")
    func large() throws {
        let source = Samples.random(8 << 20, seed: 7)
        var target = source
        for index in stride(from: 1_000, to: target.count, by: 250_000) { target[index] = target[index] &+ 1 }
        let moved = Array(target[(4 << 20)..<((4 << 20) + 100_000)])
        target.removeSubrange((4 << 20)..<((4 << 20) + 100_000))
        target.insert(contentsOf: moved, at: 1 << 20)
        let diff = try Self.roundTrip(source, target)
        #expect(diff.count < 2_000, "\(diff.count) bytes")
    }

    @Test("the encoder is deterministic: the same pair gives the same bytes")
    func deterministic() throws {
        let source = Samples.bundle(release: 3)
        let target = Samples.bundle(release: 4)
        let first = try #require(FileDiffEncoder.encode(source: source, target: target))
        for _ in 0..<3 { #expect(FileDiffEncoder.encode(source: source, target: target) == first) }
    }

    @Test("a small pair's exact bytes (the example in the format's draft)")
    func pinnedBytes() throws {
        let source = Array("hello, world! hello, world!".utf8)
        let target = Array("hello, there world! hello, world!".utf8)
        let diff = try Self.roundTrip(source, target)
        #expect(diff == Self.pinnedExample, "\(diff)")
    }

    /// "SDIF", version 1, sizes 27 and 33; five stored streams: operations [0, 2], literal lengths [0, 5], copy lengths
    /// [7, 21], addresses [11] (zigzag -6), literals "there". Instruction 0 copies "hello, " at the repeat offset 0;
    /// instruction 1 writes "there" and copies " world! hello, world!" from source position 12 - 0 - 6 = 6.
    static let pinnedExample: [UInt8] = [
        83, 68, 73, 70, 1, 27, 33, 0, 2, 0, 2, 0, 2, 0, 1, 0, 5, 0, 2, 0, 5, 7, 21, 11, 116, 104, 101, 114, 101,
    ]

    @Test("pairs past the device limits are not encoded")
    func pastLimits() {
        #expect(FileDiffEncoder.encode(source: [], target: [UInt8](repeating: 1, count: (32 << 20) + 1)) == nil)
        #expect(FileDiffEncoder.encode(source: [UInt8](repeating: 1, count: (8 << 20) + 1), target: [1]) == nil)
        // Twice the target widens the window past 8 MiB.
        #expect(FileDiffEncoder.encode(source: [UInt8](repeating: 1, count: 10 << 20), target: [UInt8](repeating: 2, count: 5 << 20)) != nil)
    }
}
