import Foundation

/// Runs `work` on a thread of its own and waits for it without holding a thread of Swift's cooperative pool.
///
/// For work that blocks: waiting for a lock another process holds, flushing to the drive, hashing a bundle, waiting
/// for a child process or a pipe. The cooperative pool has one thread per core; on a two-core phone or CI machine, two
/// such calls made straight from async code stop every other task (timers, requests, timeouts) until they return.
/// A thread per call costs about as much as one `open`: meant for calls that may block for milliseconds or more, not
/// for every read of a small file.
package func onOwnThread<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
    let result: Result<T, E> = await withCheckedContinuation { continuation in
        let thread = Thread {
            do throws(E) {
                continuation.resume(returning: .success(try work()))
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
        // The size of a main thread's stack: the work was written for the caller's thread, whatever its depth.
        thread.stackSize = 8 << 20
        thread.start()
    }
    return try result.get()
}
