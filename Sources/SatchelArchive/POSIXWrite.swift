#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The write loop every layer that writes files shares (the archive writer, the store, the updater): `write(2)`
/// may write less than asked or be interrupted, so it loops until every byte is out. The bottom I/O module holds
/// it; each caller turns the errno into its own error, naming its own path.
package enum POSIXWrite {
    /// Writes all of `bytes` to `descriptor`.
    /// - Returns: nil when every byte was written, else the errno of the call that failed.
    package static func all(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let written = systemWrite(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            offset += written
        }
        return nil
    }

    package static func all(_ bytes: [UInt8], to descriptor: Int32) -> Int32? {
        bytes.withUnsafeBytes { all($0, to: descriptor) }
    }
}
