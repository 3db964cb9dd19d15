internal import CZlib

/// Inflates gzip as the bytes come, any number of members one after another (RFC 1952 allows it, and it is what
/// `cat a.gz b.gz` and nginx's `access_log … gzip` write), unlike SatchelArchive's reader of one published member.
final class Inflater {
    private let stream: UnsafeMutablePointer<z_stream>
    private var output = [UInt8](repeating: 0, count: 256 << 10)
    /// Between members: the last one ended and no byte of the next was seen.
    private(set) var atMemberEnd = true
    private var started = false

    init() throws(ReportInputError.Gzip) {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let status = inflateInit2_(stream, 15 + 16, satchel_zlib_version(), satchel_z_stream_size())
        guard status == Z_OK else {
            stream.deallocate()
            throw .zlib("inflateInit2 failed (\(status))")
        }
    }

    deinit {
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Hands every decompressed byte of `input` to `sink`, in order.
    func feed(_ input: UnsafeRawBufferPointer, sink: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard let base = input.baseAddress, !input.isEmpty else { return }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(input.count)
        try output.withUnsafeMutableBytes { out in
            while stream.pointee.avail_in > 0 {
                if atMemberEnd && started {
                    guard inflateReset(stream) == Z_OK else { throw ReportInputError.Gzip.zlib("inflateReset failed") }
                }
                atMemberEnd = false
                started = true
                while true {
                    stream.pointee.next_out = out.baseAddress!.assumingMemoryBound(to: Bytef.self)
                    stream.pointee.avail_out = uInt(out.count)
                    let status = inflate(stream, Z_NO_FLUSH)
                    let produced = out.count - Int(stream.pointee.avail_out)
                    if produced > 0 { try sink(UnsafeRawBufferPointer(rebasing: out[..<produced])) }
                    if status == Z_STREAM_END {
                        atMemberEnd = true
                        break
                    }
                    guard status == Z_OK || status == Z_BUF_ERROR else {
                        let message = stream.pointee.msg.map { String(cString: $0) } ?? "error \(status)"
                        throw ReportInputError.Gzip.zlib(message)
                    }
                    if stream.pointee.avail_in == 0 && stream.pointee.avail_out > 0 { return }
                }
            }
        }
    }
}
