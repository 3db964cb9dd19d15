/// What a diff says of itself before any work: the sizes it was made for and its streams, read from its header
/// (`FileDiff.header(of:)`). Sizes are as declared; `FileDiffLimits.check` judges them.
public struct FileDiffHeader: Sendable, Equatable {
    /// One stream's descriptor.
    public struct Stream: Sendable, Equatable {
        public let kind: FileDiffStream
        public let encoding: FileDiffStreamEncoding
        /// Its size once inflated (stored: its size in the diff).
        public let decodedSize: Int
        /// Its size in the diff.
        public let encodedSize: Int
        /// Where its bytes start in the diff.
        public let offset: Int
    }

    public let version: UInt8
    /// The size of the file the diff applies to.
    public let sourceSize: Int
    /// The size of the file it makes.
    public let targetSize: Int
    /// The five streams, in `FileDiffStream` order.
    public let streams: [Stream]
    /// The header's own size: the first stream's bytes start here.
    public let headerSize: Int

    /// Every stream's decoded size together (saturating at Int.max).
    public var decodedStreamBytes: Int {
        streams.reduce(0) { total, stream in FileDiffHeader.saturatingAdd(total, stream.decodedSize) }
    }

    /// What `apply` holds at once: source, target and decoded streams (saturating at Int.max).
    public var memoryNeeded: Int {
        Self.saturatingAdd(Self.saturatingAdd(sourceSize, targetSize), decodedStreamBytes)
    }

    public func stream(_ kind: FileDiffStream) -> Stream { streams[Int(kind.rawValue)] }

    static func saturatingAdd(_ a: Int, _ b: Int) -> Int {
        let sum = a.addingReportingOverflow(b)
        return sum.overflow ? .max : sum.partialValue
    }

    /// Reads a header: magic, version, the two sizes, the five stream descriptors, and checks that the streams fill
    /// the rest of the diff exactly.
    static func parse(_ diff: UnsafeBufferPointer<UInt8>) throws(FileDiffError) -> FileDiffHeader {
        let magic = FileDiffFormat.magic
        for index in 0..<magic.count {
            guard index < diff.count else { throw .truncated(field: "magic", offset: diff.count) }
            guard diff[index] == magic[index] else { throw .badMagic }
        }
        var position = magic.count
        guard position < diff.count else { throw .truncated(field: "version", offset: diff.count) }
        let version = diff[position]
        guard version == FileDiffFormat.version else { throw .unsupportedVersion(version) }
        position += 1

        func varint(_ field: String) throws(FileDiffError) -> Int {
            guard let (value, next) = Varint.read(diff, at: position) else {
                // Ran out inside it (every byte left has its continuation bit), or malformed.
                var end = position
                while end < diff.count && diff[end] & 0x80 != 0 && end - position < 10 { end += 1 }
                if end == diff.count { throw .truncated(field: field, offset: diff.count) }
                throw .malformedVarint(field: field, offset: position)
            }
            position = next
            return value
        }

        let sourceSize = try varint("source size")
        let targetSize = try varint("target size")
        var descriptors: [(FileDiffStream, FileDiffStreamEncoding, Int, Int)] = []
        for kind in FileDiffStream.allCases {
            guard position < diff.count else { throw .truncated(field: "\(kind) encoding", offset: diff.count) }
            let code = diff[position]
            guard let encoding = FileDiffStreamEncoding(rawValue: code) else { throw .unknownStreamEncoding(stream: kind, encoding: code) }
            position += 1
            let decoded = try varint("\(kind) size")
            let encoded = encoding == .stored ? decoded : try varint("\(kind) encoded size")
            descriptors.append((kind, encoding, decoded, encoded))
        }
        let headerSize = position
        var offset = headerSize
        var streams: [Stream] = []
        for (kind, encoding, decoded, encoded) in descriptors {
            streams.append(Stream(kind: kind, encoding: encoding, decodedSize: decoded, encodedSize: encoded, offset: offset))
            offset = saturatingAdd(offset, encoded)
        }
        guard offset == diff.count else {
            throw .streamBytesMismatch(declared: offset == .max ? .max : offset - headerSize, actual: diff.count - headerSize)
        }
        return FileDiffHeader(version: version, sourceSize: sourceSize, targetSize: targetSize, streams: streams, headerSize: headerSize)
    }
}
