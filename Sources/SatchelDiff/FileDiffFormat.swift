/// The five streams of a file diff, in the order their descriptors and bytes appear.
public enum FileDiffStream: UInt8, CaseIterable, Sendable, CustomStringConvertible {
    /// One byte per instruction: its operation code.
    case operations = 0
    /// One varint per instruction: how many literals come before its copy.
    case literalLengths = 1
    /// One varint per instruction: how many bytes its copy writes.
    case copyLengths = 2
    /// One varint per instruction whose operation carries an address.
    case addresses = 3
    /// The bytes no copy makes, in target order.
    case literals = 4

    public var description: String {
        switch self {
        case .operations: return "operations"
        case .literalLengths: return "literal lengths"
        case .copyLengths: return "copy lengths"
        case .addresses: return "addresses"
        case .literals: return "literals"
        }
    }
}

/// How a stream's bytes are kept in the diff.
public enum FileDiffStreamEncoding: UInt8, Sendable {
    /// As they are.
    case stored = 0
    /// Raw deflate (RFC 1951: no zlib or gzip wrapper).
    case deflate = 1
}

/// The constants both sides of the format share (SatchelPublishing's encoder writes what this module reads).
package enum FileDiffFormat {
    package static let magic: [UInt8] = Array("SDIF".utf8)
    package static let version: UInt8 = 1

    /// Operation codes. Every instruction writes its literals, then its copy; `t` is the target position where the
    /// copy starts, `rep0` and `rep1` the two most recent distinct offsets `t - s` of copies from the source (both 0
    /// at the start).
    package enum Operation: UInt8 {
        /// Copy from the source at `s = t - rep0`.
        case sourceRepeat0 = 0
        /// Copy from the source at `s = t - rep1`; then rep0 and rep1 swap.
        case sourceRepeat1 = 1
        /// Copy from the source at `s = t - rep0 + zigzag(address)`; then rep1 = rep0, rep0 = t - s.
        case sourceExplicit = 2
        /// Copy from the target already written, `address` bytes back (1 ... t); may overlap what it writes.
        case target = 3
    }
}

/// LEB128 varints (7 bits a byte, least significant first, the high bit set on every byte but the last), at most 10
/// bytes, at most 2^63 - 1, in their shortest form (no final 0x00 byte after the first).
package enum Varint {
    /// The value and the offset after it, or nil when `bytes` at `offset` is not a valid varint or ends inside one.
    @inline(__always)
    package static func read(_ bytes: UnsafeBufferPointer<UInt8>, at offset: Int) -> (value: Int, next: Int)? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        var position = offset
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            if shift == 63 && byte > 1 { return nil }
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 {
                // The shortest form: a last byte of 0 is allowed only as the whole varint.
                if byte == 0 && position - offset > 1 { return nil }
                guard value <= UInt64(Int.max) else { return nil }
                return (Int(value), position)
            }
            shift += 7
            if shift > 63 { return nil }
        }
        return nil
    }

    package static func append(_ value: Int, to bytes: inout [UInt8]) {
        precondition(value >= 0, "varints are unsigned")
        var rest = UInt64(value)
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    package static func size(_ value: Int) -> Int {
        var rest = UInt64(value)
        var count = 1
        while rest >= 0x80 {
            rest >>= 7
            count += 1
        }
        return count
    }

    /// Zigzag: 0, -1, 1, -2, 2 ... as 0, 1, 2, 3, 4 ...; nil past ±2^62 (beyond any offset within the limits).
    package static func zigzag(_ value: Int) -> Int? {
        guard value > -(1 << 62) && value < (1 << 62) else { return nil }
        return value >= 0 ? value << 1 : ((-value) << 1) - 1
    }

    package static func unzigzag(_ value: Int) -> Int {
        (value & 1) == 0 ? value >> 1 : -(value >> 1) - 1
    }
}
