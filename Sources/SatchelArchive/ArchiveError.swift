#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why reading or writing an archive failed. Every case names the archive entry or file at fault, so a user
/// can act on the message alone.
public enum ArchiveError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The archive could not be opened or is not a zip or tar.gz.
    case cannotOpen(path: String, reason: String)
    /// The archive's data is damaged or truncated (bad CRC, bad deflate stream, short read).
    case corrupt(entry: String?, reason: String)
    /// libarchive refused to write an entry.
    case writeFailed(entry: String?, reason: String)
    /// A system call failed; `errno` is kept so callers can tell a full disk (ENOSPC) from other trouble.
    case io(operation: String, path: String, errno: Int32)
    /// An entry's name is not valid UTF-8.
    case invalidEntryName(bytes: [UInt8])
    case tooManyEntries(limit: Int)
    case entryTooLarge(entry: String, limit: Int64)
    case archiveTooLarge(limit: Int64)
    /// The data inflates far more than real web assets do: a decompression bomb.
    case compressionRatioExceeded(entry: String, limit: Int)
    case zlib(operation: String, code: Int32)

    public var isDiskFull: Bool {
        if case .io(_, _, let code) = self { return code == ENOSPC || code == EDQUOT }
        return false
    }

    public var description: String {
        switch self {
        case .cannotOpen(let path, let reason): "cannot open archive \(path): \(reason)"
        case .corrupt(let entry, let reason): "archive is corrupt\(Self.at(entry)): \(reason)"
        case .writeFailed(let entry, let reason): "cannot write archive entry\(Self.at(entry)): \(reason)"
        case .io(let operation, let path, let code): "\(operation) \(path) failed: \(String(cString: strerror(code)))"
        case .invalidEntryName(let bytes): "archive entry name is not valid UTF-8: \(bytes.prefix(64).map { String($0, radix: 16) }.joined(separator: " "))"
        case .tooManyEntries(let limit): "archive has more than \(limit) entries"
        case .entryTooLarge(let entry, let limit): "archive entry \(entry) is larger than \(limit) bytes"
        case .archiveTooLarge(let limit): "archive expands to more than \(limit) bytes"
        case .compressionRatioExceeded(let entry, let limit): "archive entry \(entry) expands more than \(limit)x (a decompression bomb?)"
        case .zlib(let operation, let code): "zlib \(operation) failed with code \(code)"
        }
    }

    private static func at(_ entry: String?) -> String { entry.map { " at \($0)" } ?? "" }
}
