internal import CZlib

/// Raw deflate (RFC 1951, no wrapper) of one whole buffer, for the file diffs' streams.
package enum RawDeflate {
    package static func compress(_ input: [UInt8], level: Int32) -> [UInt8]? {
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        defer {
            stream.deinitialize(count: 1)
            stream.deallocate()
        }
        // windowBits -15: raw deflate with a 32 KiB window; memLevel 9: the most memory for the best matches.
        guard deflateInit2_(stream, level, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY, satchel_zlib_version(), satchel_z_stream_size()) == Z_OK else {
            return nil
        }
        defer { deflateEnd(stream) }
        let bound = Int(deflateBound(stream, uLong(input.count)))
        var output = [UInt8](repeating: 0, count: bound)
        let status: Int32 = input.withUnsafeBufferPointer { inputBytes in
            output.withUnsafeMutableBufferPointer { outputBytes in
                stream.pointee.next_in = UnsafeMutablePointer(mutating: inputBytes.baseAddress)
                stream.pointee.avail_in = uInt(inputBytes.count)
                stream.pointee.next_out = outputBytes.baseAddress
                stream.pointee.avail_out = uInt(outputBytes.count)
                return deflate(stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { return nil }
        output.removeSubrange(Int(stream.pointee.total_out)...)
        return output
    }
}
