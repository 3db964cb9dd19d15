import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Test instrumentation: the bytes read from one file through ``POSIXIO/readFully(_:into:at:)`` while a test
/// measures it. Every read of a zip on the device side goes through that call (the end record, the directory, the
/// local headers, every entry's data, verification included), so a test can tell how much of a bundle opening a
/// store read, whichever thread read it.
///
/// Compiled into debug builds only (tests run them): a release build, which is what ships, has no counter and its
/// reads make no extra call. In a debug build a read costs one lock while nothing is measured, and one `fstat` while a
/// test measures (the file is known by its device and inode, so tests running in parallel, each with its own
/// files, do not count each other's reads).
package enum ReadMeter {
    #if DEBUG
    private final class Counts: @unchecked Sendable {
        let lock = NSLock()
        /// The files measured now: how many measurements watch each, and the bytes read from it so far.
        var files: [FileIdentity: (watchers: Int, bytes: Int64)] = [:]
    }

    private static let counts = Counts()
    #endif

    /// Counts `count` bytes read through `descriptor` (a no-op unless a debug build's test measures).
    @inline(__always)
    package static func note(_ descriptor: Int32, _ count: Int) {
        #if DEBUG
        guard count > 0 else { return }
        counts.lock.lock()
        let measuring = !counts.files.isEmpty
        counts.lock.unlock()
        guard measuring else { return }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return }
        let key = FileIdentity(info)
        counts.lock.lock()
        counts.files[key]?.bytes += Int64(count)
        counts.lock.unlock()
        #endif
    }

    #if DEBUG
    /// Runs `body` and returns the bytes read from the file at `path` meanwhile, by any thread.
    /// - Throws: ``Errno`` when the file cannot be looked up, or what `body` throws.
    package static func bytesRead(from path: String, during body: () throws -> Void) throws -> Int64 {
        var info = stat()
        guard stat(path, &info) == 0 else { throw Errno(errno) }
        let key = FileIdentity(info)
        counts.lock.lock()
        let start = counts.files[key]?.bytes ?? 0
        counts.files[key] = ((counts.files[key]?.watchers ?? 0) + 1, start)
        counts.lock.unlock()
        defer {
            counts.lock.lock()
            if let current = counts.files[key] { counts.files[key] = current.watchers > 1 ? (current.watchers - 1, current.bytes) : nil }
            counts.lock.unlock()
        }
        try body()
        counts.lock.lock()
        defer { counts.lock.unlock() }
        return (counts.files[key]?.bytes ?? start) - start
    }
    #endif
}
