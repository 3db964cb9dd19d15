import Crypto
import SatchelCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The size and SHA-256 of a file on disk, read in 256 KiB chunks: the one implementation the packer, the
/// store's checksum check and `satchel check` share.
public enum FileDigest {
    /// A failed open or read, with its errno.
    public struct Failure: Error, Equatable, Sendable {
        public let operation: String
        public let path: String
        public let errno: Int32
    }

    public static func sha256(ofFile path: String) throws(Failure) -> (size: Int64, sha256: String) {
        var buffer = [UInt8](repeating: 0, count: 256 << 10)
        return try sha256(ofFile: path, buffer: &buffer)
    }

    /// The same with a caller-owned buffer, for loops over many files.
    public static func sha256(ofFile path: String, buffer: inout [UInt8]) throws(Failure) -> (size: Int64, sha256: String) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Failure(operation: "open", path: path, errno: errno) }
        defer { close(descriptor) }
        var hasher = SHA256()
        var total: Int64 = 0
        let failure: Int32? = buffer.withUnsafeMutableBytes { raw in
            while true {
                let count = read(descriptor, raw.baseAddress!, raw.count)
                if count < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                if count == 0 { return nil }
                hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: raw[..<count]))
                total += Int64(count)
            }
        }
        if let failure { throw Failure(operation: "read", path: path, errno: failure) }
        return (total, Digests.hex(hasher.finalize()))
    }
}
