import SatchelCore

/// Downloads content-addressed files, several at a time: the objects of an update (docs/formats.md, "Objects and
/// patches"), and any other file named by its SHA-256 (a per-file diff is one more ``DownloadTarget``). Each is a
/// ``ResumableDownload`` into `folder` (a partial with its validator, resumed by a later attempt or run) checked against
/// its size and SHA-256 before it is handed back; what a file is for is the caller's business.
///
/// At most `concurrency` requests are in flight: on a phone every request waits a round trip, and one after another a
/// few hundred objects cost minutes of idle link. Memory stays bounded by the same number: each download streams its
/// chunks (at most 1 MiB) to its own file.
///
/// The first failure cancels the downloads still running and is thrown: the caller gives the whole way up (objects fall
/// back to the delta or the bundle), so bytes still coming would be wasted; their partials stay for a later run.
/// Targets the caller can do without (per-file diffs, each of which has its object to fall back to) are the
/// exception: their failure is recorded in ``Fetched/refused`` and the others go on, unless it is a cancellation or a
/// full disk, which no other file would get past either. Cancelling the calling task cancels every download in flight
/// (each fetch and each body it is reading).
struct ContentFetch: Sendable {
    let download: ResumableDownload
    let folder: String
    let concurrency: Int

    init(download: ResumableDownload, folder: String, concurrency: Int) {
        self.download = download
        self.folder = folder
        self.concurrency = max(1, concurrency)
    }

    struct Fetched: Sendable {
        /// The verified file of each target, by the target's SHA-256.
        var paths: [String: String]
        var received: Int64
        var resumed: Bool
        /// Why each tolerated target that failed was refused, by its SHA-256.
        var refused: [String: UpdateError] = [:]
        /// Bytes received for each target, by its SHA-256, a refused one's included: what the caller reports per kind.
        var receivedBy: [String: Int64] = [:]
    }

    /// Fetches every target (the same SHA-256 twice is fetched once). Every byte received, a refused download's
    /// included, is added to `spent`, also when this throws. `progress` gets the bytes held of all targets and their
    /// total, from whichever download moved. A target whose SHA-256 is in `tolerating` may fail without failing the
    /// rest (``Fetched/refused``).
    func fetch(
        _ targets: [DownloadTarget], tolerating: Set<String> = [], spent: inout Int64,
        progress: @Sendable (Int64, Int64) -> Void = { _, _ in }
    ) async throws(UpdateError) -> Fetched {
        var unique: [String: DownloadTarget] = [:]
        for target in targets where unique[target.sha256] == nil { unique[target.sha256] = target }
        // Largest first: a big file started last would run alone at the end, its round trips no longer overlapped.
        let queue = unique.values.sorted { ($0.size, $1.sha256) > ($1.size, $0.sha256) }
        let tally = ProgressTally(count: queue.count, total: queue.reduce(0) { $0 + $1.size })
        let download = download
        let folder = folder

        struct Finished: Sendable {
            var index: Int
            var result: Result<DownloadReport, UpdateError>
            var received: Int64
        }

        return try await withoutActuallyEscaping(progress) { progress async throws(UpdateError) -> Fetched in
            let outcome = await withTaskGroup(of: Finished.self, returning: (Fetched, UpdateError?, Int64).self) { group in
                func start(_ index: Int) {
                    let target = queue[index]
                    group.addTask {
                        var received: Int64 = 0
                        do throws(UpdateError) {
                            let report = try await download.download(target, into: folder, counting: &received) { offset, _ in
                                progress(tally.moved(index, to: offset), tally.total)
                            }
                            progress(tally.moved(index, to: target.size), tally.total)
                            return Finished(index: index, result: .success(report), received: received)
                        } catch {
                            return Finished(index: index, result: .failure(error), received: received)
                        }
                    }
                }
                var next = 0
                while next < min(concurrency, queue.count) {
                    start(next)
                    next += 1
                }
                var fetched = Fetched(paths: [:], received: 0, resumed: false)
                var failure: UpdateError?
                var spent: Int64 = 0
                for await finished in group {
                    spent += finished.received
                    let sha256 = queue[finished.index].sha256
                    fetched.receivedBy[sha256, default: 0] += finished.received
                    switch finished.result {
                    case .success(let report):
                        fetched.paths[sha256] = report.path
                        fetched.received += report.received
                        fetched.resumed = fetched.resumed || report.resumed
                        if failure == nil, next < queue.count {
                            start(next)
                            next += 1
                        }
                    case .failure(let error) where failure == nil && tolerating.contains(sha256) && Self.isTolerable(error):
                        fetched.refused[sha256] = error
                        if next < queue.count {
                            start(next)
                            next += 1
                        }
                    case .failure(let error):
                        // The others' cancellations that follow say nothing new: the first failure is the reason.
                        if failure == nil {
                            failure = error
                            group.cancelAll()
                        }
                    }
                }
                return (fetched, failure, spent)
            }
            spent += outcome.2
            // Children cancelled by the group report `.cancelled`; only the caller's own cancellation is one.
            if Task.isCancelled { throw .cancelled }
            if let failure = outcome.1 { throw failure }
            return outcome.0
        }
    }

    /// Whether a tolerated target's failure may leave the others running: not a cancellation (the update's own), nor a
    /// full disk (what would come instead would not fit either).
    static func isTolerable(_ error: UpdateError) -> Bool {
        switch error {
        case .cancelled, .diskFull: false
        default: true
        }
    }
}

/// The bytes held of every target of a ``ContentFetch``, summed as each download reports its own offset.
private final class ProgressTally: Sendable {
    let total: Int64
    private let state: Locked<(offsets: [Int64], sum: Int64)>

    init(count: Int, total: Int64) {
        self.total = total
        state = Locked((Array(repeating: 0, count: count), 0))
    }

    /// Records that target `index` now holds `offset` bytes; returns the sum over all targets.
    func moved(_ index: Int, to offset: Int64) -> Int64 {
        state.withLock { state in
            state.sum += offset - state.offsets[index]
            state.offsets[index] = offset
            return state.sum
        }
    }
}
