internal import CArchive
import SatchelArchive
import SatchelBundle
import SatchelCore
import SatchelPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Streams a zip or tar.gz archive entry by entry, never holding more than one chunk of data, and enforces
/// ``ArchiveLimits`` as it goes.
///
/// Not thread-safe: one task owns a reader.
public final class ArchiveReader: ArchiveEntryStream {
    public let path: String
    public let limits: ArchiveLimits
    private let archive: OpaquePointer
    private var current: ArchiveEntryInfo?
    private var entryCount = 0
    private var totalBytes: Int64 = 0

    public init(path: String, limits: ArchiveLimits = .default) throws {
        self.path = path
        self.limits = limits
        archive = archive_read_new()
        let opened = ArchiveLocale.withUTF8 { [archive] in
            archive_read_support_format_zip(archive)
            archive_read_support_format_tar(archive)
            archive_read_support_filter_gzip(archive)
            // Names are UTF-8 in bundles, whatever the zip's UTF-8 flag or the tar's header type says.
            _ = archive_read_set_options(archive, "hdrcharset=UTF-8")
            return archive_read_open_filename(archive, path, 256 << 10)
        }
        if opened != SATCHEL_ARCHIVE_OK {
            // Every stored property is set, so deinit runs and frees the archive.
            throw ArchiveError.cannotOpen(path: path, reason: ArchiveWriter.message(archive))
        }
    }

    deinit { archive_read_free(archive) }

    /// Bytes read from the archive file so far.
    public var compressedBytesRead: Int64 { archive_filter_bytes(archive, -1) }

    /// Moves to the next entry; nil at the end. Unread data of the previous entry is skipped.
    public func nextEntry() throws -> ArchiveEntryInfo? {
        try ArchiveLocale.withUTF8 { () throws in try readNextEntry() }
    }

    private func readNextEntry() throws -> ArchiveEntryInfo? {
        var header: OpaquePointer?
        let status = archive_read_next_header(archive, &header)
        if status == SATCHEL_ARCHIVE_EOF {
            current = nil
            return nil
        }
        guard status == SATCHEL_ARCHIVE_OK || status == SATCHEL_ARCHIVE_WARN, let header else {
            throw ArchiveError.corrupt(entry: current.map { "after \($0.path)" }, reason: ArchiveWriter.message(archive))
        }
        entryCount += 1
        if entryCount > limits.maxEntries { throw ArchiveError.tooManyEntries(limit: limits.maxEntries) }
        let name = try Self.name(of: header)
        let info = ArchiveEntryInfo(
            path: name, kind: Self.kind(of: header),
            declaredSize: archive_entry_size_is_set(header) != 0 ? archive_entry_size(header) : nil)
        if let size = info.declaredSize, size > limits.maxEntryBytes {
            throw ArchiveError.entryTooLarge(entry: name, limit: limits.maxEntryBytes)
        }
        current = info
        return info
    }

    /// Streams the current entry's data to `body` in chunks of at most 256 KiB, checking the limits after each.
    /// - Returns: the number of bytes read.
    @discardableResult
    public func readData(_ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Int64 {
        guard let entry = current else { return 0 }
        var entryBytes: Int64 = 0
        while true {
            var block: UnsafeRawPointer?
            var size = 0
            var offset: la_int64_t = 0
            let status = ArchiveLocale.withUTF8 { archive_read_data_block(archive, &block, &size, &offset) }
            if status == SATCHEL_ARCHIVE_EOF { break }
            // A warning while reading data is a bad CRC or a short entry: damage, not a detail.
            guard status == SATCHEL_ARCHIVE_OK else {
                throw ArchiveError.corrupt(entry: entry.path, reason: ArchiveWriter.message(archive))
            }
            // Sparse tar entries report holes as offsets; bundles never contain them.
            guard offset == entryBytes else {
                throw ArchiveError.corrupt(entry: entry.path, reason: "sparse or out-of-order data")
            }
            guard size > 0, let block else { continue }
            entryBytes += Int64(size)
            totalBytes += Int64(size)
            if entryBytes > limits.maxEntryBytes { throw ArchiveError.entryTooLarge(entry: entry.path, limit: limits.maxEntryBytes) }
            if totalBytes > limits.maxTotalBytes { throw ArchiveError.archiveTooLarge(limit: limits.maxTotalBytes) }
            if totalBytes > limits.ratioGraceBytes,
                totalBytes / max(1, compressedBytesRead) > Int64(limits.maxCompressionRatio)
            {
                throw ArchiveError.compressionRatioExceeded(entry: entry.path, limit: limits.maxCompressionRatio)
            }
            try body(UnsafeRawBufferPointer(start: block, count: size))
        }
        if let declared = entry.declaredSize, declared != entryBytes {
            throw ArchiveError.corrupt(entry: entry.path, reason: "declares \(declared) bytes but holds \(entryBytes)")
        }
        return entryBytes
    }

    /// Reads the whole current entry into memory; for small metadata entries only.
    public func readAll(maxBytes: Int) throws -> [UInt8] {
        guard let entry = current else { return [] }
        if let size = entry.declaredSize, size > Int64(maxBytes) {
            throw ArchiveError.entryTooLarge(entry: entry.path, limit: Int64(maxBytes))
        }
        var bytes: [UInt8] = []
        try readData { chunk in
            if bytes.count + chunk.count > maxBytes { throw ArchiveError.entryTooLarge(entry: entry.path, limit: Int64(maxBytes)) }
            bytes.append(contentsOf: chunk)
        }
        return bytes
    }

    private static func name(of header: OpaquePointer) throws -> String {
        if let utf8 = archive_entry_pathname_utf8(header), let name = UTF8Text.decode(UnsafeRawBufferPointer(start: utf8, count: strlen(utf8))) {
            return name
        }
        guard let raw = archive_entry_pathname(header) else { throw ArchiveError.invalidEntryName(bytes: []) }
        let length = strlen(raw)
        let bytes = Array(UnsafeRawBufferPointer(start: raw, count: length))
        guard let name = UTF8Text.decode(bytes) else { throw ArchiveError.invalidEntryName(bytes: bytes) }
        return name
    }

    private static func kind(of header: OpaquePointer) -> ArchiveEntryKind {
        if let target = archive_entry_hardlink_utf8(header) ?? archive_entry_hardlink(header) {
            return .hardlink(target: String(cString: target))
        }
        let type = UInt32(archive_entry_filetype(header))
        switch type {
        case SATCHEL_AE_IFREG: return .regular
        case SATCHEL_AE_IFDIR: return .directory
        case SATCHEL_AE_IFLNK:
            let target = archive_entry_symlink_utf8(header) ?? archive_entry_symlink(header)
            return .symlink(target: target.map { String(cString: $0) } ?? "")
        case SATCHEL_AE_IFCHR, SATCHEL_AE_IFBLK: return .device
        case SATCHEL_AE_IFIFO: return .fifo
        case SATCHEL_AE_IFSOCK: return .socket
        default: return .unknown(mode: type)
        }
    }
}

extension BundleReader {
    /// Opens a bundle of either format the packer writes: zip with the device's reader, tar.gz through libarchive
    /// (for `satchel verify` and `inspect`; devices install zip only).
    public static func anyFormat(path: String, trustedKeys: [VerifyingKey] = [], limits: ArchiveLimits = .default) throws(BundleError) -> BundleReader {
        guard BundleFormat.isGzip(path) else { return try BundleReader(path: path, trustedKeys: trustedKeys, limits: limits) }
        let entries: ArchiveReader
        do { entries = try ArchiveReader(path: path, limits: limits) } catch { throw BundleError.reading(error) }
        return try BundleReader(path: path, entries: entries, trustedKeys: trustedKeys)
    }
}
