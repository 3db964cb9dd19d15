import Foundation
import SatchelCore
@testable import SatchelEngine
import SatchelHTTP
import SatchelPlatform
import SatchelTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A cookie store that answers without suspending, as the app's jar does from its snapshot once warm: the load's
/// cookie task then reaches the fetch within microseconds of being made.
private struct ImmediateCookies: CookieProvider {
    func cookieHeader(for url: String, request: ResourceRequest) async throws(CookieStoreError) -> String? { "session=1" }
}

/// Counts the fetches made and the handles cancelled; a fetch never answers until cancelled.
private final class HangingFetcher: NetworkFetcher, @unchecked Sendable {
    let counts = Locked((fetched: 0, cancelled: 0))

    func fetch(
        _ request: ResourceRequest, timeouts: FetchTimeouts, on executor: any AnswerExecutor,
        completion: @escaping @Sendable (Result<ResourceResponse, any Error>) -> Void
    ) -> (any FetchHandle)? {
        counts.withLock { $0.fetched += 1 }
        return Handle(self, completion)
    }

    final class Handle: FetchHandle, @unchecked Sendable {
        let fetcher: HangingFetcher
        let completion: Locked<(@Sendable (Result<ResourceResponse, any Error>) -> Void)?>
        init(_ fetcher: HangingFetcher, _ completion: @escaping @Sendable (Result<ResourceResponse, any Error>) -> Void) {
            self.fetcher = fetcher
            self.completion = Locked(completion)
        }
        func cancel() {
            guard let completion = completion.withLock({ $0.take() }) else { return }
            fetcher.counts.withLock { $0.cancelled += 1 }
            completion(.failure(CancellationError()))
        }
    }
}

@Suite("A load's cancellation reaches its fetch")
struct LoadCancelRaceTests {
    /// The load's cookie task can send the fetch before the strategy's thread, which made that task, goes on: a thread
    /// of low priority is preempted by the pool thread the new task wakes, as an app's busy machine does at random.
    /// The fetch's handle must then still be what a cancel reaches (the webkit-test's "abandoned before its response
    /// started" check failed about one run in four when it was not).
    @Test("a load cancelled after its fetch went out cancels that fetch, even when the cookie task overtook its maker")
    func cancelReachesFetchAfterCookieTask() async throws {
        try await withTemporaryFolder { folder async throws in
            let package = try makePackage(in: folder, files: ["index.html": text("home")])
            let engine = try ResourceEngine(source: FolderSource([package]))
            let fetcher = HangingFetcher()
            let loader = ResourceLoader(
                engine: engine, fetcher: fetcher, policy: NetworkPolicy(allowedHosts: [try HostPattern("m.shop.com")], cookies: ImmediateCookies()))
            let rounds = 2000
            let outcome = Locked((rounds: 0, missed: 0, stuck: false))
            // A thread of its own, whose priority can be lowered (and whose waits hold no thread of the pool).
            await onOwnThread {
                #if canImport(Glibc)
                var parameters = sched_param()
                // SCHED_IDLE (5; glibc names it only under _GNU_SOURCE): any woken thread preempts this one at once.
                _ = sched_setscheduler(0, 5, &parameters)
                #endif
                for round in 1...rounds {
                    guard case .pending(let handle) = loader.start(ResourceRequest(url: "satchel://m.shop.com/api"), on: InlineExecutor.shared, completion: { _ in }) else {
                        return
                    }
                    // A bound against a hang, not a speed: in a full parallel run the pool that runs the cookie task
                    // may be busy for many seconds, and this thread of idle priority runs only when a core is free.
                    let deadline = Date().addingTimeInterval(600)
                    while fetcher.counts.withLock({ $0.fetched }) < round {
                        guard Date() < deadline else { return outcome.withLock { $0.stuck = true } }
                        sched_yield()
                    }
                    handle.cancel()
                    // The fetch is counted before the load holds its handle: a cancel in between reaches it a moment
                    // later, from the cookie task. A cancel that reached the wrong handle never does.
                    let reached = Date().addingTimeInterval(30)
                    while fetcher.counts.withLock({ $0.cancelled }) < round, Date() < reached { sched_yield() }
                    let missed = fetcher.counts.withLock { $0.cancelled } < round
                    outcome.withLock { $0.rounds = round; if missed { $0.missed += 1 } }
                    // A missed cancel leaves its fetch hanging and the counts uneven: one is proof enough.
                    if missed { return }
                }
            }
            let result = outcome.withLock { $0 }
            #expect(!result.stuck, "a fetch was never made")
            #expect(result.missed == 0, "\(result.missed) of \(result.rounds) cancels did not reach the fetch")
            #expect(result.rounds == rounds)
        }
    }
}
