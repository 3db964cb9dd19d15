internal import CZlib

/// Raw deflate (RFC 1951) inflated into exactly the space its stream declared: one that zlib refuses, that ends
/// before its last block, that would make more or fewer bytes, or that is followed by other bytes is refused.
enum RawInflate {
    /// nil when `input` inflates to exactly `output.count` bytes and ends where `input` ends; else why not.
    static func inflate(_ input: UnsafeBufferPointer<UInt8>, into output: UnsafeMutableBufferPointer<UInt8>) -> String? {
        guard input.count <= Int(UInt32.max), output.count <= Int(UInt32.max) else { return "larger than zlib takes at once" }
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        defer {
            stream.deinitialize(count: 1)
            stream.deallocate()
        }
        guard inflateInit2_(stream, -15, satchel_zlib_version(), satchel_z_stream_size()) == Z_OK else { return "zlib could not start" }
        defer { inflateEnd(stream) }
        // One spare byte past the declared end: a stream that writes into it is longer than declared.
        var spare: UInt8 = 0
        return withUnsafeMutablePointer(to: &spare) { sparePointer -> String? in
            stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
            stream.pointee.avail_in = uInt(input.count)
            var inSpare = false
            if let base = output.baseAddress, output.count > 0 {
                stream.pointee.next_out = base
                stream.pointee.avail_out = uInt(output.count)
            } else {
                inSpare = true
                stream.pointee.next_out = sparePointer
                stream.pointee.avail_out = 1
            }
            while true {
                let status = CZlib.inflate(stream, Z_NO_FLUSH)
                if status == Z_STREAM_END { break }
                guard status == Z_OK || status == Z_BUF_ERROR else {
                    return stream.pointee.msg.map { String(cString: $0) } ?? "zlib error \(status)"
                }
                if stream.pointee.avail_out == 0 {
                    if inSpare { return "it inflates past its declared \(output.count) bytes" }
                    inSpare = true
                    stream.pointee.next_out = sparePointer
                    stream.pointee.avail_out = 1
                    continue
                }
                if stream.pointee.avail_in == 0 { return "it ends before its last block" }
                if status == Z_BUF_ERROR { return "zlib makes no progress" }
            }
            if inSpare {
                if stream.pointee.avail_out == 0 { return "it inflates past its declared \(output.count) bytes" }
            } else if stream.pointee.avail_out != 0 {
                let produced = output.count - Int(stream.pointee.avail_out)
                return "it inflates to \(produced) bytes, not its declared \(output.count)"
            }
            if stream.pointee.avail_in != 0 { return "\(stream.pointee.avail_in) bytes follow its end" }
            return nil
        }
    }
}
