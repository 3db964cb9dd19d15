import SatchelCore

/// Bounds on what reading an archive may cost, and what an entry is: shared by the device's zip reader
/// (``ZipReader``) and the publishing side's libarchive reader, so both refuse the same archives.

/// Bounds on what reading an archive may cost. Hostile archives (bombs, millions of tiny entries) are refused
/// as soon as they cross a bound, before the damage is done.
public struct ArchiveLimits: Sendable, Equatable {
    public var maxEntries: Int
    public var maxEntryBytes: Int64
    public var maxTotalBytes: Int64
    /// Uncompressed bytes per compressed byte read, checked once ``ratioGraceBytes`` have been expanded (a few
    /// small, very compressible files are normal; gigabytes of zeros are not).
    public var maxCompressionRatio: Int
    public var ratioGraceBytes: Int64

    public init(
        maxEntries: Int = BundleLimits.maxArchiveEntries, maxEntryBytes: Int64 = BundleLimits.maxFileBytes,
        maxTotalBytes: Int64 = BundleLimits.maxTotalBytes + Int64(Manifest.maxBytes) + (64 << 10),
        maxCompressionRatio: Int = 200, ratioGraceBytes: Int64 = 32 << 20
    ) {
        self.maxEntries = maxEntries
        self.maxEntryBytes = maxEntryBytes
        self.maxTotalBytes = maxTotalBytes
        self.maxCompressionRatio = maxCompressionRatio
        self.ratioGraceBytes = ratioGraceBytes
    }

    public static let `default` = ArchiveLimits()
}

/// What an entry is, as the archive claims it. Only regular files belong in a bundle; the rest are reported
/// so that the caller can refuse them by name.
public enum ArchiveEntryKind: Sendable, Equatable, CustomStringConvertible {
    case regular
    case directory
    case symlink(target: String)
    case hardlink(target: String)
    case device
    case fifo
    case socket
    case unknown(mode: UInt32)

    public var description: String {
        switch self {
        case .regular: "regular file"
        case .directory: "directory"
        case .symlink(let target): "symbolic link to \(target)"
        case .hardlink(let target): "hard link to \(target)"
        case .device: "device node"
        case .fifo: "FIFO"
        case .socket: "socket"
        case .unknown(let mode): "entry of unknown type (mode \(String(mode, radix: 8)))"
        }
    }
}

/// An entry header as read: the name exactly as stored (not yet checked as a safe path), its kind and the size
/// it declares, when the format declares one before the data.
public struct ArchiveEntryInfo: Sendable, Equatable {
    public var path: String
    public var kind: ArchiveEntryKind
    public var declaredSize: Int64?

    public init(path: String, kind: ArchiveEntryKind, declaredSize: Int64?) {
        self.path = path
        self.kind = kind
        self.declaredSize = declaredSize
    }
}

