import SatchelPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file opened for writing by descriptor: the last layer before the disk, shared by the archive and gzip
/// writers. It reports errno precisely so that a full disk surfaces as one typed error.
package final class FileOutput {
    package let path: String
    package private(set) var descriptor: Int32

    /// Creates `path`, which must not exist yet (O_EXCL), with mode 0644.
    package init(creating path: String) throws(ArchiveError) {
        self.path = path
        // Read-write: the zip writer reads its directory back to correct the entry times.
        descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        if descriptor < 0 { throw .io(operation: "create", path: path, errno: errno) }
    }

    package func write(_ buffer: UnsafeRawBufferPointer) throws(ArchiveError) {
        if let code = POSIXIO.writeAll(buffer, to: descriptor) { throw .io(operation: "write", path: path, errno: code) }
    }

    package func write(_ bytes: [UInt8]) throws(ArchiveError) {
        if let code = POSIXIO.writeAll(bytes, to: descriptor) { throw .io(operation: "write", path: path, errno: code) }
    }

    /// Overwrites bytes already written, at `offset`.
    package func write(_ bytes: [UInt8], at offset: Int64) throws(ArchiveError) {
        if let code = bytes.withUnsafeBytes({ POSIXIO.writeAll($0, to: descriptor, at: offset) }) {
            throw .io(operation: "write", path: path, errno: code)
        }
    }

    /// Hands the data to the drive, ordered before what follows (Durability.flushData: fsync on Linux, F_BARRIERFSYNC
    /// on Apple platforms; the store's one F_FULLFSYNC before a switch makes it durable), and closes.
    package func close(sync: Bool) throws(ArchiveError) {
        guard descriptor >= 0 else { return }
        defer { descriptor = -1 }
        if sync, let code = Durability.flushData(descriptor) {
            _ = POSIXIO.close(descriptor)
            throw .io(operation: "fsync", path: path, errno: code)
        }
        if POSIXIO.close(descriptor) != 0 { throw .io(operation: "close", path: path, errno: errno) }
    }

    deinit {
        if descriptor >= 0 { _ = POSIXIO.close(descriptor) }
    }
}
