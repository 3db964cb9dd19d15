internal import CZlib

/// Inflates a gzip stream (RFC 1952), one member, as the bytes come: the reverse of ``GzipWriter``, for what the
/// release side publishes compressed (objects, manifest patches). Trailing bytes after the member, or a stream that
/// ends early, are errors: a published file is whole or refused.
public final class GunzipReader {
    private let stream: UnsafeMutablePointer<z_stream>
    private var output: [UInt8]
    private let sink: (UnsafeRawBufferPointer) throws -> Void
    private var ended = false

    /// `sink` receives the decompressed bytes, in order.
    public init(sink: @escaping (UnsafeRawBufferPointer) throws -> Void) throws(ArchiveError) {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        output = [UInt8](repeating: 0, count: 256 << 10)
        self.sink = sink
        // windowBits 15 + 16: a gzip wrapper only.
        let status = inflateInit2_(stream, 15 + 16, satchel_zlib_version(), satchel_z_stream_size())
        guard status == Z_OK else {
            stream.deallocate()
            throw .zlib(operation: "inflateInit2", code: status)
        }
    }

    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard !bytes.isEmpty else { return }
        guard !ended else { throw ArchiveError.zlib(operation: "inflate (bytes after the end of the gzip member)", code: Z_DATA_ERROR) }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: bytes.baseAddress?.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(bytes.count)
        try ZlibPump.run(stream, output: &output, operation: "inflate", sink: sink, step: { inflate($0, Z_NO_FLUSH) }) { status in
            guard status == Z_STREAM_END else { return stream.pointee.avail_out == 0 || stream.pointee.avail_in > 0 }
            ended = true
            if stream.pointee.avail_in > 0 { throw ArchiveError.zlib(operation: "inflate (bytes after the end of the gzip member)", code: Z_DATA_ERROR) }
            return false
        }
    }

    /// Checks the member ended (its trailer read and its CRC and length right).
    public func finish() throws {
        guard ended else { throw ArchiveError.zlib(operation: "inflate (the gzip stream ends early)", code: Z_BUF_ERROR) }
    }

    deinit {
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Decompresses a whole gzip file held in memory.
    public static func decompress(_ bytes: [UInt8]) throws -> [UInt8] {
        var out: [UInt8] = []
        let reader = try GunzipReader { out.append(contentsOf: $0) }
        try bytes.withUnsafeBytes { try reader.write($0) }
        try reader.finish()
        return out
    }
}
