import Dispatch
import SatchelCore
import SatchelEngine

/// The launch that shows the app's pages (decision 0036), which is what a trial's launches count: it begins when the
/// container is first asked for a page (the first request of a web view through its scheme handler, in practice the
/// first page's document), not when the process starts. A process the system starts in the background to update shows
/// no page, so it spends no trial however often it runs.
///
/// Beginning it is one step with two parts, in this order, before any answer is read from a package: the store counts the
/// launch against every trial (a trial past its launches falls back: ``LaunchRecords/countPageLaunch()``), then the
/// engine reads the active versions again and pins them (``ResourceEngine/reload()``). So the versions a launch shows are
/// those active when it showed its first page (decision 0008's pins, moved from the engine's creation to this moment),
/// and a version that ran out of launches never serves a page of the launch that failed it. It happens once, however
/// many views, pages and requests follow; requests that arrive while it is under way wait for it.
///
/// Both WebKit adapters make one from their `trials:` store and give it to their ``SchemeTaskDriver``; the app calls
/// nothing. Release health's sessions are these same launches (decision 0036 says where it counts them).
public final class PageLaunch: Sendable {
    /// Why beginning the launch did not do all it should; the pages show nonetheless (better the versions pinned when
    /// the engine was made than no page).
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// The store could not count the launch (its error): no trial spent it, none fell back.
        case notCounted(String)
        /// The engine could not read the active versions again (its error): it serves what it pinned when it was made,
        /// which may be a version the count just failed.
        case notRepinned(String)

        public var description: String {
            switch self {
            case .notCounted(let error): "satchel: this launch was not counted against the trials: \(error)"
            case .notRepinned(let error): "satchel: the engine could not pin this launch's versions: \(error)"
            }
        }
    }

    /// How the launch began.
    public struct Outcome: Sendable, Equatable {
        /// What the count did to the trials; nil when the store could not count (``failures``).
        public let count: LaunchCount?
        public let failures: [Failure]
    }

    public let records: any LaunchRecords
    public let engine: ResourceEngine
    private let state = Locked(State.notBegun)

    private enum State {
        case notBegun
        /// Counting and pinning, on a thread of its own; these wait for the outcome.
        case beginning([CheckedContinuation<Outcome, Never>])
        case begun(Outcome)
    }

    public init(records: any LaunchRecords, engine: ResourceEngine) {
        self.records = records
        self.engine = engine
    }

    /// How the launch began; nil until it has (a process that shows no page never begins one).
    public var outcome: Outcome? {
        state.withLock { state in
            if case .begun(let outcome) = state { return outcome }
            return nil
        }
    }

    /// Begins the launch unless it has begun, and returns how it began. The first call counts and pins; a call while
    /// that is under way waits for it, and every later one returns at once with the same outcome.
    public func begin() async -> Outcome {
        enum Next {
            case done(Outcome)
            case wait
            case start
        }
        // Decided and registered under one lock, so exactly one caller starts and none is missed by the resumption.
        return await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
            let next = state.withLock { state -> Next in
                switch state {
                case .begun(let outcome):
                    return .done(outcome)
                case .beginning(let waiting):
                    state = .beginning(waiting + [continuation])
                    return .wait
                case .notBegun:
                    state = .beginning([continuation])
                    return .start
                }
            }
            switch next {
            case .done(let outcome): continuation.resume(returning: outcome)
            case .wait: break
            case .start:
                // The count takes the store's lock, which an install (a foreground update) may hold for seconds: it
                // waits on a thread of its own, never on the caller's (the main thread, an executor of the pool).
                DispatchQueue.global(qos: .userInitiated).async { self.finish(self.countAndPin()) }
            }
        }
    }

    private func countAndPin() -> Outcome {
        var count: LaunchCount?
        var failures: [Failure] = []
        do { count = try records.countPageLaunch() } catch { failures.append(.notCounted("\(error)")) }
        // Even when the count failed: the launch shows what is active now, as it would have had the count succeeded.
        do { try engine.reload() } catch { failures.append(.notRepinned("\(error)")) }
        return Outcome(count: count, failures: failures)
    }

    private func finish(_ outcome: Outcome) {
        let waiting = state.withLock { state -> [CheckedContinuation<Outcome, Never>] in
            guard case .beginning(let waiting) = state else { return [] }
            state = .begun(outcome)
            return waiting
        }
        for continuation in waiting { continuation.resume(returning: outcome) }
    }
}
