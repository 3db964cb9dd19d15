internal import CZlib
import SatchelPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes a zip of stored (uncompressed) entries with Satchel's own code on zlib's CRC-32: what a device writes
/// (the delta it assembles from objects lives a few seconds on the disk that wrote it, so compressing it would only
/// cost time). The output is one that ``ZipDirectory`` accepts: UTF-8 names, regular files with mode 0644, one
/// fixed time (1980-01-01), sizes in the local headers (no data descriptors), ZIP64 records exactly where sizes,
/// offsets or the entry count need them. Deterministic: the bytes depend only on the entries given, in order.
///
/// Not thread-safe. A writer dropped without ``finish()`` leaves an incomplete file, which its caller removes.
public final class ZipWriter {
    public let path: String
    private let output: FileOutput
    /// Bytes not yet written to the file, which start at `bufferStart`.
    private var buffer: [UInt8] = []
    private var bufferStart: Int64 = 0
    private var records: [Record] = []
    private var open: Open?
    private var finished = false

    private struct Record {
        var name: [UInt8]
        var crc: UInt32
        var size: Int64
        var offset: Int64
    }

    /// The entry being written.
    private struct Open {
        var record: Record
        var written: Int64 = 0
        var crc: UInt = 0
    }

    /// Creates `path`, which must not exist.
    public init(creating path: String) throws(ArchiveError) {
        self.path = path
        output = try FileOutput(creating: path)
        buffer.reserveCapacity(Self.bufferSize + 64 << 10)
    }

    private static let bufferSize = 256 << 10
    private static let dosTime = ZipTime.dosDateTime(unixSeconds: 315_532_800)

    /// Adds an entry whose bytes are in memory.
    public func add(_ name: String, bytes: [UInt8]) throws(ArchiveError) {
        try beginEntry(name, size: Int64(bytes.count))
        let failure: ArchiveError? = bytes.withUnsafeBytes { chunk in
            do throws(ArchiveError) { try writeEntryData(chunk) } catch { return error }
            return nil
        }
        if let failure { throw failure }
        try endEntry()
    }

    /// Starts an entry of `size` bytes; its data follows through ``writeEntryData(_:)`` and exactly `size` bytes of it.
    public func beginEntry(_ name: String, size: Int64) throws(ArchiveError) {
        precondition(!finished, "the zip is finished")
        try endEntry()
        let nameBytes = Array(name.utf8)
        guard !nameBytes.isEmpty, nameBytes.count <= 0xFFFF, !nameBytes.contains(0) else {
            throw .writeFailed(entry: name, reason: "a zip entry name must be 1 to 65,535 bytes without NUL")
        }
        guard size >= 0 else { throw .writeFailed(entry: name, reason: "negative size") }
        let record = Record(name: nameBytes, crc: 0, size: size, offset: bufferStart + Int64(buffer.count))
        let zip64 = size >= 0xFFFF_FFFF
        var header: [UInt8] = []
        header.reserveCapacity(30 + nameBytes.count + 20)
        header.u32(0x0403_4B50)
        header.u16(zip64 ? 45 : 20)  // version needed
        header.u16(0x0800)  // UTF-8 name
        header.u16(0)  // stored
        header.u32(Self.dosTime)
        header.u32(0)  // CRC-32, set when the data has been written
        header.u32(zip64 ? 0xFFFF_FFFF : UInt32(size))
        header.u32(zip64 ? 0xFFFF_FFFF : UInt32(size))
        header.u16(UInt16(nameBytes.count))
        header.u16(zip64 ? 20 : 0)
        header += nameBytes
        if zip64 {
            header.u16(0x0001)
            header.u16(16)
            header.u64(UInt64(size))
            header.u64(UInt64(size))
        }
        try append(header)
        open = Open(record: record)
    }

    /// Appends data to the entry begun last.
    public func writeEntryData(_ chunk: UnsafeRawBufferPointer) throws(ArchiveError) {
        guard var entry = open else { preconditionFailure("no entry begun") }
        let name = String(decoding: entry.record.name, as: UTF8.self)
        guard entry.written + Int64(chunk.count) <= entry.record.size else {
            throw .writeFailed(entry: name, reason: "more data than the \(entry.record.size) bytes declared")
        }
        entry.crc = crc32(entry.crc, chunk.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt(chunk.count))
        entry.written += Int64(chunk.count)
        open = entry
        try append(chunk)
    }

    /// Closes the entry begun last: its data must have been exactly its declared size.
    private func endEntry() throws(ArchiveError) {
        guard var entry = open else { return }
        open = nil
        guard entry.written == entry.record.size else {
            throw .writeFailed(entry: String(decoding: entry.record.name, as: UTF8.self), reason: "\(entry.written) bytes written of \(entry.record.size) declared")
        }
        entry.record.crc = UInt32(truncatingIfNeeded: entry.crc)
        var crc: [UInt8] = []
        crc.u32(entry.record.crc)
        try patch(crc, at: entry.record.offset + 14)
        records.append(entry.record)
    }

    /// Writes the central directory and the end records, and closes the file (not flushed to the drive: the callers
    /// of a device-side zip consume it at once).
    public func finish() throws(ArchiveError) {
        precondition(!finished, "the zip is finished")
        try endEntry()
        finished = true
        let directoryOffset = bufferStart + Int64(buffer.count)
        for record in records {
            let zip64Size = record.size >= 0xFFFF_FFFF, zip64Offset = record.offset >= 0xFFFF_FFFF
            var extra: [UInt8] = []
            if zip64Size || zip64Offset {
                extra.u16(0x0001)
                extra.u16(UInt16((zip64Size ? 16 : 0) + (zip64Offset ? 8 : 0)))
                if zip64Size {
                    extra.u64(UInt64(record.size))
                    extra.u64(UInt64(record.size))
                }
                if zip64Offset { extra.u64(UInt64(record.offset)) }
            }
            var header: [UInt8] = []
            header.reserveCapacity(46 + record.name.count + extra.count)
            header.u32(0x0201_4B50)
            header.u16(3 << 8 | 45)  // made by Unix, spec 4.5
            header.u16(zip64Size || zip64Offset ? 45 : 20)
            header.u16(0x0800)
            header.u16(0)
            header.u32(Self.dosTime)
            header.u32(record.crc)
            header.u32(zip64Size ? 0xFFFF_FFFF : UInt32(record.size))
            header.u32(zip64Size ? 0xFFFF_FFFF : UInt32(record.size))
            header.u16(UInt16(record.name.count))
            header.u16(UInt16(extra.count))
            header.u16(0)  // comment
            header.u16(0)  // disk
            header.u16(0)  // internal attributes
            header.u32(UInt32(0o100644) << 16)  // a regular file, rw-r--r--
            header.u32(zip64Offset ? 0xFFFF_FFFF : UInt32(record.offset))
            header += record.name
            header += extra
            try append(header)
        }
        let directoryEnd = bufferStart + Int64(buffer.count)
        let directorySize = directoryEnd - directoryOffset
        let zip64 = records.count >= 0xFFFF || directorySize >= 0xFFFF_FFFF || directoryOffset >= 0xFFFF_FFFF
        var end: [UInt8] = []
        if zip64 {
            end.u32(0x0606_4B50)
            end.u64(44)  // what follows these first 12 bytes
            end.u16(3 << 8 | 45)
            end.u16(45)
            end.u32(0)
            end.u32(0)
            end.u64(UInt64(records.count))
            end.u64(UInt64(records.count))
            end.u64(UInt64(directorySize))
            end.u64(UInt64(directoryOffset))
            end.u32(0x0706_4B50)
            end.u32(0)
            end.u64(UInt64(directoryEnd))
            end.u32(1)
        }
        end.u32(0x0605_4B50)
        end.u16(0)
        end.u16(0)
        end.u16(zip64 ? 0xFFFF : UInt16(records.count))
        end.u16(zip64 ? 0xFFFF : UInt16(records.count))
        end.u32(zip64 ? 0xFFFF_FFFF : UInt32(directorySize))
        end.u32(zip64 ? 0xFFFF_FFFF : UInt32(directoryOffset))
        end.u16(0)
        try append(end)
        try flush()
        try output.close(sync: false)
    }

    // MARK: Buffered output

    private func append(_ bytes: [UInt8]) throws(ArchiveError) {
        let failure: ArchiveError? = bytes.withUnsafeBytes { raw in
            do throws(ArchiveError) { try append(raw) } catch { return error }
            return nil
        }
        if let failure { throw failure }
    }

    private func append(_ bytes: UnsafeRawBufferPointer) throws(ArchiveError) {
        if buffer.count + bytes.count > Self.bufferSize { try flush() }
        if bytes.count >= Self.bufferSize {
            // Large chunks go straight to the file.
            try output.write(bytes)
            bufferStart += Int64(bytes.count)
        } else {
            buffer.append(contentsOf: bytes)
        }
    }

    private func flush() throws(ArchiveError) {
        guard !buffer.isEmpty else { return }
        try output.write(buffer)
        bufferStart += Int64(buffer.count)
        buffer.removeAll(keepingCapacity: true)
    }

    /// Overwrites bytes already appended, in the buffer or on disk.
    private func patch(_ bytes: [UInt8], at offset: Int64) throws(ArchiveError) {
        if offset >= bufferStart {
            let at = Int(offset - bufferStart)
            buffer.replaceSubrange(at..<at + bytes.count, with: bytes)
        } else {
            try output.write(bytes, at: offset)
        }
    }
}

/// Little-endian appends.
private extension Array where Element == UInt8 {
    mutating func u16(_ value: UInt16) { append(UInt8(truncatingIfNeeded: value)); append(UInt8(truncatingIfNeeded: value >> 8)) }
    mutating func u32(_ value: UInt32) { u16(UInt16(truncatingIfNeeded: value)); u16(UInt16(truncatingIfNeeded: value >> 16)) }
    mutating func u64(_ value: UInt64) { u32(UInt32(truncatingIfNeeded: value)); u32(UInt32(truncatingIfNeeded: value >> 32)) }
}
