/// An archive read entry by entry, in the order it holds them, each entry's data streamed: what a bundle reader
/// needs. The device reads zip with ``ZipReader``; the publishing side also reads tar.gz through libarchive.
public protocol ArchiveEntryStream: AnyObject {
    /// Moves to the next entry; nil at the end. Unread data of the previous entry is skipped.
    func nextEntry() throws -> ArchiveEntryInfo?
    /// Streams the current entry's data to `body` in order.
    /// - Returns: the number of bytes read.
    @discardableResult func readData(_ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Int64
    /// Reads the whole current entry into memory; for small metadata entries only.
    func readAll(maxBytes: Int) throws -> [UInt8]
}

/// Streams a zip's entries in central directory order with Satchel's own reader on zlib (``ZipDirectory``,
/// ``ZipEntryReader``): the device's way to read a bundle, with no other library.
///
/// The directory is read and judged first (strictly: see ``ZipDirectory``), so the limits on entries and sizes hold
/// before a byte of data is read; each entry then yields exactly its declared size and must match its CRC-32. One
/// descriptor, one inflater and one 256 KiB buffer serve every entry.
///
/// Not thread-safe: one task owns a reader.
public final class ZipReader: ArchiveEntryStream {
    public let path: String
    public let directory: ZipDirectory
    private let file: ZipFile
    private var inflater: Inflater?
    private var index = 0
    private var current: ZipEntryReader?
    private let buffer: UnsafeMutableRawBufferPointer

    /// - Throws: ``ZipFormatError`` for a directory that is refused, ``ArchiveError`` when the file cannot be read.
    public init(path: String, limits: ArchiveLimits = .default) throws {
        self.path = path
        file = try ZipFile(path: path)
        directory = try ZipDirectory.read(file, limits: limits)
        buffer = .allocate(byteCount: 256 << 10, alignment: 16)
    }

    deinit { buffer.deallocate() }

    public func nextEntry() throws -> ArchiveEntryInfo? {
        guard index < directory.entries.count else {
            current = nil
            return nil
        }
        let entry = directory.entries[index]
        index += 1
        if entry.method == .deflated, inflater == nil { inflater = try Inflater() }
        current = try ZipEntryReader(file: file, entry: entry, inflater: entry.method == .deflated ? inflater : nil)
        // The directory admits regular files only.
        return ArchiveEntryInfo(path: entry.name, kind: .regular, declaredSize: entry.size)
    }

    @discardableResult
    public func readData(_ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Int64 {
        guard let reader = current else { return 0 }
        var total: Int64 = 0
        while true {
            let count = try reader.read(into: buffer)
            if count == 0 { break }
            total += Int64(count)
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
        return total
    }

    public func readAll(maxBytes: Int) throws -> [UInt8] {
        guard let reader = current else { return [] }
        guard reader.entry.size <= Int64(maxBytes) else { throw ArchiveError.entryTooLarge(entry: reader.entry.name, limit: Int64(maxBytes)) }
        return try reader.readAll()
    }
}
