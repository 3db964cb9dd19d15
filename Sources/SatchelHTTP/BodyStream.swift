/// A body that arrives over time, in chunks of at most 1 MiB, read only as fast as its consumer asks.
///
/// Any consumer can iterate it. A consumer that knows the producer's kind (a protocol refining ``BodySource``) may
/// instead take the bytes in the producer's own form: the NIO server forwards a NIO fetcher's buffers on the event
/// loop without copying them or hopping threads. The two are alternatives: a consumer uses one or the other, never
/// both.
///
/// A consumer that stops early (an error, a stop from WebKit, a client gone) simply drops its iterator, and one that
/// never reads drops the body: a body read from a ``BodyReader`` is then cancelled, so an upstream request behind it
/// is closed rather than left waiting for a reader that will never come. A consumer that takes the producer itself
/// (``claimSource(as:)``) takes that duty over.
public struct BodyStream: AsyncSequence, Sendable {
    public typealias Element = [UInt8]

    fileprivate enum Storage: Sendable {
        case stream(AsyncThrowingStream<[UInt8], any Error>)
        case reader(ReaderLease)
    }

    fileprivate let storage: Storage
    /// The producer, for consumers that take it over (``claimSource(as:)``) or cancel it unread; nil for plain
    /// streams.
    public let source: (any BodySource)?

    /// - Parameter chunks: created lazily (e.g. `AsyncThrowingStream(unfolding:)`), so that a consumer taking
    ///   ``source`` never starts it.
    public init(_ chunks: AsyncThrowingStream<[UInt8], any Error>, source: (any BodySource)? = nil) {
        storage = .stream(chunks)
        self.source = source
    }

    /// A body pulled from `reader`, which is cancelled if its consumer lets go before the end.
    public init(reader: any BodyReader, source: (any BodySource)? = nil) {
        storage = .reader(ReaderLease(reader))
        self.source = source
    }

    /// The producer as `kind` (a protocol refining ``BodySource``), for a consumer that takes the bytes in the
    /// producer's own form (the NIO server forwarding a NIO fetcher's buffers). Once claimed, dropping the body no
    /// longer cancels its reader: the claimer reads it to the end or cancels it. Nil (and nothing claimed) when the
    /// producer is not of that kind.
    public func claimSource<T>(as kind: T.Type) -> T? {
        guard let claimed = source as? T else { return nil }
        if case .reader(let lease) = storage { lease.claim() }
        return claimed
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        private enum Storage {
            case stream(AsyncThrowingStream<[UInt8], any Error>.AsyncIterator)
            case reader(ReaderLease)
        }

        private var storage: Storage

        fileprivate init(_ storage: BodyStream.Storage) {
            switch storage {
            case .stream(let stream): self.storage = .stream(stream.makeAsyncIterator())
            case .reader(let lease): self.storage = .reader(lease)
            }
        }

        public mutating func next() async throws -> [UInt8]? {
            switch storage {
            case .stream(var iterator):
                defer { storage = .stream(iterator) }
                return try await iterator.next()
            case .reader(let lease):
                return try await lease.next()
            }
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(storage) }
}

/// The producer behind a ``BodyStream`` that a consumer may take over instead of iterating the stream. A producer
/// with a faster form of its own declares it as a protocol refining this one (SatchelNetwork's `EventLoopPartSource`:
/// buffers handed over on an event loop), and a consumer claims it by that protocol, never by a concrete type.
public protocol BodySource: AnyObject, Sendable {
    /// The consumer let go before the end: stop producing (close the upstream request). Safe from any thread.
    func cancel()
}

/// A producer of body chunks pulled one at a time (an upstream response).
public protocol BodyReader: AnyObject, Sendable {
    /// The next chunk (at most 1 MiB); nil at the end.
    func nextChunk() async throws -> [UInt8]?
    /// The consumer let go before the end: stop producing (close the upstream request).
    func cancel()
}

/// A body's hold on its reader: cancels it on task cancellation, and when the body (with every iterator made from
/// it) is dropped before the end, unless a consumer claimed the producer. One consumer at a time, as iterators are.
private final class ReaderLease: @unchecked Sendable {
    private let reader: any BodyReader
    private var ended = false
    private var claimed = false

    init(_ reader: any BodyReader) { self.reader = reader }

    func claim() { claimed = true }

    func next() async throws -> [UInt8]? {
        guard !ended else { return nil }
        do {
            let chunk = try await withTaskCancellationHandler {
                try await reader.nextChunk()
            } onCancel: { [reader] in
                reader.cancel()
            }
            if chunk == nil { ended = true }
            return chunk
        } catch {
            ended = true
            throw error
        }
    }

    deinit {
        if !ended && !claimed { reader.cancel() }
    }
}

extension ResponseBody {
    /// The body as chunks of at most `size` bytes, whatever its kind, read lazily: for consumers that take every
    /// body the same way (the updater, the WebKit driver). Memory stays bounded by one chunk.
    public func chunks(size: Int = FileRegion.maxChunk) -> BodyStream {
        let size = max(1, min(size, FileRegion.maxChunk))
        switch self {
        case .empty:
            return BodyStream(AsyncThrowingStream { $0.finish() })
        case .bytes(let bytes):
            let cursor = ChunkCursor(bytes)
            return BodyStream(AsyncThrowingStream(unfolding: { cursor.next(size) }))
        case .file(let region):
            let reader = FileChunkReader(region, size: size)
            return BodyStream(AsyncThrowingStream(unfolding: { try reader.next() }))
        case .stream(let stream):
            let source = RechunkingReader(stream, size: size)
            return BodyStream(AsyncThrowingStream(unfolding: { try await source.next() }), source: stream.source)
        }
    }

    /// The whole body in memory: for tests and small bodies only.
    public func collect() async throws -> [UInt8] {
        if case .bytes(let bytes) = self { return bytes }
        var all: [UInt8] = []
        for try await chunk in chunks() { all += chunk }
        return all
    }
}

/// The state of a lazily chunked body; each is used by one consumer at a time, as an iterator is.
private final class ChunkCursor: @unchecked Sendable {
    private let bytes: [UInt8]
    private var offset = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    func next(_ size: Int) -> [UInt8]? {
        guard offset < bytes.count else { return nil }
        let end = min(bytes.count, offset + size)
        defer { offset = end }
        return Array(bytes[offset..<end])
    }
}

private final class FileChunkReader: @unchecked Sendable {
    private let region: FileRegion
    private let size: Int
    private var position: Int64 = 0
    init(_ region: FileRegion, size: Int) {
        self.region = region
        self.size = size
    }
    func next() throws -> [UInt8]? {
        guard position < region.length else { return nil }
        let chunk = try region.read(at: position, count: size)
        position += Int64(chunk.count)
        return chunk
    }
}

private final class RechunkingReader: @unchecked Sendable {
    private var iterator: BodyStream.AsyncIterator
    private let size: Int
    private var rest: ArraySlice<UInt8> = []
    init(_ stream: BodyStream, size: Int) {
        iterator = stream.makeAsyncIterator()
        self.size = size
    }
    func next() async throws -> [UInt8]? {
        while rest.isEmpty {
            guard let chunk = try await iterator.next() else { return nil }
            rest = chunk[...]
        }
        let end = rest.index(rest.startIndex, offsetBy: min(size, rest.count))
        defer { rest = rest[end...] }
        return Array(rest[..<end])
    }
}
