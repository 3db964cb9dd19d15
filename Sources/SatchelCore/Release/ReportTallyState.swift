import Crypto
import Foundation

/// A ``ReportTally`` kept between runs (`satchel rollout status|advance --state`): docs/formats.md, "Rollout report
/// state". One file, the release team's (never a device's):
///
///     satchel-rollout-state 1\n
///     <one line of JSON: {"inputs":[…],"tally":{"records","skipped","earliest"?,"latest"?,"reasons":[…],"versions":[{"id","version","devices"}]}}>\n
///     <per version, in the header's order, `devices` facts of 28 bytes: token, offered, active, confirmed, failed, reason (little-endian u64, then u32s)>
///     <the SHA-256 of every byte before it>
///
/// The facts are binary because there is one per device and version: a million devices make 28 MB, not the hundred
/// a JSON spelling would.
public enum ReportTallyState {
    public static let magic = Array("satchel-rollout-state 1\n".utf8)
    public static let factBytes = 28

    /// Where a run stopped in one input, and how to know the input again (docs/formats.md).
    public struct Input: Codable, Hashable, Sendable {
        /// The path it was read at last (informational: inputs are recognised by content, so a rotated file renamed
        /// or compressed is still the same input).
        public var path: String
        /// Read through gzip (the path ends in `.gz`).
        public var gzip: Bool
        /// Bytes of content (decompressed, for gzip) read and counted.
        public var offset: Int64
        /// SHA-256 (hex) of the content's first `headBytes` bytes: min(offset, 4096).
        public var head: String
        public var headBytes: Int
        /// SHA-256 (hex) of the `tailBytes` bytes of content just before `offset`: min(offset, 4096).
        public var tail: String
        public var tailBytes: Int
        /// For gzip: the compressed file's size and the SHA-256 of its last min(size, 4096) bytes, so a rotated file
        /// that has not changed is passed over without decompressing it.
        public var fileSize: Int64?
        public var fileTail: String?

        public init(path: String, gzip: Bool, offset: Int64, head: String, headBytes: Int, tail: String, tailBytes: Int, fileSize: Int64? = nil, fileTail: String? = nil) {
            self.path = path
            self.gzip = gzip
            self.offset = offset
            self.head = head
            self.headBytes = headBytes
            self.tail = tail
            self.tailBytes = tailBytes
            self.fileSize = fileSize
            self.fileTail = fileTail
        }
    }

    struct Version: Codable {
        var id: String
        var version: String
        var devices: Int
    }

    struct Counts: Codable {
        var records: Int
        var skipped: Int
        var earliest: Timestamp?
        var latest: Timestamp?
        var reasons: [String]
        var versions: [Version]
    }

    struct Header: Codable {
        var inputs: [Input]
        var tally: Counts
    }

    public static let fingerprintBytes = 4096

    public static func fingerprint<Bytes: DataProtocol>(_ bytes: Bytes) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }

    // MARK: Writing

    /// The whole file, handed to `write` in pieces (a few MiB at most each).
    public static func write(_ tally: ReportTally, inputs: [Input], uncommitted: (records: Int, skipped: Int) = (0, 0), to write: (UnsafeRawBufferPointer) throws -> Void) throws {
        var hasher = SHA256()
        var buffer: [UInt8] = []
        buffer.reserveCapacity(1 << 20)
        func flush() throws {
            buffer.withUnsafeBytes { hasher.update(bufferPointer: $0) }
            try buffer.withUnsafeBytes { try write($0) }
            buffer.removeAll(keepingCapacity: true)
        }
        let counts = Counts(
            records: tally.records - uncommitted.records, skipped: tally.skipped - uncommitted.skipped, earliest: tally.earliest, latest: tally.latest,
            reasons: tally.reasons, versions: zip(tally.versions, tally.tables).map { Version(id: $0.id.value, version: $0.version.description, devices: $1.count) })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        buffer += magic
        buffer += Array(try encoder.encode(Header(inputs: inputs, tally: counts)))
        buffer.append(0x0A)
        func append<T: FixedWidthInteger>(_ value: T) {
            withUnsafeBytes(of: value.littleEndian) { buffer.append(contentsOf: $0) }
        }
        for table in tally.tables {
            try table.forEach { token, facts in
                append(token)
                append(facts.offered)
                append(facts.active)
                append(facts.confirmed)
                append(facts.failed)
                append(facts.reason)
                if buffer.count >= 1 << 20 { try flush() }
            }
        }
        try flush()
        let digest = Array(hasher.finalize())
        try digest.withUnsafeBytes { try write($0) }
    }

    // MARK: Reading

    /// Reads a state file from `read(n)` (at most n bytes; none at the end), checking its digest before anything
    /// counts.
    public static func read(from read: (Int) throws -> [UInt8]) throws -> (tally: ReportTally, inputs: [Input]) {
        var hasher = SHA256()
        // The last 32 bytes are the digest: hold them back until the end.
        var held: [UInt8] = []
        var pending: [UInt8] = []
        var position = 0
        func more() throws -> Bool {
            let chunk = try read(1 << 20)
            guard !chunk.isEmpty else { return false }
            held += chunk
            if held.count > 32 {
                let body = held.count - 32
                if position > 0 {
                    pending.removeFirst(position)
                    position = 0
                }
                pending += held[..<body]
                held.removeFirst(body)
            }
            return true
        }
        func take(_ count: Int) throws -> ArraySlice<UInt8> {
            while pending.count - position < count { guard try more() else { throw ReportStateError.malformed("it ends early") } }
            let piece = pending[position..<(position + count)]
            position += count
            piece.withUnsafeBytes { hasher.update(bufferPointer: $0) }
            return piece
        }
        guard Array(try take(magic.count)) == magic else { throw ReportStateError.malformed("it does not begin with \"satchel-rollout-state 1\"") }
        var headerBytes: [UInt8] = []
        while true {
            if let newline = pending[position...].firstIndex(of: 0x0A) {
                headerBytes = Array(try take(newline - position + 1).dropLast())
                break
            }
            guard pending.count - position < 64 << 20, try more() else { throw ReportStateError.malformed("its header line does not end") }
        }
        let header: Header
        do { header = try JSONDecoder().decode(Header.self, from: Data(headerBytes)) } catch { throw ReportStateError.malformed("its header: \(error)") }
        let tally = ReportTally()
        tally.records = header.tally.records
        tally.skipped = header.tally.skipped
        tally.earliest = header.tally.earliest
        tally.latest = header.tally.latest
        for reason in header.tally.reasons {
            guard TrialFailure.isWord(reason) else { throw ReportStateError.malformed("reason \(reason.debugDescription) is not a word") }
            _ = tally.intern(reason: reason)
        }
        guard tally.reasons.count == header.tally.reasons.count else { throw ReportStateError.malformed("a reason is listed twice") }
        for version in header.tally.versions {
            guard let id = try? PackageID(version.id), let semantic = try? SemanticVersion(version.version), version.devices >= 0 else {
                throw ReportStateError.malformed("version \(version.id) \(version.version) is not an id and version")
            }
            let index = tally.intern(ReportTally.VersionKey(id: id, version: semantic))
            guard index == tally.versions.count - 1 else { throw ReportStateError.malformed("\(version.id) \(version.version) is listed twice") }
            let table = tally.tables[Int(index)]
            table.reserve(version.devices)
            var left = version.devices
            while left > 0 {
                let batch = min(left, 1 << 15)
                let bytes = try take(batch * factBytes)
                try bytes.withUnsafeBytes { raw in
                    for n in 0..<batch {
                        let base = n * factBytes
                        func u32(_ at: Int) -> UInt32 { UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: base + at, as: UInt32.self)) }
                        let token = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: base, as: UInt64.self))
                        let facts = ReportTally.Facts(offered: u32(8), active: u32(12), confirmed: u32(16), failed: u32(20), reason: u32(24))
                        guard Int(facts.reason) < tally.reasons.count || facts.failed == 0 else {
                            throw ReportStateError.malformed("a device of \(version.id) \(version.version) names reason \(facts.reason) of \(tally.reasons.count)")
                        }
                        table.update(token) { $0 = facts }
                    }
                }
                left -= batch
            }
            guard table.count == version.devices else { throw ReportStateError.malformed("\(version.id) \(version.version) lists a device twice") }
        }
        while try more() {}
        guard pending.count == position else { throw ReportStateError.malformed("\(pending.count - position) bytes follow the last version's devices") }
        guard held.count == 32, Array(hasher.finalize()) == held else { throw ReportStateError.malformed("its SHA-256 does not match: the file is damaged or was cut short") }
        return (tally, header.inputs)
    }
}

public enum ReportStateError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformed(String)

    public var description: String {
        switch self {
        case .malformed(let why): "not a rollout report state: \(why)"
        }
    }
}
