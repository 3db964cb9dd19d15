import SatchelPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive `flock` on the store's `lock` file, held for the whole of a mutating operation. It
/// serialises installers in different processes (and threads: each holder opens its own descriptor, and
/// flock locks conflict between descriptors). The kernel drops the lock when a holder dies, so a killed
/// installer never leaves the store locked.
final class StoreLock {
    private let descriptor: Int32

    /// Blocks until the lock is free.
    init(path: String) throws(StoreError) {
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .system("open", path) }
        if let code = FileLock.lock(descriptor, .exclusive) {
            close(descriptor)
            throw .system("flock", path, code)
        }
    }

    /// Takes the lock only if it is free right now.
    static func tryLock(path: String) -> StoreLock? {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return nil }
        guard FileLock.tryLock(descriptor, .exclusive) else {
            close(descriptor)
            return nil
        }
        return StoreLock(descriptor: descriptor)
    }

    private init(descriptor: Int32) { self.descriptor = descriptor }

    deinit {
        FileLock.unlock(descriptor)
        close(descriptor)
    }
}
