import Foundation
import SatchelCore

/// The nonces of the body proofs seen in the last few minutes, so that each proof is accepted once: a URL that
/// carried a form's proof (in a browser's history, say) cannot be replayed. Bounded: entries older than the
/// proofs' lifetime are dropped, and past `capacity` the oldest go first (a proof older than what is kept
/// would fail its age check anyway, as long as the capacity covers the lifetime's traffic).
final class NonceLedger: Sendable {
    private struct State {
        var seen: [String: Int64] = [:]
        var order: [(nonce: String, time: Int64)] = []
        var start = 0
    }

    private let state = Locked(State())
    let lifetime: Int64
    let capacity: Int

    init(lifetime: Duration = .seconds(240), capacity: Int = 100_000) {
        self.lifetime = lifetime.components.seconds * 1000
        self.capacity = capacity
    }

    /// Records `nonce`; false when it was recorded before.
    func claim(_ nonce: String, now: Int64 = NonceLedger.millisecondsSince1970()) -> Bool {
        state.withLock { state in
            while state.start < state.order.count, state.order[state.start].time < now - lifetime || state.order.count - state.start >= capacity {
                state.seen.removeValue(forKey: state.order[state.start].nonce)
                state.start += 1
            }
            if state.start > 4096, state.start * 2 > state.order.count {
                state.order.removeFirst(state.start)
                state.start = 0
            }
            guard state.seen[nonce] == nil else { return false }
            state.seen[nonce] = now
            state.order.append((nonce, now))
            return true
        }
    }

    static func millisecondsSince1970() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }
}
