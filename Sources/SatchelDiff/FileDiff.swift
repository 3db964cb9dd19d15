/// A per-file binary diff: the bytes of a target file as copies from the file it replaces (the source), copies
/// from the target already written, and literals. The format is in docs/formats.md ("Diffs"); the encoder is
/// SatchelPublishing's `FileDiffEncoder`.
///
/// Applying one holds the source, the target and the decoded streams, bounded by `FileDiffLimits` and checked from
/// the header before anything is allocated. Every input either gives exactly the declared target or throws a
/// `FileDiffError`; none traps.
public enum FileDiff {
    /// Applies `diff` to `source`, returning the target bytes.
    public static func apply(_ diff: [UInt8], to source: [UInt8], limits: FileDiffLimits = .device) throws(FileDiffError) -> [UInt8] {
        let header = try header(of: diff)
        try limits.check(header)
        guard source.count == header.sourceSize else { throw .sourceSizeMismatch(declared: header.sourceSize, actual: source.count) }
        let streams = try decodeStreams(diff, header: header)
        var target = [UInt8](repeating: 0, count: header.targetSize)
        let failure: FileDiffError? = streams.bytes.withUnsafeBufferPointer { streamBytes -> FileDiffError? in
            source.withUnsafeBufferPointer { sourceBytes -> FileDiffError? in
                target.withUnsafeMutableBufferPointer { targetBytes -> FileDiffError? in
                    var machine = Machine(streams: streamBytes, ranges: streams.ranges, source: sourceBytes, target: targetBytes)
                    do throws(FileDiffError) {
                        try machine.run()
                        return nil
                    } catch {
                        return error
                    }
                }
            }
        }
        if let failure { throw failure }
        return target
    }

    /// What a diff says of itself before any work (declared sizes, its streams), for a caller that checks bounds
    /// first. Throws when the header cannot be read, or its streams do not fill the rest of the diff exactly.
    public static func header(of diff: [UInt8]) throws(FileDiffError) -> FileDiffHeader {
        let result: Result<FileDiffHeader, FileDiffError> = diff.withUnsafeBufferPointer { bytes -> Result<FileDiffHeader, FileDiffError> in
            do throws(FileDiffError) {
                return .success(try FileDiffHeader.parse(bytes))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Every stream decoded into one buffer, each at its range.
    private static func decodeStreams(_ diff: [UInt8], header: FileDiffHeader) throws(FileDiffError) -> (bytes: [UInt8], ranges: [Range<Int>]) {
        var ranges: [Range<Int>] = []
        var total = 0
        for stream in header.streams {
            // Within the memory limit, checked before; checked again for limits that allow everything.
            let end = total.addingReportingOverflow(stream.decodedSize)
            guard !end.overflow else { throw .memoryTooLarge(needed: .max, limit: .max) }
            ranges.append(total..<end.partialValue)
            total = end.partialValue
        }
        var bytes = [UInt8](repeating: 0, count: total)
        let failure: FileDiffError? = diff.withUnsafeBufferPointer { input -> FileDiffError? in
            bytes.withUnsafeMutableBufferPointer { output -> FileDiffError? in
                for (stream, range) in zip(header.streams, ranges) {
                    let encoded = UnsafeBufferPointer(rebasing: input[stream.offset..<(stream.offset + stream.encodedSize)])
                    let decoded = UnsafeMutableBufferPointer(rebasing: output[range])
                    switch stream.encoding {
                    case .stored:
                        if let base = encoded.baseAddress, let target = decoded.baseAddress, !encoded.isEmpty {
                            target.update(from: base, count: encoded.count)
                        }
                    case .deflate:
                        if let reason = RawInflate.inflate(encoded, into: decoded) {
                            return .corruptStream(stream: stream.kind, reason: reason)
                        }
                    }
                }
                return nil
            }
        }
        if let failure { throw failure }
        return (bytes, ranges)
    }
}

/// The instruction loop over decoded streams: reads each instruction, checks every length and address against what
/// is left, and writes the target.
private struct Machine {
    let streams: UnsafeBufferPointer<UInt8>
    let source: UnsafeBufferPointer<UInt8>
    let target: UnsafeMutableBufferPointer<UInt8>
    /// Each stream's next byte and end, in `streams`.
    var position: [Int]
    let end: [Int]
    var written = 0
    var instruction = 0
    var rep0 = 0
    var rep1 = 0

    init(streams: UnsafeBufferPointer<UInt8>, ranges: [Range<Int>], source: UnsafeBufferPointer<UInt8>, target: UnsafeMutableBufferPointer<UInt8>) {
        self.streams = streams
        self.source = source
        self.target = target
        position = ranges.map(\.lowerBound)
        end = ranges.map(\.upperBound)
    }

    @inline(__always)
    mutating func varint(_ stream: FileDiffStream) throws(FileDiffError) -> Int {
        let index = Int(stream.rawValue)
        let at = position[index]
        guard at < end[index] else { throw .streamExhausted(stream: stream, instruction: instruction) }
        let first = streams[at]
        if first < 0x80 {
            position[index] = at + 1
            return Int(first)
        }
        let limited = UnsafeBufferPointer(rebasing: streams[..<end[index]])
        guard let (value, next) = Varint.read(limited, at: at) else {
            var last = at
            while last < end[index] && streams[last] & 0x80 != 0 && last - at < 10 { last += 1 }
            if last == end[index] { throw .streamExhausted(stream: stream, instruction: instruction) }
            throw .malformedStreamVarint(stream: stream, instruction: instruction)
        }
        position[index] = next
        return value
    }

    mutating func run() throws(FileDiffError) {
        let operations = Int(FileDiffStream.operations.rawValue)
        let literals = Int(FileDiffStream.literals.rawValue)
        let sourceCount = source.count
        let targetCount = target.count
        while position[operations] < end[operations] {
            let code = streams[position[operations]]
            position[operations] += 1
            guard let operation = FileDiffFormat.Operation(rawValue: code) else {
                throw .unknownOperation(code: code, instruction: instruction)
            }
            let literalLength = try varint(.literalLengths)
            let copyLength = try varint(.copyLengths)

            // The literals.
            guard literalLength <= end[literals] - position[literals] else { throw .streamExhausted(stream: .literals, instruction: instruction) }
            guard literalLength <= targetCount - written else { throw .targetLongerThanDeclared(declared: targetCount, instruction: instruction) }
            copy(from: streams, at: position[literals], count: literalLength)
            position[literals] += literalLength

            // The copy.
            guard copyLength <= targetCount - written else { throw .targetLongerThanDeclared(declared: targetCount, instruction: instruction) }
            let t = written
            switch operation {
            case .sourceRepeat0, .sourceRepeat1, .sourceExplicit:
                var start: Int
                switch operation {
                case .sourceRepeat0:
                    start = t - rep0
                case .sourceRepeat1:
                    start = t - rep1
                    swap(&rep0, &rep1)
                default:
                    let delta = Varint.unzigzag(try varint(.addresses))
                    let sum = (t - rep0).addingReportingOverflow(delta)
                    start = sum.overflow ? (delta < 0 ? .min : .max) : sum.partialValue
                }
                guard start >= 0, start <= sourceCount, copyLength <= sourceCount - start else {
                    throw .copyOutOfRange(instruction: instruction, start: start, length: copyLength, available: sourceCount)
                }
                if operation == .sourceExplicit {
                    rep1 = rep0
                    rep0 = t - start
                }
                copy(from: source, at: start, count: copyLength)
            case .target:
                let distance = try varint(.addresses)
                guard distance >= 1, distance <= t else {
                    throw .copyOutOfRange(instruction: instruction, start: t - distance, length: copyLength, available: t)
                }
                copyBack(distance: distance, count: copyLength)
            }
            instruction += 1
        }
        // The literals no instruction took end the target.
        let rest = end[literals] - position[literals]
        guard rest <= targetCount - written else { throw .targetLongerThanDeclared(declared: targetCount, instruction: instruction) }
        copy(from: streams, at: position[literals], count: rest)
        position[literals] += rest
        for stream in [FileDiffStream.literalLengths, .copyLengths, .addresses] where position[Int(stream.rawValue)] != end[Int(stream.rawValue)] {
            throw .unusedStreamBytes(stream: stream, count: end[Int(stream.rawValue)] - position[Int(stream.rawValue)])
        }
        guard written == targetCount else { throw .targetShorterThanDeclared(declared: targetCount, actual: written) }
    }

    /// Appends `count` bytes of `buffer` from `start` (both checked by the caller).
    @inline(__always)
    mutating func copy(from buffer: UnsafeBufferPointer<UInt8>, at start: Int, count: Int) {
        guard count > 0, let from = buffer.baseAddress, let to = target.baseAddress else { return }
        (to + written).update(from: from + start, count: count)
        written += count
    }

    /// Appends `count` bytes starting `distance` back in the target; where they overlap what is being written, the
    /// bytes just written repeat (LZ77).
    @inline(__always)
    mutating func copyBack(distance: Int, count: Int) {
        guard count > 0, let base = target.baseAddress else { return }
        if distance >= count {
            (base + written).update(from: base + written - distance, count: count)
        } else {
            var from = written - distance
            for offset in 0..<count {
                base[written + offset] = base[from]
                from += 1
            }
        }
        written += count
    }
}
