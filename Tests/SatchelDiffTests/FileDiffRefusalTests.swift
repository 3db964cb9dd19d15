@testable import SatchelDiff
import SatchelPublishing
import Testing

/// Every `FileDiffError`, each provoked by a diff crafted to break one rule (CraftedDiff writes the format field by
/// field). The valid diff they start from: source "0123456789"; instruction 0 writes the literals "ab" and copies 4
/// bytes from the source at the repeat offset 0 (source position 2: "2345"); the literal "Z" left ends the target.
@Suite("File diffs: every refusal, from crafted diffs")
struct FileDiffRefusalTests {
    static let source = Array("0123456789".utf8)

    static func valid() -> CraftedDiff {
        var diff = CraftedDiff(sourceSize: 10, targetSize: 7)
        diff.instruction(FileDiffFormat.Operation.sourceRepeat0.rawValue, literals: Array("ab".utf8), copy: 4)
        diff.streams[.literals, default: []].append(contentsOf: Array("Z".utf8))
        return diff
    }

    static func refusal(_ diff: [UInt8], source: [UInt8] = source, limits: FileDiffLimits = .device) -> FileDiffError? {
        do {
            _ = try FileDiff.apply(diff, to: source, limits: limits)
            return nil
        } catch {
            return error
        }
    }

    @Test("the starting diff applies, stored or with every stream deflated")
    func validDiff() throws {
        #expect(try FileDiff.apply(Self.valid().bytes, to: Self.source) == Array("ab2345Z".utf8))
        var deflated = Self.valid()
        deflated.deflated = Set(FileDiffStream.allCases)
        #expect(try FileDiff.apply(deflated.bytes, to: Self.source) == Array("ab2345Z".utf8))
    }

    @Test("every operation: repeat offsets, their swap, an explicit address, an overlapping copy from the target")
    func operations() throws {
        typealias Operation = FileDiffFormat.Operation
        var final = CraftedDiff(sourceSize: 10, targetSize: 0)
        final.instruction(Operation.sourceExplicit.rawValue, copy: 3, address: Varint.zigzag(5)!)  // t=0: s=5 "567"; rep0=-5, rep1=0
        final.instruction(Operation.sourceRepeat1.rawValue, copy: 2)                               // t=3: s=3 "34"; rep0=0, rep1=-5
        final.instruction(Operation.sourceExplicit.rawValue, copy: 1, address: Varint.zigzag(-5)!) // t=5: s=5-0-5=0 "0"; rep0=5, rep1=0
        final.instruction(Operation.sourceRepeat0.rawValue, copy: 2)                               // t=6: s=1 "12"
        final.instruction(Operation.target.rawValue, literals: Array("ab".utf8), copy: 7, address: 2) // "ab", then "abababa"
        final.targetSize = 3 + 2 + 1 + 2 + 2 + 7
        #expect(String(decoding: try FileDiff.apply(final.bytes, to: Self.source), as: UTF8.self) == "56734012ababababa")
    }

    @Test("the header: magic, version, sizes, stream descriptors")
    func header() {
        let valid = Self.valid().bytes
        #expect(Self.refusal(Array("SDIG".utf8) + valid.dropFirst(4)) == .badMagic)
        #expect(Self.refusal(Array("XD".utf8)) == .badMagic)
        #expect(Self.refusal(Array("SD".utf8)) == .truncated(field: "magic", offset: 2))
        #expect(Self.refusal([]) == .truncated(field: "magic", offset: 0))
        #expect(Self.refusal(Array("SDIF".utf8)) == .truncated(field: "version", offset: 4))
        var version = Self.valid()
        version.version = 2
        #expect(Self.refusal(version.bytes) == .unsupportedVersion(2))
        #expect(Self.refusal(Array("SDIF".utf8) + [1, 0x80]) == .truncated(field: "source size", offset: 6))
        #expect(Self.refusal(Array("SDIF".utf8) + [1, 10]) == .truncated(field: "target size", offset: 6))
        // Not the shortest form; eleven bytes; above 2^63 - 1.
        #expect(Self.refusal(Array("SDIF".utf8) + [1, 0x8A, 0x00, 7]) == .malformedVarint(field: "source size", offset: 5))
        #expect(Self.refusal(Array("SDIF".utf8) + [1] + [UInt8](repeating: 0xFF, count: 10) + [1]) == .malformedVarint(field: "source size", offset: 5))
        #expect(Self.refusal(Array("SDIF".utf8) + [1] + [UInt8](repeating: 0xFF, count: 9) + [1]) == .malformedVarint(field: "source size", offset: 5))
        // The largest value there is still reads (and is then past every limit).
        #expect(Self.refusal(Array("SDIF".utf8) + [1] + [UInt8](repeating: 0xFF, count: 8) + [0x7F, 7] + Array(valid[7...])) == .windowTooLarge(sourceSize: Int.max, limit: 8 << 20))
        // Byte 7 is the operations stream's encoding.
        var encoding = valid
        encoding[7] = 2
        #expect(Self.refusal(encoding) == .unknownStreamEncoding(stream: .operations, encoding: 2))
        #expect(Self.refusal(Array(valid[..<7])) == .truncated(field: "operations encoding", offset: 7))
        #expect(Self.refusal(Array(valid[..<8])) == .truncated(field: "operations size", offset: 8))
        var deflated = Self.valid()
        deflated.deflated = [.literals]
        let deflatedBytes = deflated.bytes
        let literalsSizeAt = 7 + 2 * 4 + 1   // four stored descriptors of one-byte sizes, then the literals' encoding
        #expect(Self.refusal(Array(deflatedBytes[..<(literalsSizeAt + 1)])) == .truncated(field: "literals encoded size", offset: literalsSizeAt + 1))
    }

    @Test("the streams must fill the diff exactly")
    func streamBytes() {
        var trailing = Self.valid()
        trailing.trailing = [0]
        #expect(Self.refusal(trailing.bytes) == .streamBytesMismatch(declared: 6, actual: 7))
        let valid = Self.valid().bytes
        #expect(Self.refusal(Array(valid.dropLast())) == .streamBytesMismatch(declared: 6, actual: 5))
        var huge = Self.valid()
        huge.declaredSizes[.literals] = Int.max
        #expect(Self.refusal(huge.bytes) == .streamBytesMismatch(declared: .max, actual: 6))
    }

    @Test("the source must be the size the diff was made from")
    func sourceSize() {
        #expect(Self.refusal(Self.valid().bytes, source: Array("012345678".utf8)) == .sourceSizeMismatch(declared: 10, actual: 9))
    }

    @Test("limits: a 1 GiB window or target, or too much memory in all, is refused from the header, before any work")
    func limits() throws {
        var window = Self.valid()
        window.sourceSize = 1 << 30
        // The source handed over is empty: the refusal comes before the source is even compared.
        #expect(Self.refusal(window.bytes, source: []) == .windowTooLarge(sourceSize: 1 << 30, limit: 8 << 20))
        #expect(try FileDiff.header(of: window.bytes).sourceSize == 1 << 30, "the header reads; the limits refuse")
        var target = Self.valid()
        target.targetSize = 1 << 30
        #expect(Self.refusal(target.bytes) == .targetTooLarge(targetSize: 1 << 30, limit: 32 << 20))
        // A 70 MiB literals stream in a few bytes of deflate: refused before it is inflated.
        var memory = Self.valid()
        memory.deflated = [.literals]
        memory.declaredSizes[.literals] = 70 << 20
        let needed = 10 + 7 + 1 + 1 + 1 + (70 << 20)
        #expect(Self.refusal(memory.bytes) == .memoryTooLarge(needed: needed, limit: 64 << 20))
        // The window is max(8 MiB, twice the target).
        let limits = FileDiffLimits.device
        #expect(limits.window(forTarget: 1) == 8 << 20)
        #expect(limits.window(forTarget: 5 << 20) == 10 << 20)
        #expect(limits.window(forTarget: .max) == .max)
        var wide = Self.valid()
        wide.sourceSize = (10 << 20) + 1
        wide.targetSize = 5 << 20
        #expect(Self.refusal(wide.bytes, source: []) == .windowTooLarge(sourceSize: (10 << 20) + 1, limit: 10 << 20))
        wide.sourceSize = 10 << 20
        #expect(Self.refusal(wide.bytes, source: []) == .sourceSizeMismatch(declared: 10 << 20, actual: 0), "within the window")
        // Other limits, each checked: window, target, memory in all (source 10 + target 7 + streams 6 = 23).
        #expect(Self.refusal(Self.valid().bytes, limits: FileDiffLimits(windowFloor: 9, windowPerTargetByte: 1, maxTarget: 8, maxTotal: 64)) == .windowTooLarge(sourceSize: 10, limit: 9))
        #expect(Self.refusal(Self.valid().bytes, limits: FileDiffLimits(windowFloor: 16, windowPerTargetByte: 1, maxTarget: 6, maxTotal: 64)) == .targetTooLarge(targetSize: 7, limit: 6))
        #expect(Self.refusal(Self.valid().bytes, limits: FileDiffLimits(windowFloor: 16, windowPerTargetByte: 1, maxTarget: 8, maxTotal: 22)) == .memoryTooLarge(needed: 23, limit: 22))
    }

    @Test("a deflated stream that zlib refuses, ends early, makes more or fewer bytes than declared, or is followed by others")
    func corruptStreams() throws {
        var diff = Self.valid()
        diff.deflated = [.literals]
        let deflated = try #require(RawDeflate.compress(Array("abZ".utf8), level: 9))
        diff.encodedOverride[.literals] = [0xFF, 0xFF]
        #expect(Self.refusal(diff.bytes) == .corruptStream(stream: .literals, reason: "invalid block type"))
        diff.encodedOverride[.literals] = Array(deflated.dropLast())
        #expect(Self.refusal(diff.bytes) == .corruptStream(stream: .literals, reason: "it ends before its last block"))
        diff.encodedOverride[.literals] = []
        #expect(Self.refusal(diff.bytes) == .corruptStream(stream: .literals, reason: "it ends before its last block"))
        diff.encodedOverride[.literals] = deflated + [0]
        #expect(Self.refusal(diff.bytes) == .corruptStream(stream: .literals, reason: "1 bytes follow its end"))
        diff.encodedOverride = [:]
        diff.declaredSizes[.literals] = 2
        #expect(Self.refusal(diff.bytes) == .corruptStream(stream: .literals, reason: "it inflates past its declared 2 bytes"))
        diff.declaredSizes[.literals] = 4
        #expect(Self.refusal(diff.bytes) == .corruptStream(stream: .literals, reason: "it inflates to 3 bytes, not its declared 4"))
        diff.declaredSizes[.literals] = 0
        #expect(Self.refusal(diff.bytes) == .corruptStream(stream: .literals, reason: "it inflates past its declared 0 bytes"))
        // An empty stream, deflated, is the one-block empty deflate stream.
        var empty = Self.valid()
        empty.deflated = [.addresses]
        #expect(try FileDiff.apply(empty.bytes, to: Self.source) == Array("ab2345Z".utf8))
    }

    @Test("instructions that read past a stream, read a bad varint, or leave bytes unread")
    func streamReads() {
        var lengths = Self.valid()
        lengths.streams[.operations]!.append(0)
        #expect(Self.refusal(lengths.bytes) == .streamExhausted(stream: .literalLengths, instruction: 1))
        var copies = Self.valid()
        copies.streams[.operations]!.append(0)
        copies.streams[.literalLengths]!.append(0)
        #expect(Self.refusal(copies.bytes) == .streamExhausted(stream: .copyLengths, instruction: 1))
        var literals = Self.valid()
        literals.streams[.literalLengths] = [5]
        #expect(Self.refusal(literals.bytes) == .streamExhausted(stream: .literals, instruction: 0))
        var address = Self.valid()
        address.streams[.operations] = [FileDiffFormat.Operation.sourceExplicit.rawValue]
        #expect(Self.refusal(address.bytes) == .streamExhausted(stream: .addresses, instruction: 0))
        var cut = Self.valid()
        cut.streams[.copyLengths] = [0x84]
        #expect(Self.refusal(cut.bytes) == .streamExhausted(stream: .copyLengths, instruction: 0))
        var overlong = Self.valid()
        overlong.streams[.copyLengths] = [0x84, 0x00]
        #expect(Self.refusal(overlong.bytes) == .malformedStreamVarint(stream: .copyLengths, instruction: 0))
        var unused = Self.valid()
        unused.streams[.addresses] = [3]
        #expect(Self.refusal(unused.bytes) == .unusedStreamBytes(stream: .addresses, count: 1))
        var unusedLengths = Self.valid()
        unusedLengths.streams[.literalLengths]!.append(contentsOf: [1, 2])
        #expect(Self.refusal(unusedLengths.bytes) == .unusedStreamBytes(stream: .literalLengths, count: 2))
        var operation = Self.valid()
        operation.streams[.operations] = [4]
        #expect(Self.refusal(operation.bytes) == .unknownOperation(code: 4, instruction: 0))
    }

    @Test("copies outside the source, or before the start of the target")
    func copyRanges() {
        typealias Operation = FileDiffFormat.Operation
        var long = Self.valid()
        long.streams[.copyLengths] = [20]
        long.targetSize = 23
        #expect(Self.refusal(long.bytes) == .copyOutOfRange(instruction: 0, start: 2, length: 20, available: 10))
        var negative = Self.valid()
        negative.streams[.operations] = [Operation.sourceExplicit.rawValue]
        negative.streams[.addresses] = [UInt8(Varint.zigzag(-10)!)]
        #expect(Self.refusal(negative.bytes) == .copyOutOfRange(instruction: 0, start: -8, length: 4, available: 10))
        var far = Self.valid()
        far.streams[.operations] = [Operation.sourceExplicit.rawValue]
        far.streams[.addresses] = []
        Varint.append(Int.max, to: &far.streams[.addresses, default: []])
        #expect(Self.refusal(far.bytes) == .copyOutOfRange(instruction: 0, start: 2 - (1 << 62), length: 4, available: 10))
        var zero = Self.valid()
        zero.streams[.operations] = [Operation.target.rawValue]
        zero.streams[.addresses] = [0]
        #expect(Self.refusal(zero.bytes) == .copyOutOfRange(instruction: 0, start: 2, length: 4, available: 2))
        var before = Self.valid()
        before.streams[.operations] = [Operation.target.rawValue]
        before.streams[.addresses] = [3]
        #expect(Self.refusal(before.bytes) == .copyOutOfRange(instruction: 0, start: -1, length: 4, available: 2))
        var huge = Self.valid()
        huge.streams[.operations] = [Operation.target.rawValue]
        huge.streams[.addresses] = []
        Varint.append(Int.max, to: &huge.streams[.addresses, default: []])
        #expect(Self.refusal(huge.bytes) == .copyOutOfRange(instruction: 0, start: 2 - Int.max, length: 4, available: 2))
        // After a copy at offset -5 (rep0), a repeat reaches past the source's end.
        var past = CraftedDiff(sourceSize: 10, targetSize: 10)
        past.instruction(Operation.sourceExplicit.rawValue, copy: 3, address: Varint.zigzag(5)!)
        past.instruction(Operation.sourceRepeat0.rawValue, copy: 3)
        #expect(Self.refusal(past.bytes) == .copyOutOfRange(instruction: 1, start: 8, length: 3, available: 10))
    }

    @Test("output past its declared length is refused; so is output short of it")
    func targetLength() {
        var copy = Self.valid()
        copy.targetSize = 5
        #expect(Self.refusal(copy.bytes) == .targetLongerThanDeclared(declared: 5, instruction: 0))
        var literals = Self.valid()
        literals.targetSize = 1
        #expect(Self.refusal(literals.bytes) == .targetLongerThanDeclared(declared: 1, instruction: 0))
        var trailing = Self.valid()
        trailing.targetSize = 6
        #expect(Self.refusal(trailing.bytes) == .targetLongerThanDeclared(declared: 6, instruction: 1))
        var short = Self.valid()
        short.targetSize = 8
        #expect(Self.refusal(short.bytes) == .targetShorterThanDeclared(declared: 8, actual: 7))
        // Many copies of what is already written, each within bounds, together past the declared size.
        var repeats = CraftedDiff(sourceSize: 0, targetSize: 1000)
        repeats.instruction(FileDiffFormat.Operation.target.rawValue, literals: [7], copy: 600, address: 1)
        repeats.instruction(FileDiffFormat.Operation.target.rawValue, copy: 600, address: 1)
        #expect(Self.refusal(repeats.bytes, source: []) == .targetLongerThanDeclared(declared: 1000, instruction: 1))
    }

    @Test("every refusal says what and where in one line")
    func descriptions() {
        let errors: [FileDiffError] = [
            .badMagic, .unsupportedVersion(9), .truncated(field: "source size", offset: 6), .malformedVarint(field: "target size", offset: 7),
            .unknownStreamEncoding(stream: .addresses, encoding: 5), .streamBytesMismatch(declared: 10, actual: 12),
            .sourceSizeMismatch(declared: 10, actual: 11), .windowTooLarge(sourceSize: 1 << 30, limit: 8 << 20),
            .targetTooLarge(targetSize: 1 << 30, limit: 32 << 20), .memoryTooLarge(needed: 70 << 20, limit: 64 << 20),
            .corruptStream(stream: .literals, reason: "invalid block type"), .streamExhausted(stream: .copyLengths, instruction: 3),
            .malformedStreamVarint(stream: .literalLengths, instruction: 4), .unusedStreamBytes(stream: .addresses, count: 2),
            .unknownOperation(code: 7, instruction: 1), .copyOutOfRange(instruction: 2, start: -3, length: 4, available: 10),
            .targetLongerThanDeclared(declared: 5, instruction: 0), .targetShorterThanDeclared(declared: 8, actual: 7),
        ]
        for error in errors {
            #expect(!error.description.isEmpty && !error.description.contains("\n"), "\(error)")
        }
        #expect(FileDiffError.windowTooLarge(sourceSize: 1 << 30, limit: 8 << 20).description.contains("1073741824"))
        #expect(FileDiffError.copyOutOfRange(instruction: 2, start: -3, length: 4, available: 10).description.contains("-3"))
    }
}
