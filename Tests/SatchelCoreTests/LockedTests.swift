import Foundation
import Testing

@testable import SatchelCore

@Suite("Locked: one allocation for the value and its lock")
struct LockedTests {
    /// Counts how many of its instances are alive.
    final class Tracked: Sendable {
        static let alive = Locked(0)
        init() { Self.alive.withLock { $0 += 1 } }
        deinit { Self.alive.withLock { $0 -= 1 } }
    }

    @Test("the value is released exactly once, when the last copy of the Locked goes, and a replaced value at once")
    func releasesTheValueOnce() {
        let before = Tracked.alive.withLock { $0 }
        do {
            let locked = Locked([Tracked(), Tracked()])
            let copy = locked
            #expect(Tracked.alive.withLock { $0 } == before + 2)
            copy.withLock { $0.removeFirst() }
            #expect(Tracked.alive.withLock { $0 } == before + 1)
            #expect(locked.withLock { $0.count } == 1)
        }
        #expect(Tracked.alive.withLock { $0 } == before)
    }

    @Test("increments from many threads are none of them lost")
    func excludes() async {
        let counter = Locked(0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask { for _ in 0..<10_000 { counter.withLock { $0 += 1 } } }
            }
        }
        #expect(counter.withLock { $0 } == 80_000)
    }

    @Test("a throwing body leaves the lock free")
    func unlocksOnThrow() {
        struct Failure: Error {}
        let locked = Locked(1)
        #expect(throws: Failure.self) { try locked.withLock { _ in throw Failure() } }
        #expect(locked.withLock { $0 } == 1)
    }
}
