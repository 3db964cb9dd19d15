#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A value behind a lock, shared by the modules of this package (not part of its public API).
///
/// The value and the lock live in one allocation (a `ManagedBuffer`: the value as its header, the lock as its one
/// element), because several are made per request on the miss path (the load, the cache's exchange): `NSLock`
/// was a second object with its own allocation and a class call per lock. `Mutex` would do the same but needs
/// macOS 15 / iOS 18. On Darwin the lock is an `os_unfair_lock`, elsewhere a `pthread_mutex_t`.
package struct Locked<Value>: @unchecked Sendable {
    #if canImport(Darwin)
    @usableFromInline typealias Primitive = os_unfair_lock
    #else
    @usableFromInline typealias Primitive = pthread_mutex_t
    #endif

    @usableFromInline
    final class Storage: ManagedBuffer<Value, Primitive> {
        // The header (the value) is destroyed by ManagedBuffer itself; the element (the lock) is this class's.
        deinit {
            #if !canImport(Darwin)
            _ = withUnsafeMutablePointerToElements { pthread_mutex_destroy($0) }
            #endif
        }
    }

    @usableFromInline let storage: Storage

    package init(_ value: Value) {
        // `create` is a class method: called on the subclass, it makes one (the documented way to subclass).
        storage = unsafeDowncast(Storage.create(minimumCapacity: 1) { _ in value }, to: Storage.self)
        storage.withUnsafeMutablePointerToElements { lock in
            #if canImport(Darwin)
            lock.initialize(to: os_unfair_lock())
            #else
            lock.initialize(to: pthread_mutex_t())
            let status = pthread_mutex_init(lock, nil)
            precondition(status == 0, "pthread_mutex_init failed: \(status)")
            #endif
        }
    }

    @inlinable
    package func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        try storage.withUnsafeMutablePointers { value, lock in
            #if canImport(Darwin)
            os_unfair_lock_lock(lock)
            defer { os_unfair_lock_unlock(lock) }
            #else
            pthread_mutex_lock(lock)
            defer { pthread_mutex_unlock(lock) }
            #endif
            return try body(&value.pointee)
        }
    }
}
