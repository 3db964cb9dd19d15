internal import CZlib

/// The loop both directions of zlib share (``GzipWriter``, ``GunzipReader``): point the stream at `output`, run one
/// step, hand what it produced to `sink`, and go on while `more(status)` says so. A status other than OK,
/// STREAM_END or BUF_ERROR is an error naming `operation`.
enum ZlibPump {
    static func run(
        _ stream: UnsafeMutablePointer<z_stream>, output: inout [UInt8], operation: String,
        sink: (UnsafeRawBufferPointer) throws -> Void, step: (UnsafeMutablePointer<z_stream>) -> Int32, more: (Int32) throws -> Bool
    ) throws {
        try output.withUnsafeMutableBytes { out in
            while true {
                stream.pointee.next_out = out.baseAddress!.assumingMemoryBound(to: Bytef.self)
                stream.pointee.avail_out = uInt(out.count)
                let status = step(stream)
                guard status == Z_OK || status == Z_STREAM_END || status == Z_BUF_ERROR else { throw ArchiveError.zlib(operation: operation, code: status) }
                let produced = out.count - Int(stream.pointee.avail_out)
                if produced > 0 { try sink(UnsafeRawBufferPointer(rebasing: out[..<produced])) }
                guard try more(status) else { return }
            }
        }
    }
}
