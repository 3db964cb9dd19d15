internal import CZlib
import SatchelPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A zip opened for reading: one descriptor that the readers of its entries share (each reads at its own offsets
/// with `pread`, so they never disturb each other).
public final class ZipFile: Sendable {
    public let path: String
    let descriptor: Int32

    public init(path: String) throws(ArchiveError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .io(operation: "open", path: path, errno: errno) }
        self.path = path
        self.descriptor = descriptor
    }

    deinit { POSIXIO.close(descriptor) }
}

/// A raw-deflate stream and its 64 KiB input buffer, reset between entries: a bundle's thousands of small files
/// then cost no allocation each. One reader uses it at a time.
final class Inflater {
    let stream: UnsafeMutablePointer<z_stream>
    /// Compressed input; allocated by hand because zlib keeps pointing into it between calls.
    let input: UnsafeMutableRawBufferPointer

    init() throws(ArchiveError) {
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        // Negative window bits: raw deflate, as zip stores it (no zlib or gzip wrapper).
        let status = inflateInit2_(stream, -15, satchel_zlib_version(), satchel_z_stream_size())
        guard status == Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            throw .zlib(operation: "inflateInit2", code: status)
        }
        self.stream = stream
        input = .allocate(byteCount: 64 << 10, alignment: 16)
    }

    func reset() {
        inflateReset(stream)
        stream.pointee.next_in = nil
        stream.pointee.avail_in = 0
    }

    deinit {
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
        input.deallocate()
    }
}

/// Reads one zip entry's bytes in order, straight from the archive: a stored entry is read as it is, a deflated
/// one is inflated (raw deflate) as it is read. Memory stays bounded by one 64 KiB input buffer, zlib's 32 KiB
/// window and the caller's buffer, whatever the entry's size.
///
/// Exactly ``ZipEntry/size`` bytes come out: a stream that ends early, runs on, or does not end where the
/// directory says is ``ArchiveError/corrupt(entry:reason:)``, and so is a CRC-32 that does not match once the
/// whole entry was read from its start.
///
/// Not thread-safe: one reader per consumer.
public final class ZipEntryReader {
    public let entry: ZipEntry
    private let file: ZipFile
    private let inflater: Inflater?
    /// Compressed bytes read from the archive so far.
    private var consumed: Int64 = 0
    /// Decoded bytes produced so far.
    public private(set) var position: Int64 = 0
    private var crc: UInt = 0
    private var streamEnded = false
    private var checkedEnd = false

    /// Opens the archive at `path` for this entry alone.
    public convenience init(path: String, entry: ZipEntry) throws(ArchiveError) {
        try self.init(file: try ZipFile(path: path), entry: entry, inflater: entry.method == .deflated ? try Inflater() : nil)
    }

    /// Reads `entry` of an archive already open; a deflated entry needs an inflater, which is reset here.
    init(file: ZipFile, entry: ZipEntry, inflater: Inflater?) throws(ArchiveError) {
        self.file = file
        self.entry = entry
        if entry.method == .deflated {
            let shared: Inflater
            if let inflater { shared = inflater } else { shared = try Inflater() }
            shared.reset()
            self.inflater = shared
        } else {
            self.inflater = nil
        }
    }

    /// Whether every byte of the entry has been read.
    public var isAtEnd: Bool { position == entry.size }

    /// Fills as much of `buffer` as the entry has left (all of it unless at the end) and returns the count; 0 once
    /// the entry is exhausted, after its end was checked.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(ArchiveError) -> Int {
        let wanted = Int(min(Int64(buffer.count), entry.size - position))
        guard wanted > 0 else {
            try checkEnd()
            return 0
        }
        let target = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<wanted])
        let produced = try inflater == nil ? readStored(into: target) : inflate(into: target)
        crc = crc32(crc, target.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt(produced))
        position += Int64(produced)
        try checkEnd()
        return produced
    }

    /// Reads up to `count` more bytes (fewer only at the end; empty once the entry is exhausted).
    public func read(upTo count: Int) throws(ArchiveError) -> [UInt8] {
        let wanted = Int(min(Int64(max(0, count)), entry.size - position))
        guard wanted > 0 else {
            try checkEnd()
            return []
        }
        var output = [UInt8](repeating: 0, count: wanted)
        let result: Result<Int, ArchiveError> = output.withUnsafeMutableBytes { raw in
            do throws(ArchiveError) { return .success(try read(into: raw)) } catch { return .failure(error) }
        }
        let produced = try result.get()
        if produced < wanted { output.removeLast(wanted - produced) }
        return output
    }

    /// Reads and drops `count` bytes (a range that starts inside a deflated entry: deflate has no random access).
    public func skip(_ count: Int64) throws(ArchiveError) {
        var left = min(count, entry.size - position)
        while left > 0 {
            let chunk = try read(upTo: Int(min(left, 256 << 10)))
            guard !chunk.isEmpty else { throw corrupt("ends before its declared size") }
            left -= Int64(chunk.count)
        }
    }

    /// Reads the rest of the entry (small entries only).
    public func readAll() throws(ArchiveError) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(entry.size - position))
        repeat {
            bytes += try read(upTo: 256 << 10)
        } while !isAtEnd
        return bytes
    }

    private func readStored(into buffer: UnsafeMutableRawBufferPointer) throws(ArchiveError) -> Int {
        try readArchive(into: buffer, at: entry.dataOffset + position)
        consumed += Int64(buffer.count)
        return buffer.count
    }

    /// Fills `buffer` from the archive at `offset`; the archive ending first is corruption.
    private func readArchive(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(ArchiveError) {
        switch POSIXIO.readFully(file.descriptor, into: buffer, at: offset) {
        case .failure(let code): throw .io(operation: "read", path: file.path, errno: code.rawValue)
        case .success(let count) where count < buffer.count: throw corrupt("the archive ends inside the entry")
        case .success: return
        }
    }

    /// Gives zlib the next piece of compressed data; false when there is none left.
    private func refill(_ inflater: Inflater) throws(ArchiveError) -> Bool {
        let left = entry.compressedSize - consumed
        guard left > 0 else { return false }
        let count = Int(min(Int64(inflater.input.count), left))
        let piece = UnsafeMutableRawBufferPointer(rebasing: inflater.input[0..<count])
        try readArchive(into: piece, at: entry.dataOffset + consumed)
        consumed += Int64(count)
        inflater.stream.pointee.next_in = inflater.input.baseAddress!.assumingMemoryBound(to: Bytef.self)
        inflater.stream.pointee.avail_in = uInt(count)
        return true
    }

    private func inflate(into buffer: UnsafeMutableRawBufferPointer) throws(ArchiveError) -> Int {
        guard let inflater else { return 0 }
        let stream = inflater.stream
        stream.pointee.next_out = buffer.baseAddress!.assumingMemoryBound(to: Bytef.self)
        stream.pointee.avail_out = uInt(buffer.count)
        while stream.pointee.avail_out > 0 {
            if streamEnded { throw corrupt("the deflate stream ends before the declared size") }
            if stream.pointee.avail_in == 0, try !refill(inflater) {
                throw corrupt("the compressed data ends before the declared size")
            }
            let status = CZlib.inflate(stream, Z_NO_FLUSH)
            switch status {
            case Z_OK: continue
            case Z_STREAM_END: streamEnded = true
            case Z_BUF_ERROR where stream.pointee.avail_in == 0: continue
            default: throw corrupt("bad deflate data (zlib \(status))")
            }
        }
        return buffer.count - Int(stream.pointee.avail_out)
    }

    /// Once the last byte has been produced: a deflate stream must end exactly there and use up the compressed
    /// size exactly, and the CRC-32 must match.
    private func checkEnd() throws(ArchiveError) {
        guard isAtEnd, !checkedEnd else { return }
        checkedEnd = true
        if let inflater {
            let stream = inflater.stream
            var spare: UInt8 = 0
            while !streamEnded {
                if stream.pointee.avail_in == 0, try !refill(inflater) {
                    throw corrupt("the compressed data ends before the deflate stream does")
                }
                let status = withUnsafeMutablePointer(to: &spare) { pointer -> Int32 in
                    stream.pointee.next_out = pointer
                    stream.pointee.avail_out = 1
                    return CZlib.inflate(stream, Z_NO_FLUSH)
                }
                guard stream.pointee.avail_out == 1 else { throw corrupt("the deflate stream runs past the declared size") }
                switch status {
                case Z_STREAM_END: streamEnded = true
                case Z_OK: continue
                case Z_BUF_ERROR where stream.pointee.avail_in == 0: continue
                default: throw corrupt("bad deflate data (zlib \(status))")
                }
            }
            guard stream.pointee.avail_in == 0, consumed == entry.compressedSize else {
                throw corrupt("compressed data continues after the deflate stream ends")
            }
        }
        guard UInt32(truncatingIfNeeded: crc) == entry.crc32 else { throw corrupt("CRC-32 does not match") }
    }

    private func corrupt(_ reason: String) -> ArchiveError { .corrupt(entry: entry.name, reason: reason) }
}
