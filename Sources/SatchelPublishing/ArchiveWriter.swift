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

/// The container formats a bundle can use.
public enum ArchiveFormat: String, Sendable, CaseIterable {
    case zip
    case tarGzip = "tar.gz"

    public var fileExtension: String { rawValue }
}

/// One regular file to write. Writers add nothing else (no owner names, no folders, no access times), which is
/// what makes two packs of the same input byte-identical.
public struct ArchiveEntryHeader: Sendable, Equatable {
    public var path: String
    public var size: Int64
    /// Seconds since 1970, UTC.
    public var modificationTime: Int64
    /// Deflate (zip) the data; false stores it as is. tar.gz compresses the whole stream either way.
    public var compress: Bool

    public init(path: String, size: Int64, modificationTime: Int64, compress: Bool) {
        self.path = path
        self.size = size
        self.modificationTime = modificationTime
        self.compress = compress
    }
}

/// Writes a zip or tar.gz archive entry by entry, streaming each file's bytes. Deterministic: the output
/// depends only on the entries given, in the order given.
///
/// Not thread-safe; one task owns a writer from ``init(creating:format:compressionLevel:)`` to ``finish()``.
/// A writer that is dropped without `finish()` leaves an incomplete file, which its caller removes.
public final class ArchiveWriter {
    public let path: String
    public let format: ArchiveFormat
    private let archive: OpaquePointer
    private let entry: OpaquePointer
    private let output: FileOutput
    private let gzip: GzipWriter?
    /// The error a write callback hit: libarchive only sees -1, this keeps the errno.
    private var sinkError: (any Error)?
    private var buffer: [UInt8]
    private var closed = false
    private var streamingEntry = ""
    /// Each entry's modification time, in order, for ``writeUTCTimes()``.
    private var entryTimes: [Int64] = []

    /// Creates `path` (which must not exist) and prepares to write.
    /// - Parameter compressionLevel: deflate level, 1 to 9.
    public init(creating path: String, format: ArchiveFormat, compressionLevel: Int = 6) throws {
        self.path = path
        self.format = format
        output = try FileOutput(creating: path)
        let level = Int32(max(1, min(9, compressionLevel)))
        if format == .tarGzip {
            let out = output
            gzip = try GzipWriter(level: level) { bytes throws in try out.write(bytes) }
        } else {
            gzip = nil
        }
        archive = archive_write_new()
        entry = archive_entry_new()
        buffer = [UInt8](repeating: 0, count: 256 << 10)
        try ArchiveLocale.withUTF8 { () throws in try openArchive(format: format, level: level) }
    }

    private func openArchive(format: ArchiveFormat, level: Int32) throws {
        switch format {
        case .zip:
            archive_write_set_format_zip(archive)
            archive_write_set_options(archive, "zip:compression-level=\(level),zip:hdrcharset=UTF-8")
        case .tarGzip:
            // pax_restricted is plain ustar unless a name needs more (long or non-ASCII), then a pax header.
            archive_write_set_format_pax_restricted(archive)
            archive_write_set_options(archive, "hdrcharset=UTF-8")
        }
        // Do not pad the last block: the archive is a regular file, not a tape.
        archive_write_set_bytes_in_last_block(archive, 1)
        let context = Unmanaged.passUnretained(self).toOpaque()
        let status = archive_write_open2(archive, context, nil, { _, context, bytes, count in
            let writer = Unmanaged<ArchiveWriter>.fromOpaque(context!).takeUnretainedValue()
            return writer.sinkWrite(UnsafeRawBufferPointer(start: bytes, count: count))
        }, nil, nil)
        guard status == SATCHEL_ARCHIVE_OK else {
            // Every stored property is set, so deinit runs and frees the archive and entry.
            try? output.close(sync: false)
            throw ArchiveError.cannotOpen(path: path, reason: Self.message(archive))
        }
    }

    /// Adds an entry whose bytes are in memory.
    public func add(_ header: ArchiveEntryHeader, bytes: [UInt8]) throws {
        precondition(Int64(bytes.count) == header.size, "entry size must match its bytes")
        try writeHeader(header)
        try bytes.withUnsafeBytes { chunk throws in try writeData(chunk, entry: header.path) }
    }

    /// Adds an entry whose bytes are read from `filePath` in chunks; `observe` sees every chunk before it is
    /// written (the packer hashes them, so a file that changed since it was listed is caught).
    /// - Throws: ``ArchiveError/io(operation:path:errno:)`` when the file cannot be read or its size is not
    ///   `header.size`.
    public func add(
        _ header: ArchiveEntryHeader, contentsOf filePath: String,
        observe: (UnsafeRawBufferPointer) -> Void = { _ in }
    ) throws {
        let descriptor = open(filePath, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw ArchiveError.io(operation: "open", path: filePath, errno: errno) }
        defer { _ = POSIXIO.close(descriptor) }
        try writeHeader(header)
        var total: Int64 = 0
        var failure: (any Error)?
        buffer.withUnsafeMutableBytes { raw in
            while true {
                let count = read(descriptor, raw.baseAddress!, raw.count)
                if count < 0 {
                    if errno == EINTR { continue }
                    failure = ArchiveError.io(operation: "read", path: filePath, errno: errno)
                    return
                }
                if count == 0 { return }
                total += Int64(count)
                if total > header.size { break }
                let chunk = UnsafeRawBufferPointer(rebasing: raw[..<count])
                observe(chunk)
                do { try writeData(chunk, entry: header.path) } catch {
                    failure = error
                    return
                }
            }
        }
        if let failure { throw failure }
        if total != header.size {
            throw ArchiveError.io(operation: "read (file changed size while packing)", path: filePath, errno: EIO)
        }
    }

    /// Starts an entry whose bytes arrive later through ``writeEntryData(_:)``, for copying from one archive to
    /// another without a temporary file. The caller writes exactly `header.size` bytes before the next entry.
    public func beginEntry(_ header: ArchiveEntryHeader) throws {
        try writeHeader(header)
        streamingEntry = header.path
    }

    public func writeEntryData(_ chunk: UnsafeRawBufferPointer) throws {
        try writeData(chunk, entry: streamingEntry)
    }

    /// Adds an entry that is not a regular file. Bundles never hold one; tests use this to build the hostile
    /// archives that readers must refuse.
    func add(special path: String, kind: ArchiveEntryKind, modificationTime: Int64 = 315_532_800) throws {
        entryTimes.append(modificationTime)
        try ArchiveLocale.withUTF8 { () throws in try writeSpecialHeader(path, kind: kind, modificationTime: modificationTime) }
    }

    private func writeSpecialHeader(_ path: String, kind: ArchiveEntryKind, modificationTime: Int64) throws {
        archive_entry_clear(entry)
        archive_entry_set_pathname_utf8(entry, path)
        archive_entry_set_mtime(entry, time_t(modificationTime), 0)
        archive_entry_set_perm(entry, 0o755)
        archive_entry_set_size(entry, 0)
        switch kind {
        case .directory: archive_entry_set_filetype(entry, SATCHEL_AE_IFDIR)
        case .symlink(let target):
            archive_entry_set_filetype(entry, SATCHEL_AE_IFLNK)
            archive_entry_set_symlink_utf8(entry, target)
        case .hardlink(let target):
            archive_entry_set_filetype(entry, SATCHEL_AE_IFREG)
            archive_entry_set_hardlink_utf8(entry, target)
        case .device:
            archive_entry_set_filetype(entry, SATCHEL_AE_IFCHR)
            archive_entry_set_rdev(entry, dev_t(0x0103))
        case .fifo: archive_entry_set_filetype(entry, SATCHEL_AE_IFIFO)
        case .socket: archive_entry_set_filetype(entry, SATCHEL_AE_IFSOCK)
        case .regular, .unknown: archive_entry_set_filetype(entry, SATCHEL_AE_IFREG)
        }
        let status = archive_write_header(archive, entry)
        if let sinkError { throw sinkError }
        guard status == SATCHEL_ARCHIVE_OK || status == SATCHEL_ARCHIVE_WARN else {
            throw ArchiveError.writeFailed(entry: path, reason: Self.message(archive))
        }
    }

    /// Completes the archive and makes it durable (fsync). Call once.
    public func finish() throws {
        guard !closed else { return }
        closed = true
        let status = ArchiveLocale.withUTF8 { archive_write_close(archive) }
        if let sinkError { throw sinkError }
        guard status == SATCHEL_ARCHIVE_OK else { throw ArchiveError.writeFailed(entry: nil, reason: Self.message(archive)) }
        try gzip?.finish()
        if format == .zip { try writeUTCTimes() }
        try output.close(sync: true)
    }

    /// libarchive fills zip's MS-DOS time fields with `localtime()`, so the same input would give other bytes in
    /// another time zone. The Formats say UTC, and a library must not set `TZ` for the whole process; so once the
    /// archive is complete, every entry's two copies of the field (local header and central directory) are
    /// overwritten with the UTC value computed here. The `UT` extra field already holds the Unix time.
    private func writeUTCTimes() throws {
        let descriptor = output.descriptor
        let path = self.path
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw ArchiveError.io(operation: "stat", path: path, errno: errno) }
        let headers: [(local: Int64, central: Int64)]
        do {
            headers = try ZipDirectory.headerOffsets(size: Int64(info.st_size)) { (offset, count) throws(ZipFormatError) in
                var bytes = [UInt8](repeating: 0, count: count)
                let got = bytes.withUnsafeMutableBytes { POSIXIO.pread(descriptor, $0.baseAddress!, count, offset) }
                guard got == count else { throw .io(operation: "read back", path: path, errno: got < 0 ? errno : EIO) }
                return bytes
            }
        } catch {
            throw ArchiveError.writeFailed(entry: nil, reason: "cannot read back the zip just written: \(error)")
        }
        guard headers.count == entryTimes.count else {
            throw ArchiveError.writeFailed(entry: nil, reason: "wrote \(entryTimes.count) entries but the directory lists \(headers.count)")
        }
        for (index, header) in headers.enumerated() {
            let value = ZipTime.dosDateTime(unixSeconds: entryTimes[index])
            let bytes = (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
            try output.write(bytes, at: header.local + 10)
            try output.write(bytes, at: header.central + 12)
        }
    }

    deinit {
        archive_write_free(archive)
        archive_entry_free(entry)
    }

    private func writeHeader(_ header: ArchiveEntryHeader) throws {
        entryTimes.append(header.modificationTime)
        try ArchiveLocale.withUTF8 { () throws in try writeRegularHeader(header) }
    }

    private func writeRegularHeader(_ header: ArchiveEntryHeader) throws {
        archive_entry_clear(entry)
        archive_entry_set_pathname_utf8(entry, header.path)
        archive_entry_set_filetype(entry, SATCHEL_AE_IFREG)
        archive_entry_set_perm(entry, 0o644)
        archive_entry_set_size(entry, header.size)
        archive_entry_set_mtime(entry, time_t(header.modificationTime), 0)
        archive_entry_set_uid(entry, 0)
        archive_entry_set_gid(entry, 0)
        if format == .zip {
            _ = header.compress ? archive_write_zip_set_compression_deflate(archive) : archive_write_zip_set_compression_store(archive)
        }
        let status = archive_write_header(archive, entry)
        if let sinkError { throw sinkError }
        guard status == SATCHEL_ARCHIVE_OK else { throw ArchiveError.writeFailed(entry: header.path, reason: Self.message(archive)) }
    }

    private func writeData(_ chunk: UnsafeRawBufferPointer, entry path: String) throws {
        var offset = 0
        while offset < chunk.count {
            let written = ArchiveLocale.withUTF8 { archive_write_data(archive, chunk.baseAddress! + offset, chunk.count - offset) }
            if let sinkError { throw sinkError }
            guard written > 0 else { throw ArchiveError.writeFailed(entry: path, reason: Self.message(archive)) }
            offset += written
        }
    }

    private func sinkWrite(_ bytes: UnsafeRawBufferPointer) -> Int {
        do {
            if let gzip { try gzip.write(bytes) } else { try output.write(bytes) }
            return bytes.count
        } catch {
            sinkError = error
            return -1
        }
    }

    static func message(_ archive: OpaquePointer) -> String {
        archive_error_string(archive).map { String(cString: $0) } ?? "unknown libarchive error"
    }
}
