import Dispatch

/// Where a ``SchemeTaskDriver`` makes every call to a task. WebKit wants all of them on the thread it calls the
/// handler on: the main queue on Apple platforms, the thread running the GLib main context with WebKitGTK
/// (whose main loop does not drain Dispatch's main queue on Linux, hence this seam rather than a queue).
public protocol SchemeTaskExecutor: Sendable {
    /// Runs `work` later on the executor's thread. Calls made from one thread run in the order they were made.
    func execute(_ work: @escaping @Sendable () -> Void)
    /// Whether the caller is on the executor's thread now.
    var isCurrent: Bool { get }
}

/// A serial `DispatchQueue` as the executor (the main queue in an app on Apple platforms).
public struct DispatchQueueExecutor: SchemeTaskExecutor {
    public let queue: DispatchQueue
    private let key = DispatchSpecificKey<UInt8>()

    public init(_ queue: DispatchQueue) {
        self.queue = queue
        queue.setSpecific(key: key, value: 1)
    }

    public func execute(_ work: @escaping @Sendable () -> Void) { queue.async(execute: work) }

    public var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == 1 }
}
