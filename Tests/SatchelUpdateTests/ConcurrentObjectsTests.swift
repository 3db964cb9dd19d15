import Foundation
import SatchelBundle
import SatchelCore
import SatchelHTTP
import SatchelStore
import SatchelTestSupport
import Testing
@testable import SatchelUpdate

/// A ``FakeOrigin`` behind a fetcher that holds each object's answer for a while (`delay`, by the order the requests
/// came in), counts the object requests in flight (from the request to the end of its body, however it ends) and their
/// peak, records the order they started and finished in, and can stall every object body after a few bytes until the
/// download is cancelled (`stallAfter`), as a dead mobile link does.
final class PacedOrigin: AsyncNetworkFetcher, @unchecked Sendable {
    let origin: FakeOrigin
    private let lock = NSLock()
    private var current = 0
    private var highest = 0
    private var began: [String] = []
    private var ended: [String] = []
    private var cancellations = 0
    private var stalls = 0
    private let delay: @Sendable (_ ordinal: Int) -> Duration
    private let stallAfter: Int?

    init(_ origin: FakeOrigin, stallAfter: Int? = nil, delay: @escaping @Sendable (_ ordinal: Int) -> Duration = { _ in .milliseconds(20) }) {
        self.origin = origin
        self.stallAfter = stallAfter
        self.delay = delay
    }

    var peak: Int { lock.withLock { highest } }
    var inFlight: Int { lock.withLock { current } }
    var started: [String] { lock.withLock { began } }
    /// Object bodies read to their end, in the order they ended.
    var finished: [String] { lock.withLock { ended } }
    var cancelled: Int { lock.withLock { cancellations } }
    /// Bodies waiting at `stallAfter` (their consumer took the bytes before it and asked for more).
    var stalled: Int { lock.withLock { stalls } }

    func fetchResponse(_ request: ResourceRequest, timeouts: FetchTimeouts) async throws -> ResourceResponse {
        guard request.url.contains("/objects/") else { return try await origin.fetchResponse(request, timeouts: timeouts) }
        let ordinal = lock.withLock {
            current += 1
            highest = max(highest, current)
            began.append(request.url)
            return began.count - 1
        }
        let response: ResourceResponse
        do {
            try await Task.sleep(for: delay(ordinal))
            response = try await origin.fetchResponse(request, timeouts: timeouts)
        } catch {
            end(request.url, completed: false, cancelled: error is CancellationError)
            throw error
        }
        let reader = PacedBody(
            response.body.chunks().makeAsyncIterator(), stallAfter: stallAfter, onStall: { [self] in lock.withLock { stalls += 1 } }
        ) { [self] completed, cancelled in
            end(request.url, completed: completed, cancelled: cancelled)
        }
        return ResourceResponse(status: response.status, headers: response.headers, body: .stream(BodyStream(reader: reader)))
    }

    private func end(_ url: String, completed: Bool, cancelled: Bool) {
        lock.withLock {
            current -= 1
            if completed { ended.append(url) }
            if cancelled { cancellations += 1 }
        }
    }
}

/// One object's body, passed on chunk by chunk; reports its end once: read to the end, failed, or cancelled.
private final class PacedBody: BodyReader, @unchecked Sendable {
    private var iterator: BodyStream.AsyncIterator
    private let stallAfter: Int?
    private let onStall: @Sendable () -> Void
    private let onEnd: @Sendable (_ completed: Bool, _ cancelled: Bool) -> Void
    private let lock = NSLock()
    private var sent = 0
    private var done = false
    private var wasCancelled = false
    private var stalled: CheckedContinuation<Void, any Error>?

    init(
        _ iterator: BodyStream.AsyncIterator, stallAfter: Int?, onStall: @escaping @Sendable () -> Void,
        onEnd: @escaping @Sendable (Bool, Bool) -> Void
    ) {
        self.iterator = iterator
        self.stallAfter = stallAfter
        self.onStall = onStall
        self.onEnd = onEnd
    }

    func nextChunk() async throws -> [UInt8]? {
        do {
            if let stallAfter, sent >= stallAfter {
                onStall()
                try await withCheckedThrowingContinuation { continuation in
                    let cancelledAlready = lock.withLock {
                        stalled = continuation
                        return wasCancelled
                    }
                    if cancelledAlready { resumeStalled() }
                }
            }
            guard var chunk = try await iterator.next() else {
                finish(completed: true, cancelled: false)
                return nil
            }
            if let stallAfter, sent + chunk.count > stallAfter { chunk = Array(chunk.prefix(stallAfter - sent)) }
            sent += chunk.count
            return chunk
        } catch {
            finish(completed: false, cancelled: error is CancellationError)
            throw error
        }
    }

    func cancel() {
        lock.withLock { wasCancelled = true }
        resumeStalled()
        finish(completed: false, cancelled: true)
    }

    private func resumeStalled() {
        lock.withLock { () -> CheckedContinuation<Void, any Error>? in
            defer { stalled = nil }
            return stalled
        }?.resume(throwing: CancellationError())
    }

    private func finish(completed: Bool, cancelled: Bool) {
        let first = lock.withLock { () -> Bool in
            defer { done = true }
            return !done
        }
        if first { onEnd(completed, cancelled) }
    }
}

/// Waits (up to 10 s) until `condition` holds.
private func eventually(_ condition: () -> Bool) async throws {
    for _ in 0..<1000 where !condition() { try await Task.sleep(for: .milliseconds(10)) }
}

@Suite("Objects fetched several at a time")
struct ConcurrentObjectsTests {
    @Test("at most `concurrency` objects are in flight, and that many are: 3 of 7 at a time, 1 with concurrency 1")
    func bounded() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try ContentRelease(folder: folder)
            for concurrency in [3, 1] {
                let paced = PacedOrigin(release.origin)
                let store = try release.store("store-\(concurrency)")
                try store.install(bundle: release.bundles["1.0.0"]!)
                let outcome = try #require(try await release.updater(store, fetcher: paced, concurrency: concurrency).run().outcomes.first)
                #expect(outcome.via == .objects && outcome.objects == 7, "\(outcome)")
                #expect(paced.started.count == 7 && paced.peak == concurrency, "peak \(paced.peak) of \(paced.started.count) with concurrency \(concurrency)")
                #expect(paced.inFlight == 0)
                #expect(try store.check().isEmpty)
            }
        }
    }

    @Test("objects finishing in another order than they started build the same version")
    func completionOrder() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try ContentRelease(folder: folder)
            // All seven at once, the first asked answered last.
            let paced = PacedOrigin(release.origin) { ordinal in .milliseconds(30 * (7 - ordinal)) }
            let store = try release.store("store")
            try store.install(bundle: release.bundles["1.0.0"]!)
            let outcome = try #require(try await release.updater(store, fetcher: paced, concurrency: 7).run().outcomes.first)
            #expect(outcome.via == .objects && outcome.to == "1.3.0", "\(outcome)")
            #expect(paced.finished.count == 7 && paced.finished != paced.started, "finished \(paced.finished), started \(paced.started)")
            #expect(try store.installedManifest(PackageID("shop"), SemanticVersion("1.3.0")) == (try BundleReader(path: release.bundles["1.3.0"]!).manifest))
            #expect(try store.check().isEmpty)
        }
    }

    @Test("cancelling the update stops every object in flight and changes nothing; the next run resumes their partials")
    func cancelThenResume() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try ContentRelease(folder: folder)
            let store = try release.store("store")
            try store.install(bundle: release.bundles["1.0.0"]!)
            let before = try treeSnapshot(folder + "/store") { $0 == "lock" || $0.hasPrefix("downloads") }
            // Every object body stops after 100 bytes: the link died under three downloads.
            let dead = PacedOrigin(release.origin, stallAfter: 100) { _ in .zero }
            let updater = release.updater(store, fetcher: dead, concurrency: 3)
            let run = Task { try await updater.run() }
            try await eventually { dead.stalled == 3 }
            #expect(dead.inFlight == 3 && dead.stalled == 3)
            run.cancel()
            let result = await run.result
            #expect(throws: UpdateError.cancelled) { try result.get() }
            #expect(dead.inFlight == 0 && dead.cancelled == 3 && dead.started.count == 3, "in flight \(dead.inFlight), cancelled \(dead.cancelled)")
            #expect(try treeSnapshot(folder + "/store") { $0 == "lock" || $0.hasPrefix("downloads") } == before)
            let partials = listing(folder + "/store/downloads/objects").filter { $0.hasSuffix(".part") }
            #expect(partials.count == 3, "\(listing(folder + "/store/downloads/objects"))")

            // The next run, on a live link: the three partial objects resume where they stopped.
            let live = PacedOrigin(release.origin)
            let outcome = try #require(try await release.updater(store, fetcher: live, concurrency: 3).run().outcomes.first)
            #expect(outcome.via == .objects && outcome.resumed, "\(outcome)")
            let resumed = release.origin.requests.filter { $0.status == 206 }
            #expect(resumed.count == 3 && resumed.allSatisfy { $0.headers["Range"] == "bytes=100-" && $0.headers["If-Range"] != nil },
                    "\(resumed.map(\.headers))")
            #expect(try store.check().isEmpty)
            #expect(listing(folder + "/store/downloads/objects").isEmpty, "nothing left once the version installed")
        }
    }

    @Test("a corrupt object stops the objects still in flight, none is asked after it, and the update falls back to the bundle")
    func corruptStopsTheRest() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try ContentRelease(folder: folder)
            let corrupt = try release.objectURL(of: "assets/chunk-3.js")
            var bytes = try readBytes(folder + "/release/" + String(corrupt.dropFirst(release.base.count)))
            bytes[bytes.count / 2] ^= 0xFF
            release.origin.put(corrupt, bytes)
            // The three chunks are the largest objects, so the first three asked; the corrupt one answers at once, the
            // other two after 200 ms: it fails while they are in flight, before the four small ones are asked.
            let paced = PacedOrigin(release.origin) { _ in .milliseconds(200) }
            let slowExceptCorrupt = PacedOriginRouter(paced: paced, fast: corrupt)
            let store = try release.store("store")
            try store.install(bundle: release.bundles["1.0.0"]!)
            let outcome = try #require(try await release.updater(store, fetcher: slowExceptCorrupt, concurrency: 3).run().outcomes.first)
            #expect(outcome.via == .full && (outcome.objectsFallback?.description ?? "").contains(corrupt), "\(outcome)")
            let others = paced.started.filter { $0 != corrupt }
            #expect(paced.inFlight == 0 && paced.cancelled == 2 && paced.finished.isEmpty, "cancelled \(paced.cancelled), finished \(paced.finished)")
            #expect(others.count == 2, "objects asked besides the corrupt one: \(others)")
            #expect(try store.check().isEmpty)
            #expect(listing(folder + "/store/downloads/objects").isEmpty, "no partial left once the bundle installed")
        }
    }
}

/// Sends one URL straight to the origin and the rest through a ``PacedOrigin``.
private struct PacedOriginRouter: AsyncNetworkFetcher {
    let paced: PacedOrigin
    let fast: String

    func fetchResponse(_ request: ResourceRequest, timeouts: FetchTimeouts) async throws -> ResourceResponse {
        request.url == fast ? try await paced.origin.fetchResponse(request, timeouts: timeouts) : try await paced.fetchResponse(request, timeouts: timeouts)
    }
}
