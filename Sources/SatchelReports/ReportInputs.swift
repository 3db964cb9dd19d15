import Foundation
import SatchelCore
#if canImport(Glibc)
import Glibc
private let systemRead = Glibc.read
private let systemWrite = Glibc.write
private let systemPread = Glibc.pread
#elseif canImport(Darwin)
import Darwin
private let systemRead = Darwin.read
private let systemWrite = Darwin.write
private let systemPread = Darwin.pread
#endif

/// What went wrong reading reports or their state; each names the file.
public enum ReportInputError: Error, CustomStringConvertible {
    public enum Gzip: Error, Equatable {
        case zlib(String)
    }

    case cannotRead(path: String, why: String)
    /// Content offset (decompressed bytes) where the gzip stream broke, or where it ended early.
    case badGzip(path: String, at: Int64, why: String)
    case badState(path: String, ReportStateError)
    case cannotWriteState(path: String, why: String)

    public var description: String {
        switch self {
        case .cannotRead(let path, let why): "cannot read reports \(path): \(why)"
        case .badGzip(let path, let at, let why): "reports \(path) is not gzip that ends whole (after \(at) decompressed bytes): \(why)"
        case .badState(let path, let error): "the reports state \(path) is refused (\(error)); remove it to count every input again"
        case .cannotWriteState(let path, let why): "cannot write the reports state \(path): \(why)"
        }
    }
}

/// Reads reports files into a ``ReportTally`` as a stream: plain or gzip (by the `.gz` suffix, any number of members),
/// each line handed to the tally, never the whole file in memory. With a state (`ReportTallyState`), an input read
/// before is recognised by its content (its first bytes, and the bytes just before where the last run stopped), so a
/// file that grew is read from where it stopped, a rotated file renamed or compressed is still known, and an unchanged
/// one is passed over; an input the state names that is missing or changed makes the state useless (its counts cannot
/// be taken back), and everything is read again from the start.
public enum ReportReader {
    public struct Result {
        public var tally: ReportTally
        /// For the state: where each input stopped (inputs with nothing read are left out).
        public var inputs: [ReportTallyState.Input]
        /// Records and skipped lines of unterminated last lines of plain files: counted in this run's answer, not in
        /// the state, since the next run reads them again (a log being written may finish the line).
        public var uncommitted: (records: Int, skipped: Int)
        /// Why a state was not used, for the user.
        public var notes: [String]
        /// Bytes of content read and split into lines this run.
        public var bytesRead: Int64
    }

    /// Reads `paths` in order, after the state at `state` when given and it exists. `series`: also gather the report
    /// page's counts over time for this catalog (then no state is used: those need every line).
    public static func read(_ paths: [String], state: String? = nil, series: Catalog? = nil) throws(ReportInputError) -> Result {
        var notes: [String] = []
        var previous: (tally: ReportTally, inputs: [ReportTallyState.Input])?
        if let state, series == nil, FileManager.default.fileExists(atPath: state) {
            previous = try load(state)
        }
        let files: [InputFile]
        do { files = try paths.map { try InputFile(path: $0) } } catch let error as ReportInputError { throw error } catch {
            throw .cannotRead(path: paths.first ?? "", why: "\(error)")
        }
        if let (tally, inputs) = previous {
            switch try match(inputs, files) {
            case .matched(let starts):
                do { return try readAll(files, into: tally, starts: starts, notes: notes) } catch let error as InputChanged {
                    notes.append("\(error.path) changed before where the reports state \(state!) stopped; every input is read from the start")
                } catch let error as ReportInputError { throw error } catch { throw .cannotRead(path: paths.first ?? "", why: "\(error)") }
            case .unmatched(let input):
                notes.append(
                    "the reports state \(state!) read \(input.path) up to \(input.offset) bytes, and no input given holds those bytes now (changed, truncated or left out); every input is read from the start")
            }
        }
        let tally = ReportTally()
        if let series { tally.trackSeries(for: series) }
        do { return try readAll(files, into: tally, starts: Array(repeating: nil, count: files.count), notes: notes) } catch let error as ReportInputError { throw error } catch {
            throw .cannotRead(path: paths.first ?? "", why: "\(error)")
        }
    }

    /// Writes the state atomically: a temporary file beside it, flushed, then renamed over it.
    public static func save(_ result: Result, to path: String) throws(ReportInputError) {
        let temporary = path + ".tmp-\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .cannotWriteState(path: path, why: String(cString: strerror(errno))) }
        do {
            try ReportTallyState.write(result.tally, inputs: result.inputs, uncommitted: result.uncommitted) { bytes in
                var offset = 0
                while offset < bytes.count {
                    let written = systemWrite(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                    guard written > 0 else { throw ReportInputError.cannotWriteState(path: path, why: String(cString: strerror(errno))) }
                    offset += written
                }
            }
            guard fsync(descriptor) == 0 else { throw ReportInputError.cannotWriteState(path: path, why: String(cString: strerror(errno))) }
            close(descriptor)
            guard rename(temporary, path) == 0 else { throw ReportInputError.cannotWriteState(path: path, why: String(cString: strerror(errno))) }
        } catch {
            close(descriptor)
            unlink(temporary)
            if let error = error as? ReportInputError { throw error }
            throw .cannotWriteState(path: path, why: "\(error)")
        }
    }

    static func load(_ path: String) throws(ReportInputError) -> (tally: ReportTally, inputs: [ReportTallyState.Input]) {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw .cannotRead(path: path, why: "cannot open the reports state") }
        defer { try? handle.close() }
        do {
            return try ReportTallyState.read { count in Array(try handle.read(upToCount: count) ?? Data()) }
        } catch let error as ReportStateError { throw .badState(path: path, error) } catch { throw .cannotRead(path: path, why: "\(error)") }
    }

    // MARK: Matching a state's inputs

    enum Match {
        /// Per input given, where to start (nil: from the beginning) and what is known of it.
        case matched([Start?])
        case unmatched(ReportTallyState.Input)
    }

    struct Start {
        var entry: ReportTallyState.Input
        /// A gzip file that has not changed at all since: nothing to read.
        var unchanged: Bool
    }

    static func match(_ entries: [ReportTallyState.Input], _ files: [InputFile]) throws(ReportInputError) -> Match {
        var starts: [Start?] = Array(repeating: nil, count: files.count)
        var prefixes: [[UInt8]?] = Array(repeating: nil, count: files.count)
        for entry in entries {
            var found = false
            for (index, file) in files.enumerated() where starts[index] == nil {
                if prefixes[index] == nil { prefixes[index] = try file.contentPrefix(ReportTallyState.fingerprintBytes) }
                let prefix = prefixes[index]!
                guard prefix.count >= entry.headBytes, ReportTallyState.fingerprint(prefix[..<entry.headBytes]) == entry.head else { continue }
                if file.gzip {
                    // Compressed: the same file when its bytes are; otherwise the tail is checked while inflating.
                    let unchanged = entry.gzip && entry.fileSize == file.size && entry.fileTail == file.fileTail()
                    starts[index] = Start(entry: entry, unchanged: unchanged)
                } else {
                    guard file.size >= entry.offset, ReportTallyState.fingerprint(file.pread(at: entry.offset - Int64(entry.tailBytes), count: entry.tailBytes)) == entry.tail else { continue }
                    starts[index] = Start(entry: entry, unchanged: false)
                }
                found = true
                break
            }
            if !found { return .unmatched(entry) }
        }
        return .matched(starts)
    }

    struct InputChanged: Error {
        let path: String
    }

    // MARK: Reading

    static func readAll(_ files: [InputFile], into tally: ReportTally, starts: [Start?], notes: [String]) throws -> Result {
        var inputs: [ReportTallyState.Input] = []
        var uncommitted = (records: 0, skipped: 0)
        var bytesRead: Int64 = 0
        for (file, start) in zip(files, starts) {
            if let start, start.unchanged {
                var entry = start.entry
                entry.path = file.path
                inputs.append(entry)
                continue
            }
            let from = start?.entry.offset ?? 0
            var splitter = LineSplitter()
            // A plain file is read from where the state stopped; gzip cannot be entered midway, so it is inflated
            // from its start and the bytes before that point only checked.
            var total: Int64 = file.gzip ? 0 : from
            var head: [UInt8] = file.gzip ? [] : file.pread(at: 0, count: ReportTallyState.fingerprintBytes)
            var window = Window()
            var verified = !file.gzip || start == nil
            try file.streamAhead(from: total) { chunk in
                let chunkStart = total
                total += Int64(chunk.count)
                if head.count < ReportTallyState.fingerprintBytes { head += chunk.prefix(ReportTallyState.fingerprintBytes - head.count) }
                guard total > from else {
                    window.add(chunk)
                    return
                }
                var part = chunk
                if chunkStart < from {
                    let skip = Int(from - chunkStart)
                    window.add(UnsafeRawBufferPointer(rebasing: chunk[..<skip]))
                    part = UnsafeRawBufferPointer(rebasing: chunk[skip...])
                }
                if !verified, let start {
                    // The bytes before where the state stopped must be the ones it counted.
                    guard window.fingerprint(start.entry.tailBytes) == start.entry.tail else { throw InputChanged(path: file.path) }
                    verified = true
                }
                bytesRead += Int64(part.count)
                window.add(part)
                splitter.feed(part) { tally.add(line: $0) }
            }
            if let start, !verified {
                guard total == start.entry.offset, window.fingerprint(start.entry.tailBytes) == start.entry.tail else { throw InputChanged(path: file.path) }
            }
            var committed = total
            if !splitter.carry.isEmpty {
                let before = (tally.records, tally.skipped)
                splitter.carry.withUnsafeBytes { tally.add(line: $0) }
                if !file.gzip {
                    // A plain file may still be written: its last line is read again next time, whole by then.
                    uncommitted.records += tally.records - before.0
                    uncommitted.skipped += tally.skipped - before.1
                    committed -= Int64(splitter.carry.count)
                }
            }
            guard committed > 0 else { continue }
            let headBytes = Int(min(committed, Int64(ReportTallyState.fingerprintBytes)))
            let tailBytes = headBytes
            let tail: String
            if file.gzip {
                tail = window.fingerprint(tailBytes)
            } else {
                tail = ReportTallyState.fingerprint(file.pread(at: committed - Int64(tailBytes), count: tailBytes))
            }
            inputs.append(ReportTallyState.Input(
                path: file.path, gzip: file.gzip, offset: committed, head: ReportTallyState.fingerprint(head[..<headBytes]), headBytes: headBytes,
                tail: tail, tailBytes: tailBytes, fileSize: file.gzip ? file.size : nil, fileTail: file.gzip ? file.fileTail() : nil))
        }
        return Result(tally: tally, inputs: inputs, uncommitted: uncommitted, notes: notes, bytesRead: bytesRead)
    }
}

/// The last 4096 bytes of content seen.
struct Window {
    private var bytes: [UInt8] = []

    mutating func add(_ chunk: UnsafeRawBufferPointer) {
        let keep = ReportTallyState.fingerprintBytes
        if chunk.count >= keep {
            bytes = Array(chunk.suffix(keep))
        } else {
            bytes += chunk
            if bytes.count > keep { bytes.removeFirst(bytes.count - keep) }
        }
    }

    func fingerprint(_ count: Int) -> String {
        guard bytes.count >= count else { return "" }
        return ReportTallyState.fingerprint(bytes.suffix(count))
    }
}

/// Splits a stream into lines at each newline; a line cut by a chunk's end is carried into the next.
struct LineSplitter {
    var carry: [UInt8] = []

    mutating func feed(_ chunk: UnsafeRawBufferPointer, line: (UnsafeRawBufferPointer) -> Void) {
        guard let base = chunk.baseAddress else { return }
        var start = 0
        while start < chunk.count {
            guard let found = memchr(base + start, 0x0A, chunk.count - start) else {
                carry += UnsafeRawBufferPointer(rebasing: chunk[start...])
                return
            }
            let end = UnsafeRawPointer(found) - base
            if carry.isEmpty {
                line(UnsafeRawBufferPointer(rebasing: chunk[start..<end]))
            } else {
                carry += UnsafeRawBufferPointer(rebasing: chunk[start..<end])
                carry.withUnsafeBytes { line($0) }
                carry.removeAll(keepingCapacity: true)
            }
            start = end + 1
        }
    }
}

/// Chunks handed from the thread that reads (and inflates) a file to the one that counts its lines: at most `limit`
/// waiting, so memory stays a few MiB whatever the file.
final class ChunkQueue: @unchecked Sendable {
    private let condition = NSCondition()
    private var chunks: [[UInt8]] = []
    private var ended = false
    private var failure: Error?
    private var cancelled = false
    private let limit: Int

    init(limit: Int) { self.limit = limit }

    struct Cancelled: Error {}

    /// Waits for room; throws once the reader of the queue gave up.
    func put(_ chunk: [UInt8]) throws {
        condition.lock()
        defer { condition.unlock() }
        while chunks.count >= limit && !cancelled { condition.wait() }
        if cancelled { throw Cancelled() }
        chunks.append(chunk)
        condition.broadcast()
    }

    func finish(_ error: Error?) {
        condition.lock()
        ended = true
        failure = error
        condition.broadcast()
        condition.unlock()
    }

    /// The next chunk, nil at the end; the reading thread's error, if it failed.
    func take() throws -> [UInt8]? {
        condition.lock()
        defer { condition.unlock() }
        while chunks.isEmpty && !ended { condition.wait() }
        if !chunks.isEmpty {
            let chunk = chunks.removeFirst()
            condition.broadcast()
            return chunk
        }
        if let failure, !(failure is Cancelled) { throw failure }
        return nil
    }

    func cancel() {
        condition.lock()
        cancelled = true
        condition.broadcast()
        condition.unlock()
    }

    /// Until the reading thread has ended.
    func waitEnded() {
        condition.lock()
        while !ended { condition.wait() }
        condition.unlock()
    }
}

/// One reports file, open for reading.
final class InputFile: @unchecked Sendable {
    let path: String
    let gzip: Bool
    let size: Int64
    private let descriptor: Int32

    init(path: String) throws(ReportInputError) {
        self.path = path
        gzip = path.hasSuffix(".gz")
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .cannotRead(path: path, why: String(cString: strerror(errno))) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let why = String(cString: strerror(errno))
            close(descriptor)
            throw .cannotRead(path: path, why: why)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            close(descriptor)
            throw .cannotRead(path: path, why: "not a regular file")
        }
        size = Int64(info.st_size)
    }

    deinit { close(descriptor) }

    func pread(at offset: Int64, count: Int) -> [UInt8] {
        guard count > 0, offset >= 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: count)
        let read = bytes.withUnsafeMutableBytes { systemPread(descriptor, $0.baseAddress, count, off_t(offset)) }
        return Array(bytes.prefix(max(0, read)))
    }

    /// The compressed file's last bytes' fingerprint.
    func fileTail() -> String {
        let count = Int(min(size, Int64(ReportTallyState.fingerprintBytes)))
        return ReportTallyState.fingerprint(pread(at: size - Int64(count), count: count))
    }

    /// The first `count` bytes of content (fewer when there are fewer).
    func contentPrefix(_ count: Int) throws(ReportInputError) -> [UInt8] {
        guard gzip else { return pread(at: 0, count: count) }
        var prefix: [UInt8] = []
        struct Enough: Error {}
        do {
            let inflater = try Inflater()
            var offset: Int64 = 0
            while prefix.count < count, offset < size {
                let raw = pread(at: offset, count: 16 << 10)
                guard !raw.isEmpty else { break }
                offset += Int64(raw.count)
                try raw.withUnsafeBytes { bytes in
                    try inflater.feed(bytes) { out in
                        prefix += out.prefix(count - prefix.count)
                        if prefix.count >= count { throw Enough() }
                    }
                }
            }
        } catch is Enough {
        } catch let error as ReportInputError.Gzip {
            // A damaged gzip is reported when it is read; a prefix that cannot be had matches no state.
            if case .zlib = error { return prefix }
        } catch { return prefix }
        return prefix
    }

    /// As `stream`, with the reading and inflating done on a thread of their own: on two cores, inflating gzip (about
    /// a microsecond a line) and counting lines overlap instead of taking turns.
    func streamAhead(from offset: Int64, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let queue = ChunkQueue(limit: 8)
        let reader = Thread { [self] in
            do {
                try stream(from: offset) { try queue.put(Array($0)) }
                queue.finish(nil)
            } catch { queue.finish(error) }
        }
        reader.stackSize = 1 << 20
        reader.start()
        do {
            while let chunk = try queue.take() { try chunk.withUnsafeBytes { try body($0) } }
        } catch {
            queue.cancel()
            queue.waitEnded()
            throw error
        }
    }

    /// Every byte of content from `offset` (0 for gzip), in chunks.
    func stream(from offset: Int64, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard lseek(descriptor, off_t(offset), SEEK_SET) == offset else { throw ReportInputError.cannotRead(path: path, why: String(cString: strerror(errno))) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        let inflater = gzip ? try Inflater() : nil
        var produced: Int64 = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { systemRead(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw ReportInputError.cannotRead(path: path, why: String(cString: strerror(errno)))
            }
            if count == 0 { break }
            try buffer.withUnsafeBytes { raw in
                let piece = UnsafeRawBufferPointer(rebasing: raw[..<count])
                guard let inflater else { return try body(piece) }
                do {
                    try inflater.feed(piece) { out in
                        produced += Int64(out.count)
                        try body(out)
                    }
                } catch let error as ReportInputError.Gzip {
                    guard case .zlib(let why) = error else { throw error }
                    throw ReportInputError.badGzip(path: path, at: produced, why: why)
                }
            }
        }
        if let inflater, !inflater.atMemberEnd || produced == 0 && size > 0 {
            throw ReportInputError.badGzip(path: path, at: produced, why: "the stream ends inside a member")
        }
    }
}

extension ReportReader {
    /// A file's whole content (decompressed for `.gz`), for the reference count that holds everything in memory.
    public static func contents(_ path: String) throws(ReportInputError) -> [UInt8] {
        let file = try InputFile(path: path)
        var bytes: [UInt8] = []
        do { try file.stream(from: 0) { bytes += $0 } } catch let error as ReportInputError { throw error } catch { throw .cannotRead(path: path, why: "\(error)") }
        return bytes
    }
}
