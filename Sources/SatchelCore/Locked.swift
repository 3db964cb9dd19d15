import Foundation

/// A value behind a lock, shared by the modules of this package (not part of its public API). NSLock rather
/// than `Mutex`, which needs macOS 15 / iOS 18.
package final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    package func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
