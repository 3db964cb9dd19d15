import Foundation
import SatchelCore
import SatchelHTTP

/// An HTTP cache (RFC 9111) on disk, shared by every ``CachingFetcher`` made on it: responses stored and reused by
/// the rules of ``CacheRules``, bodies streamed both ways (a client reads a response while the cache stores it),
/// concurrent requests for one URL collapsed into one upstream fetch, the least recently used entries evicted
/// past the bound, and nothing torn or mixed after a crash (``CacheStore``).
public final class HTTPCache: ResponseCache, Sendable {
    public let configuration: CacheConfiguration
    let store: CacheStore
    /// Requests waiting for another's answer from the origin, by URL.
    let collapsed = Locked([String: [Waiter]]())
    /// Responses being stored, by URL: a request they would answer reads them as they grow.
    let filling = Locked([String: [InProgress]]())
    /// URLs whose last answer could not be stored (a miss must not wait for another's, Varnish's hit-for-pass), until then.
    let passing = Locked([String: Double]())
    let counters = Locked(Statistics())

    /// What the cache has done since it was opened, and what it holds.
    public struct Statistics: Sendable, Equatable {
        public var hits = 0
        public var misses = 0
        public var revalidations = 0
        public var staleAnswers = 0
        public var collapsed = 0
        public var stored = 0
    }

    struct Waiter: Sendable {
        let id: ObjectIdentifier
        let resume: @Sendable () -> Void
    }

    struct InProgress: Sendable {
        let fill: CacheFill
        let stored: StoredResponse
    }

    public init(configuration: CacheConfiguration) throws(CacheError) {
        self.configuration = configuration
        store = try CacheStore(configuration)
    }

    public var mode: CacheMode { configuration.mode }

    public var statistics: Statistics { counters.withLock { $0 } }
    /// Bytes stored (bodies and records) and entries.
    public var storedBytes: Int64 { store.totalBytes }
    public var entryCount: Int { store.entryCount }
    public func storedBytesPerHost() -> [String: Int64] { store.bytesPerHost() }

    /// Forgets every stored response, or those of one host.
    public func clear(host: String? = nil) {
        store.removeAll(host: host?.lowercased())
    }

    func count(_ change: (inout Statistics) -> Void) { counters.withLock(change) }

    /// A hit a server answered again from the encoded bytes of an earlier one (``AnswerReuse``).
    public func countReusedHit() { count { $0.hits += 1 } }

    func now() -> Double { configuration.clock() }
}
