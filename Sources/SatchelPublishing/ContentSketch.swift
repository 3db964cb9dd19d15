/// A small summary of a file's content that estimates how much of it another file shares, for pairing a changed file
/// with a predecessor no name rule finds (a bundler renumbered the chunk: `132.<hash>.js` became `5114.<hash>.js`).
///
/// Content-defined sampling: a rolling hash over the last 64 bytes (gear hash: each byte shifts the sum one bit and
/// adds a random word) marks the positions where its low 5 bits are zero (about one in 32, chosen by the last few
/// bytes), each mark's value covering the 64 bytes before it; the sketch keeps the 256 smallest values (bottom-k
/// MinHash). Marks depend only on nearby bytes, so an insertion or a renamed hash elsewhere leaves them where they
/// were; comparing the two smallest-256 lists estimates the share of marks two files have in common.
struct ContentSketch: Equatable, Sendable {
    static let size = 256
    /// Sorted, distinct, at most ``size``.
    let marks: [UInt64]

    init(_ bytes: [UInt8]) {
        var hash: UInt64 = 0
        var all: [UInt64] = []
        all.reserveCapacity(bytes.count / 32 + 1)
        for byte in bytes {
            hash = (hash << 1) &+ Self.gear[Int(byte)]
            if hash & 0x1F == 0 { all.append(Self.mix(hash)) }
        }
        all.sort()
        var marks: [UInt64] = []
        for mark in all where marks.last != mark {
            marks.append(mark)
            if marks.count == Self.size { break }
        }
        self.marks = marks
    }

    /// The estimated share of marks the two contents have in common (0 to 1): of the smallest marks of both
    /// together, how many each has.
    func similarity(to other: ContentSketch) -> Double {
        guard !marks.isEmpty, !other.marks.isEmpty else { return 0 }
        var i = 0, j = 0, seen = 0, shared = 0
        while seen < Self.size, i < marks.count || j < other.marks.count {
            if j == other.marks.count || (i < marks.count && marks[i] < other.marks[j]) {
                i += 1
            } else if i == marks.count || other.marks[j] < marks[i] {
                j += 1
            } else {
                shared += 1
                i += 1
                j += 1
            }
            seen += 1
        }
        return Double(shared) / Double(seen)
    }

    private static func mix(_ value: UInt64) -> UInt64 {
        var x = value
        x = (x ^ (x >> 30)) &* 0xBF58_476D_1CE4_E5B9
        x = (x ^ (x >> 27)) &* 0x94D0_49BB_1331_11EB
        return x ^ (x >> 31)
    }

    /// 256 fixed random words (SplitMix64 from a constant seed): the same sketch on every machine and run.
    private static let gear: [UInt64] = {
        var state: UInt64 = 0x5A7C_4E11_D1FF_0001
        return (0..<256).map { _ in
            state &+= 0x9E37_79B9_7F4A_7C15
            return mix(state)
        }
    }()
}
