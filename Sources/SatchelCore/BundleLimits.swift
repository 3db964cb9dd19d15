/// How big a package may be, checked from its file list before any work is done on it: `satchel pack` before it
/// hashes a file, a manifest when it is built or read (so `verify` and `install` refuse from the manifest, before a
/// byte is extracted), and the zip reader's own limits derive from these (docs/formats.md, "Limits").
public enum BundleLimits {
    /// Files in one package. See docs/formats.md, "Limits", for why this number.
    public static let maxFiles = 100_000
    /// Bytes of one file.
    public static let maxFileBytes: Int64 = 4 << 30
    /// Bytes of all of a package's files together.
    public static let maxTotalBytes: Int64 = 8 << 30
    /// Entries a bundle's zip may hold: the files, `satchel.json`, `satchel.sig` and, in a delta, `satchel-delta.json`.
    public static var maxArchiveEntries: Int { maxFiles + 3 }

    /// Checks a package's files (path and size each) against the limits; the first one past a limit is named.
    public static func check<Files: Collection>(_ files: Files) throws(BundleLimitError) where Files.Element == (path: String, size: Int64) {
        guard files.count <= maxFiles else { throw .tooManyFiles(count: files.count, limit: maxFiles) }
        var total: Int64 = 0
        for file in files {
            guard file.size <= maxFileBytes else { throw .fileTooLarge(path: file.path, size: file.size, limit: maxFileBytes) }
            total += file.size
        }
        guard total <= maxTotalBytes else { throw .tooManyBytes(total: total, limit: maxTotalBytes) }
    }
}

/// A package past one of ``BundleLimits``, named with the limit.
public enum BundleLimitError: Error, Equatable, Sendable, CustomStringConvertible {
    case tooManyFiles(count: Int, limit: Int)
    case fileTooLarge(path: String, size: Int64, limit: Int64)
    case tooManyBytes(total: Int64, limit: Int64)
    case manifestTooLarge(bytes: Int, limit: Int)

    public var description: String {
        switch self {
        case .tooManyFiles(let count, let limit): "the package has \(count) files, more than the limit of \(limit)"
        case .fileTooLarge(let path, let size, let limit): "\(path.debugDescription) is \(size) bytes, more than the limit of \(limit) for one file"
        case .tooManyBytes(let total, let limit): "the package's files hold \(total) bytes, more than the limit of \(limit)"
        case .manifestTooLarge(let bytes, let limit): "the manifest would be \(bytes) bytes, more than the limit of \(limit) (fewer files, or shorter paths)"
        }
    }
}
