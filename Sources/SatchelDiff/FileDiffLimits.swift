/// What a device lets one diff take, checked from the header before any work.
///
/// - the source (the window copies read from) at most `max(windowFloor, windowPerTargetByte × targetSize)`;
/// - the target at most `maxTarget`;
/// - source + target + every stream's decoded size at most `maxTotal` (what `apply` holds at once, the diff's own
///   bytes aside).
public struct FileDiffLimits: Sendable, Equatable {
    public var windowFloor: Int
    public var windowPerTargetByte: Int
    public var maxTarget: Int
    public var maxTotal: Int

    public init(windowFloor: Int, windowPerTargetByte: Int, maxTarget: Int, maxTotal: Int) {
        self.windowFloor = windowFloor
        self.windowPerTargetByte = windowPerTargetByte
        self.maxTarget = maxTarget
        self.maxTotal = maxTotal
    }

    /// A phone's: a window of max(8 MiB, twice the target), a 32 MiB target, 64 MiB in all.
    public static let device = FileDiffLimits(windowFloor: 8 << 20, windowPerTargetByte: 2, maxTarget: 32 << 20, maxTotal: 64 << 20)

    /// The largest source a diff to a `targetSize`-byte target may read from.
    public func window(forTarget targetSize: Int) -> Int {
        let scaled = targetSize.multipliedReportingOverflow(by: windowPerTargetByte)
        return max(windowFloor, scaled.overflow ? .max : scaled.partialValue)
    }

    /// Throws the first limit `header` is past: the target, the window, then memory in all.
    public func check(_ header: FileDiffHeader) throws(FileDiffError) {
        guard header.targetSize <= maxTarget else { throw .targetTooLarge(targetSize: header.targetSize, limit: maxTarget) }
        let window = window(forTarget: header.targetSize)
        guard header.sourceSize <= window else { throw .windowTooLarge(sourceSize: header.sourceSize, limit: window) }
        guard header.memoryNeeded <= maxTotal else { throw .memoryTooLarge(needed: header.memoryNeeded, limit: maxTotal) }
    }
}
