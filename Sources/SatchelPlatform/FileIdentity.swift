#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file as the file system knows it: its device and inode, from a `stat` result. Darwin's `dev_t` is a signed 32-bit
/// integer and may be negative, where `UInt64(_:)` would trap: the bits are the identity, so they are kept as they are.
package struct FileIdentity: Hashable, Sendable {
    package let device: UInt64
    package let inode: UInt64

    package init(_ info: stat) {
        device = UInt64(truncatingIfNeeded: info.st_dev)
        inode = UInt64(truncatingIfNeeded: info.st_ino)
    }
}
