internal import CZlib

/// Deflates a byte stream into the gzip format (RFC 1952) with a fixed header: no name, no time stamp and the
/// OS byte set to 255 ("unknown"). zlib's default header carries the build platform's OS code, which would make
/// a tar.gz packed on macOS differ from one packed on Linux; fixing it keeps bundles reproducible everywhere.
public final class GzipWriter {
    private let stream: UnsafeMutablePointer<z_stream>
    private let header: UnsafeMutablePointer<gz_header>
    private var output: [UInt8]
    private let sink: (UnsafeRawBufferPointer) throws -> Void
    private var finished = false

    /// - Parameters:
    ///   - level: zlib compression level, 1 (fast) to 9 (small).
    ///   - sink: receives compressed bytes, in order.
    public init(level: Int32 = 6, sink: @escaping (UnsafeRawBufferPointer) throws -> Void) throws {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        header = .allocate(capacity: 1)
        header.initialize(to: gz_header())
        header.pointee.os = 255
        output = [UInt8](repeating: 0, count: 256 << 10)
        self.sink = sink
        // deflateInit2 is a macro; windowBits 15 + 16 asks for a gzip wrapper.
        let status = deflateInit2_(stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, satchel_zlib_version(), satchel_z_stream_size())
        guard status == Z_OK else {
            stream.deallocate()
            header.deallocate()
            throw ArchiveError.zlib(operation: "deflateInit2", code: status)
        }
        let headerStatus = deflateSetHeader(stream, header)
        guard headerStatus == Z_OK else {
            deflateEnd(stream)
            stream.deallocate()
            header.deallocate()
            throw ArchiveError.zlib(operation: "deflateSetHeader", code: headerStatus)
        }
    }

    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard !bytes.isEmpty else { return }
        try pump(input: bytes, flush: Z_NO_FLUSH)
    }

    /// Writes the gzip trailer. The writer cannot be used afterwards.
    public func finish() throws {
        guard !finished else { return }
        finished = true
        try pump(input: UnsafeRawBufferPointer(start: nil, count: 0), flush: Z_FINISH)
    }

    private func pump(input: UnsafeRawBufferPointer, flush: Int32) throws {
        stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(input.count)
        try ZlibPump.run(stream, output: &output, operation: "deflate", sink: sink, step: { deflate($0, flush) }) { status in
            if flush == Z_FINISH, status == Z_STREAM_END { return false }
            return stream.pointee.avail_out == 0 || flush == Z_FINISH
        }
    }

    deinit {
        deflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
        header.deinitialize(count: 1)
        header.deallocate()
    }
}
