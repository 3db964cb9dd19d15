import SatchelCore
import SatchelHTTP

/// What the jar knows of its store's cookies between round trips (issue 48). Asking the store for every cookie on
/// every upstream request and every `document.cookie` read was a round trip to WebKit's network process each time;
/// the store's change observer (`WKHTTPCookieStoreObserver`, WebKitCookieManager's `changed`) keeps a copy honest
/// instead:
/// - The copy is unknown at first and again whenever the store says it changed (WebKit's callback carries no detail:
///   what changed cannot be applied, only re-read). The next read then makes one round trip, and every read that
///   comes while it is in flight shares it.
/// - The jar's own writes are applied to a known copy as soon as the store has done them, so a read right after a
///   write sees it before the observer's callback for it comes. That callback comes later and costs one round trip
///   more, which loses nothing: the store holds the write by then.
/// - A generation counts changes, told by the store or made by the jar. A round trip's answer is kept only if no
///   change came while it was in flight: it may have been taken before the change. The readers that joined it before
///   the change still get that answer (they asked before the change); a reader that comes after the change starts a
///   round trip of its own.
/// - A write whose store call did not answer may still land (the platform goes on with it): the copy becomes unknown.
final class CookieSnapshot: Sendable {
    typealias Answer = Result<[Cookie], CookieStoreError>

    private struct State {
        var generation = 0
        /// nil: unknown, the next read asks the store.
        var cookies: [Cookie]?
        /// The round trip in flight, and the generation it began in: only a reader of that generation may share it.
        var roundTrip: (generation: Int, task: Task<Answer, Never>)?
        /// Readers waiting for `roundTrip`, its starter included (for ``readersWaiting(atLeast:)``).
        var waiting = 0
        var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

        mutating func changed() {
            generation += 1
            cookies = nil
        }

        mutating func joined() {
            waiting += 1
            let reached = waiters.filter { $0.count <= waiting }
            waiters.removeAll { $0.count <= waiting }
            for waiter in reached { waiter.continuation.resume() }
        }
    }

    private let state = Locked(State())

    /// The store's cookies (expired ones among them): the copy when it is known, else the answer of one round trip
    /// (`read`), shared with every reader that comes while it is in flight.
    func cookies(reading read: @escaping @Sendable () async throws(CookieStoreError) -> [Cookie]) async throws(CookieStoreError) -> [Cookie] {
        enum Step {
            case known([Cookie])
            case wait(Task<Answer, Never>)
        }
        let step = state.withLock { state -> Step in
            if let cookies = state.cookies { return .known(cookies) }
            if let roundTrip = state.roundTrip, roundTrip.generation == state.generation {
                state.joined()
                return .wait(roundTrip.task)
            }
            let generation = state.generation
            let task = Task { [self] () -> Answer in
                let answer: Answer
                do throws(CookieStoreError) {
                    answer = .success(try await read())
                } catch {
                    answer = .failure(error)
                }
                finished(answer, began: generation)
                return answer
            }
            state.roundTrip = (generation, task)
            state.waiting = 0
            state.joined()
            return .wait(task)
        }
        switch step {
        case .known(let cookies):
            return cookies
        case .wait(let task):
            return try await task.value.get()
        }
    }

    /// A round trip begun in generation `began` answered: its answer becomes the copy if nothing changed meanwhile.
    private func finished(_ answer: Answer, began generation: Int) {
        state.withLock { state in
            // A later round trip (after a change) is not this one's to clear.
            guard state.roundTrip?.generation == generation else { return }
            state.roundTrip = nil
            state.waiting = 0
            if state.generation == generation, case .success(let cookies) = answer { state.cookies = cookies }
        }
    }

    /// The store says its cookies changed (or a write's outcome is unknown): the next read asks it.
    func storeChanged() {
        state.withLock { $0.changed() }
    }

    /// The jar's own write is in the store: a known copy takes it at once (`apply`); a round trip in flight may have
    /// been answered before the write, so its answer is not kept.
    func wrote(_ apply: (inout [Cookie]) -> Void) {
        state.withLock { state in
            state.generation += 1
            if var cookies = state.cookies {
                apply(&cookies)
                state.cookies = cookies
            }
        }
    }

    /// Every cookie was deleted (logout): the store is known to be empty, whatever was known before.
    func cleared() {
        state.withLock { state in
            state.generation += 1
            state.cookies = []
        }
    }

    /// Returns once `count` readers wait for the round trip in flight, its starter included. For tests, which cannot
    /// otherwise tell that readers have come before they let the round trip answer.
    func readersWaiting(atLeast count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            state.withLock { state in
                if state.roundTrip != nil, state.waiting >= count { continuation.resume() } else { state.waiters.append((count, continuation)) }
            }
        }
    }
}
