import SatchelCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A response: status, headers and a body. Bodies are never whole files in memory unless they are small
/// enough to cache: a ``FileRegion`` names bytes on disk for the server to `sendfile` or the app to read in
/// chunks of at most 1 MiB.
public struct ResourceResponse: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: ResponseBody
    /// Set by whoever made the answer when the same plain request would get byte for byte the same answer for a
    /// while (the HTTP cache's fresh hits): a server may then keep the encoded answer and send it again.
    public var reuse: AnswerReuse?

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: ResponseBody = .empty, reuse: AnswerReuse? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.reuse = reuse
    }
}

/// How long an answer stays the same for the same plain request (no range, condition, cache directive or body): until
/// ``until`` (seconds since 1970 on the maker's clock; an `Age` field changes every second) and while ``token`` is
/// valid (the stored response it came from has not been replaced, freshened or removed).
public struct AnswerReuse: Sendable {
    public let until: Double
    public let token: ReuseToken
    /// The clock ``until`` is on: the HTTP cache's, so that a reused answer ends when the cache's own time says.
    public let clock: @Sendable () -> Double

    public init(until: Double, token: ReuseToken, clock: @escaping @Sendable () -> Double) {
        self.until = until
        self.token = token
        self.clock = clock
    }

    /// Whether the answer is still the same.
    public var holds: Bool { until > clock() && token.isValid }
}

/// Valid until its maker says otherwise.
public final class ReuseToken: Sendable {
    private let valid = Locked(true)

    public init() {}

    public var isValid: Bool { valid.withLock { $0 } }

    public func invalidate() { valid.withLock { $0 = false } }
}

public enum ResponseBody: Sendable {
    case empty
    /// Bytes already in memory (small cached files, generated pages).
    case bytes([UInt8])
    /// A region of an open file.
    case file(FileRegion)
    /// Bytes that arrive over time (network responses), in chunks of at most 1 MiB.
    case stream(BodyStream)

    /// The body's length when known in advance.
    public var knownLength: Int64? {
        switch self {
        case .empty: 0
        case .bytes(let bytes): Int64(bytes.count)
        case .file(let region): region.length
        case .stream: nil
        }
    }
}

/// `length` bytes at `offset` of a file that is already open. Holding the descriptor, not just the path, is
/// what lets a response finish byte-exact even if the version it comes from is deactivated and deleted while
/// it streams: an unlinked file stays readable through an open descriptor. The descriptor is closed when the
/// last reference goes away.
public final class FileRegion: Sendable {
    public static let maxChunk = 1 << 20

    public let path: String
    public let descriptor: Int32
    public let offset: Int64
    public let length: Int64

    /// Opens `path` read-only; nil when it cannot be opened.
    public init?(path: String, offset: Int64, length: Int64) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        self.path = path
        self.descriptor = descriptor
        self.offset = offset
        self.length = length
    }

    private init(path: String, descriptor: Int32, offset: Int64, length: Int64) {
        self.path = path
        self.descriptor = descriptor
        self.offset = offset
        self.length = length
    }

    /// The same file, another region; shares nothing, so it has its own descriptor.
    public func slice(offset: Int64, length: Int64) -> FileRegion? {
        let copy = dup(descriptor)
        guard copy >= 0 else { return nil }
        return FileRegion(path: path, descriptor: copy, offset: offset, length: length)
    }

    /// Reads up to `count` bytes at `position` (relative to the region), with `pread`, so concurrent readers
    /// of one region do not disturb each other.
    public func read(at position: Int64, count: Int) throws(FileReadError) -> [UInt8] {
        let wanted = Int(min(Int64(count), length - position))
        guard wanted > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: wanted)
        var done = 0
        while done < wanted {
            let got = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + done, wanted - done, off_t(offset + position) + off_t(done)) }
            if got < 0 {
                if errno == EINTR { continue }
                throw FileReadError(path: path, errno: errno)
            }
            if got == 0 { throw FileReadError(path: path, errno: EIO) }
            done += got
        }
        return bytes
    }

    /// The region as chunks of at most `chunkSize` (≤ 1 MiB), read lazily: memory stays bounded by one chunk.
    public func chunks(size chunkSize: Int = FileRegion.maxChunk) -> FileRegionChunks {
        FileRegionChunks(region: self, chunkSize: max(1, min(chunkSize, Self.maxChunk)))
    }

    /// Reads the whole region; for tests and small files only.
    public func readAll() throws(FileReadError) -> [UInt8] {
        try read(at: 0, count: Int(length))
    }

    deinit { close(descriptor) }
}

/// The chunks of a ``FileRegion``, read with `pread` one at a time as they are asked for.
public struct FileRegionChunks: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    let region: FileRegion
    let chunkSize: Int

    public struct AsyncIterator: AsyncIteratorProtocol {
        let region: FileRegion
        let chunkSize: Int
        var position: Int64 = 0

        public mutating func next() async throws -> [UInt8]? {
            guard position < region.length else { return nil }
            let chunk = try region.read(at: position, count: chunkSize)
            position += Int64(chunk.count)
            return chunk
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(region: region, chunkSize: chunkSize) }
}

public struct FileReadError: Error, Equatable, Sendable, CustomStringConvertible {
    public let path: String
    public let errno: Int32
    public var description: String { "reading \(path) failed: \(String(cString: strerror(errno)))" }
}
