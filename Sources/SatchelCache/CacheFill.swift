import SatchelCore
import SatchelHTTP
import SatchelPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A response being stored while it is read (read-while-writer, as Traffic Server does): one task copies the
/// origin's body into a file in `tmp/` as fast as the origin sends it, and every client that wants the response
/// (the one that asked, and any collapsed behind it) reads the file as it grows, at its own pace. A client that
/// goes away ends only its own reading. When the last reader leaves, a fill that has less than half of its announced
/// length stops (a download given up early costs no more); one further along, or of unknown length, is finished in
/// the background and stored (Traffic Server's background fill). Memory stays one chunk per reader and one for the
/// writer, whatever the body's size.
final class CacheFill: @unchecked Sendable {
    let id: String
    let key: String
    /// The body's announced length (`Content-Length`), if any.
    let expectedLength: Int64?
    private let descriptor: Int32
    private let lock = Locked(State())

    private struct State {
        var written: Int64 = 0
        var finished = false
        var failure: FetchError?
        var readers = 0
        var abandoned = false
        var waiters: [CheckedContinuation<Void, Never>] = []
        var writer: Task<Void, Never>?
    }

    init(id: String, key: String, descriptor: Int32, expectedLength: Int64?) {
        self.id = id
        self.key = key
        self.descriptor = descriptor
        self.expectedLength = expectedLength
    }

    deinit { close(descriptor) }

    /// Copies `body` into the file; `done` is told the length when it ended whole, or nil when it did not (the
    /// origin broke off, a disk error, the last reader left), before the readers hear that it ended.
    func start(copying body: ResponseBody, limit: Int64, done: @escaping @Sendable (Int64?) -> Void) {
        let task = Task {
            var length: Int64 = 0
            var failure: FetchError?
            do {
                for try await chunk in body.chunks() {
                    if lock.withLock({ $0.abandoned }) { failure = .connectionFailed("every reader left"); break }
                    if let code = POSIXIO.writeAll(chunk, to: descriptor) {
                        failure = .connectionFailed("cannot write the cache: \(String(cString: strerror(code)))")
                        break
                    }
                    length += Int64(chunk.count)
                    if length > limit { failure = .connectionFailed("larger than the cache"); break }
                    wake { $0.written = length }
                }
            } catch {
                failure = error as? FetchError ?? .connectionFailed("\(error)")
            }
            // A stream may end without an error when its task is cancelled (AsyncThrowingStream does), and an origin
            // may close early on a body it framed by length: neither is a whole body, and a partial one stored
            // would be served as the response. Only a body of its announced length (or of unknown length, ended by
            // the origin) is committed.
            if failure == nil, lock.withLock({ $0.abandoned }) || Task.isCancelled {
                failure = .connectionFailed("every reader left")
            } else if failure == nil, let expectedLength, length != expectedLength {
                failure = .badResponse("the origin sent \(length) of the \(expectedLength) bytes its Content-Length announced")
            }
            // Committed before the readers hear the end: a client that read the whole body finds it stored.
            done(failure == nil ? length : nil)
            let failed = failure
            wake { state in
                state.finished = true
                state.failure = failed
            }
        }
        lock.withLock { $0.writer = task }
    }

    /// A new reader of the body, from its first byte; nil when the fill was already abandoned.
    func reader() -> BodyStream? {
        let joined = lock.withLock { state -> Bool in
            guard !state.abandoned else { return false }
            state.readers += 1
            return true
        }
        return joined ? BodyStream(reader: FillReader(fill: self)) : nil
    }

    fileprivate func leave() {
        let writer = lock.withLock { state -> Task<Void, Never>? in
            state.readers -= 1
            guard state.readers == 0, !state.finished, let expected = expectedLength, state.written * 2 < expected else { return nil }
            state.abandoned = true
            return state.writer
        }
        writer?.cancel()
    }

    /// Bytes from `position`, waiting for the writer when it has none yet; nil at the end.
    fileprivate func read(at position: Int64, count: Int) async throws -> [UInt8]? {
        while true {
            let (written, finished, failure) = lock.withLock { ($0.written, $0.finished, $0.failure) }
            if position < written {
                let wanted = Int(min(Int64(count), written - position))
                var bytes = [UInt8](repeating: 0, count: wanted)
                let got = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress!, wanted, off_t(position)) }
                guard got > 0 else { throw FetchError.connectionFailed("cannot read the cache file: \(String(cString: strerror(errno)))") }
                return Array(bytes[..<got])
            }
            if let failure { throw failure }
            if finished { return nil }
            await withCheckedContinuation { continuation in
                let ready = lock.withLock { state -> Bool in
                    if state.written > position || state.finished { return true }
                    state.waiters.append(continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
        }
    }

    private func wake(_ change: (inout State) -> Void) {
        let waiters = lock.withLock { state -> [CheckedContinuation<Void, Never>] in
            change(&state)
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// One client's reading of a fill. Read by one consumer at a time; left once, whether by the end, a cancellation
/// (which may run beside a read) or being dropped.
private final class FillReader: BodyReader, @unchecked Sendable {
    private let fill: CacheFill
    private var position: Int64 = 0
    private let left = Locked(false)

    init(fill: CacheFill) { self.fill = fill }

    func nextChunk() async throws -> [UInt8]? {
        guard let chunk = try await fill.read(at: position, count: FileRegion.maxChunk) else {
            leave()
            return nil
        }
        position += Int64(chunk.count)
        return chunk
    }

    func cancel() { leave() }

    private func leave() {
        let first = left.withLock { left -> Bool in
            defer { left = true }
            return !left
        }
        if first { fill.leave() }
    }

    deinit { leave() }
}
