import SatchelDiff

/// Writes SatchelDiff's per-file binary diffs (docs/formats.md, "Diffs") on the publishing side.
///
/// The target is parsed greedily, with one step of lazy matching, into instructions over one address space: the
/// source, then the target written so far. At each position the two repeat offsets are tried first (an edit that
/// replaces bytes keeps the offset, so after a changed content hash the next copy is usually a repeat and costs no
/// address); then a hash chain over every source position and every target position already passed. A match is
/// scored by its length less the bytes its address would take, and extended backwards over the literals before it.
/// Each stream is then deflated at level 9, or stored when that is smaller.
public enum FileDiffEncoder {
    /// The diff from `source` to `target`, or nil when the pair is past `FileDiffLimits.device` (the target above
    /// 32 MiB, the source above max(8 MiB, twice the target), or more than 64 MiB in all, streams included). Every
    /// diff returned has been applied by SatchelDiff's decoder and gave `target` back.
    public static func encode(source: [UInt8], target: [UInt8]) -> [UInt8]? {
        encode(source: source, target: target, tuning: .standard, limits: .device)
    }

    /// How hard the matcher looks. `standard` is what `encode(source:target:)` uses (chosen by tools/bench-diff).
    package struct Tuning: Sendable {
        /// The shortest copy with an address (from the source at a new offset, or from the target).
        package var minimumMatch = 8
        /// The shortest copy at a repeat offset.
        package var minimumRepeat = 3
        /// Candidates looked at per position.
        package var chainDepth = 128
        /// A match this long ends the search.
        package var niceLength = 512
        /// A repeat this long is taken without looking at the chain.
        package var goodRepeat = 24
        /// Look one position ahead before taking a match.
        package var lazy = true
        package var deflateLevel: Int32 = 9

        package static let standard = Tuning()
        package init() {}
    }

    package static func encode(source: [UInt8], target: [UInt8], tuning: Tuning, limits: FileDiffLimits) -> [UInt8]? {
        guard target.count <= limits.maxTarget, source.count <= limits.window(forTarget: target.count),
              source.count + target.count <= limits.maxTotal else { return nil }
        var streams = DiffStreams()
        let matcher = Matcher(source: source, target: target, tuning: tuning)
        matcher.parse(into: &streams)
        let diff = streams.assemble(sourceSize: source.count, targetSize: target.count, level: tuning.deflateLevel)
        // Within the limits with its streams counted, and checked by the device's own decoder (a few percent of the
        // encoding time): a wrong diff would cost every device a download and a fallback.
        guard let header = try? FileDiff.header(of: diff), (try? limits.check(header)) != nil else { return nil }
        guard (try? FileDiff.apply(diff, to: source, limits: limits)) == target else {
            assertionFailure("FileDiffEncoder wrote a diff that does not give its target back")
            return nil
        }
        return diff
    }
}

/// The five streams as the matcher fills them.
private struct DiffStreams {
    var operations: [UInt8] = []
    var literalLengths: [UInt8] = []
    var copyLengths: [UInt8] = []
    var addresses: [UInt8] = []
    var literals: [UInt8] = []

    func assemble(sourceSize: Int, targetSize: Int, level: Int32) -> [UInt8] {
        var diff = FileDiffFormat.magic
        diff.append(FileDiffFormat.version)
        Varint.append(sourceSize, to: &diff)
        Varint.append(targetSize, to: &diff)
        var payloads: [[UInt8]] = []
        for stream in [operations, literalLengths, copyLengths, addresses, literals] {
            let deflated = stream.isEmpty ? nil : RawDeflate.compress(stream, level: level)
            if let deflated, deflated.count < stream.count {
                diff.append(FileDiffStreamEncoding.deflate.rawValue)
                Varint.append(stream.count, to: &diff)
                Varint.append(deflated.count, to: &diff)
                payloads.append(deflated)
            } else {
                diff.append(FileDiffStreamEncoding.stored.rawValue)
                Varint.append(stream.count, to: &diff)
                payloads.append(stream)
            }
        }
        for payload in payloads { diff.append(contentsOf: payload) }
        return diff
    }
}

/// A match found at a position: where it reads from in the combined space (source then target), how long, and what
/// its operation will be.
private struct Match {
    var operation: FileDiffFormat.Operation = .sourceRepeat0
    var start = 0
    var length = 0
    var score = Int.min
}

/// The parser over one address space, `data`: the source, then the target. Its hash chains live in memory it owns
/// (unchecked pointers: this loop is the encoder's time).
private final class Matcher {
    let data: [UInt8]
    let sourceCount: Int
    let count: Int
    let tuning: Tuning
    let hashBits: Int
    let hashLength: Int
    /// The newest position of each hash, and each position's previous one with the same hash (-1: none).
    let head: UnsafeMutablePointer<Int32>
    let prev: UnsafeMutablePointer<Int32>
    var inserted = 0
    var rep0 = 0
    var rep1 = 0

    typealias Tuning = FileDiffEncoder.Tuning

    init(source: [UInt8], target: [UInt8], tuning: Tuning) {
        var data = source
        data.reserveCapacity(source.count + target.count + 8)
        data.append(contentsOf: target)
        count = data.count
        // Eight bytes of padding: 64-bit loads near the end stay inside the buffer.
        data.append(contentsOf: repeatElement(0, count: 8))
        self.data = data
        sourceCount = source.count
        self.tuning = tuning
        var bits = 12
        while bits < 22 && (1 << bits) < count { bits += 1 }
        hashBits = bits
        hashLength = max(3, min(tuning.minimumMatch, 8))
        head = .allocate(capacity: 1 << bits)
        head.initialize(repeating: -1, count: 1 << bits)
        prev = .allocate(capacity: max(count, 1))
        prev.initialize(repeating: -1, count: max(count, 1))
    }

    deinit {
        head.deallocate()
        prev.deallocate()
    }

    func parse(into streams: inout DiffStreams) {
        data.withUnsafeBufferPointer { buffer in
            let bytes = UnsafeRawPointer(buffer.baseAddress!)
            // Every source position goes in first (older than any target position in the chains).
            insert(upTo: sourceCount, limit: sourceCount, bytes)
            var position = sourceCount
            var anchor = sourceCount
            while position < count {
                insert(upTo: position, limit: count, bytes)
                var match = search(at: position, bytes)
                if match.length == 0 {
                    position += 1
                    continue
                }
                // One step of lazy matching: a better match one byte on makes this byte a literal.
                while tuning.lazy && match.length < tuning.niceLength && position + 1 < count {
                    insert(upTo: position + 1, limit: count, bytes)
                    let next = search(at: position + 1, bytes)
                    guard next.score > match.score else { break }
                    match = next
                    position += 1
                }
                // Backwards over the literals before it, while the bytes agree.
                let lowest = match.operation == .target ? sourceCount : 0
                while position > anchor && match.start > lowest && bytes.load(fromByteOffset: match.start - 1, as: UInt8.self) == bytes.load(fromByteOffset: position - 1, as: UInt8.self) {
                    match.start -= 1
                    match.length += 1
                    position -= 1
                }
                emit(match, literalsFrom: anchor, at: position, bytes, into: &streams)
                position += match.length
                anchor = position
            }
            if anchor < count {
                streams.literals.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[anchor..<count]))
            }
        }
    }

    @inline(__always)
    func hash(at position: Int, _ bytes: UnsafeRawPointer) -> Int {
        let word = bytes.loadUnaligned(fromByteOffset: position, as: UInt64.self).littleEndian << (64 - 8 * UInt64(hashLength))
        return Int(truncatingIfNeeded: (word &* 0x9E37_79B9_7F4A_7C15) >> UInt64(64 - hashBits))
    }

    /// Adds every position below `end` to the chains (those with `hashLength` bytes before `limit`).
    @inline(__always)
    func insert(upTo end: Int, limit: Int, _ bytes: UnsafeRawPointer) {
        while inserted < end {
            if inserted + hashLength <= limit {
                let slot = hash(at: inserted, bytes)
                prev[inserted] = head[slot]
                head[slot] = Int32(truncatingIfNeeded: inserted)
            }
            inserted += 1
        }
    }

    @inline(__always)
    func matchLength(_ a: Int, _ b: Int, limit: Int, _ bytes: UnsafeRawPointer) -> Int {
        var length = 0
        while length + 8 <= limit {
            let difference = bytes.loadUnaligned(fromByteOffset: a + length, as: UInt64.self) ^ bytes.loadUnaligned(fromByteOffset: b + length, as: UInt64.self)
            if difference != 0 { return length + Int(difference.littleEndian.trailingZeroBitCount >> 3) }
            length += 8
        }
        while length < limit && bytes.load(fromByteOffset: a + length, as: UInt8.self) == bytes.load(fromByteOffset: b + length, as: UInt8.self) {
            length += 1
        }
        return length
    }

    /// A copy from the source at offset `rep` when it is at least `minimumRepeat` long and scores better than `best`.
    @inline(__always)
    func repeatMatch(_ rep: Int, _ operation: FileDiffFormat.Operation, cost: Int, at position: Int, into best: inout Match, _ bytes: UnsafeRawPointer) {
        let start = position - sourceCount - rep
        guard start >= 0 && start < sourceCount else { return }
        let length = matchLength(start, position, limit: min(sourceCount - start, count - position), bytes)
        guard length >= tuning.minimumRepeat, length - cost > best.score else { return }
        best = Match(operation: operation, start: start, length: length, score: length - cost)
    }

    /// The best match at `position`: a repeat offset, else the best scored candidate of the chain.
    func search(at position: Int, _ bytes: UnsafeRawPointer) -> Match {
        let t = position - sourceCount
        let remaining = count - position
        var best = Match()
        repeatMatch(rep0, .sourceRepeat0, cost: 1, at: position, into: &best, bytes)
        if rep1 != rep0 { repeatMatch(rep1, .sourceRepeat1, cost: 2, at: position, into: &best, bytes) }
        if best.length >= tuning.goodRepeat || remaining < hashLength { return best.length > 0 ? best : Match() }
        var candidate = Int(head[hash(at: position, bytes)])
        var depth = tuning.chainDepth
        while candidate >= 0 && depth > 0 {
            depth -= 1
            let limit = candidate < sourceCount ? min(sourceCount - candidate, remaining) : remaining
            // Only a candidate longer than the best so far can win on length: check the four bytes up to the one that
            // decides first.
            let probe = max(best.length - 3, 0)
            if best.length < limit && bytes.loadUnaligned(fromByteOffset: candidate + probe, as: UInt32.self) == bytes.loadUnaligned(fromByteOffset: position + probe, as: UInt32.self) {
                // Compared up to the nice length only; the one that reaches it is measured in full and ends the search.
                var length = matchLength(candidate, position, limit: min(limit, tuning.niceLength), bytes)
                if length >= tuning.niceLength { length = matchLength(candidate, position, limit: limit, bytes) }
                if length >= tuning.minimumMatch {
                    var match = Match(start: candidate, length: length)
                    if candidate < sourceCount {
                        let offset = t - candidate
                        if offset == rep0 || offset == rep1 {
                            candidate = Int(prev[candidate])
                            continue   // a repeat, scored above
                        }
                        match.operation = .sourceExplicit
                        match.score = length - 1 - Varint.size(Varint.zigzag(candidate - (t - rep0)) ?? .max)
                    } else {
                        match.operation = .target
                        match.score = length - 1 - Varint.size(position - candidate)
                    }
                    if match.score > best.score {
                        best = match
                        if length >= tuning.niceLength { break }
                    }
                }
            }
            candidate = Int(prev[candidate])
        }
        return best.length > 0 ? best : Match()
    }

    func emit(_ match: Match, literalsFrom anchor: Int, at position: Int, _ bytes: UnsafeRawPointer, into streams: inout DiffStreams) {
        let t = position - sourceCount
        streams.operations.append(match.operation.rawValue)
        Varint.append(position - anchor, to: &streams.literalLengths)
        Varint.append(match.length, to: &streams.copyLengths)
        if position > anchor {
            streams.literals.append(contentsOf: UnsafeRawBufferPointer(start: bytes + anchor, count: position - anchor))
        }
        switch match.operation {
        case .sourceRepeat0:
            break
        case .sourceRepeat1:
            swap(&rep0, &rep1)
        case .sourceExplicit:
            Varint.append(Varint.zigzag(match.start - (t - rep0))!, to: &streams.addresses)
            rep1 = rep0
            rep0 = t - match.start
        case .target:
            Varint.append(position - match.start, to: &streams.addresses)
        }
    }
}
