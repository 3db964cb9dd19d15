// The file diff a device applies (SatchelDiff) and the encoder that writes it (SatchelPublishing). The input is a
// source and a diff: its first two bytes (little-endian) are the source's length, the source follows, and the rest is
// the diff. Whatever the bytes: no crash; a diff applied under small limits gives exactly its declared target, from
// a source of its declared size, within those limits, or throws; and the encoder's diff from the source to the rest
// (taken as a target) gives that target back.
import FuzzDriver
import SatchelDiff
import SatchelPublishing

@_cdecl("file_diff_main")
public func entry(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 { FuzzDriver.run(argc, argv, fuzz) }

/// Small limits: a hostile header's sizes are refused long before they could matter to the fuzzer's memory.
private let limits = FileDiffLimits(windowFloor: 64 << 10, windowPerTargetByte: 2, maxTarget: 64 << 10, maxTotal: 256 << 10)

public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard bytes.count >= 2 else { return 0 }
    let sourceLength = min(Int(bytes[0]) | Int(bytes[1]) << 8, bytes.count - 2)
    let source = Array(bytes[2..<(2 + sourceLength)])
    let rest = Array(bytes[(2 + sourceLength)...])

    // The rest as a diff.
    let applied: [UInt8]?
    do throws(FileDiffError) {
        applied = try FileDiff.apply(rest, to: source, limits: limits)
    } catch {
        applied = nil
        require(!error.description.isEmpty, "a refusal without a description")
    }
    if let applied {
        let header = (try? FileDiff.header(of: rest))!
        require(applied.count == header.targetSize, "\(applied.count) bytes made, \(header.targetSize) declared")
        require(source.count == header.sourceSize, "applied to a \(source.count)-byte source, \(header.sourceSize) declared")
        require(header.memoryNeeded <= limits.maxTotal, "applied past the memory limit")
    }

    // The rest as a target: the encoder's diff gives it back, the same bytes each time.
    let encoded = FileDiffEncoder.encode(source: source, target: rest)
    require(encoded != nil, "a \(source.count) -> \(rest.count) byte pair was not encoded")
    if let encoded {
        require((try? FileDiff.apply(encoded, to: source)) == rest, "the encoder's diff does not give its target back")
        require(FileDiffEncoder.encode(source: source, target: rest) == encoded, "the encoder is not deterministic")
    }
    return 0
}
