import SatchelCore
import SatchelEngine

/// An app's store and engine across its suspensions (decision 0037). iOS ends an app that is suspended holding a file
/// lock in a shared App Group container, and the engine's pins hold one for as long as it serves: ``suspend(whenUnlocked:)``
/// has the store let go of every lock (each pin kept by a lease meanwhile), ``resume()`` has it take them back, and when
/// the app came back after a lease ended and another process swept versions the engine serves, the engine reads the
/// active versions again, so that no request is answered from a folder that is gone.
///
/// Platform-neutral, tested on Linux; the Apple adapter's `SatchelBackgroundLocks` calls it from UIKit's notifications.
/// Call both from one thread (the main thread).
public final class StoreSuspension: Sendable {
    /// Why resuming did not do all it should.
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// The store could not take its pins back (its error): they stay let go, kept by their lease, and the next
        /// ``StoreSuspension/resume()`` tries again.
        case notResumed(String)
        /// Versions the engine served were lost, and it could not read the active versions again (its error): requests
        /// for the lost versions' files fail until a reload succeeds.
        case notReloaded(String)

        public var description: String {
            switch self {
            case .notResumed(let error): "satchel: the store could not take its pins back after the app's suspension: \(error)"
            case .notReloaded(let error):
                "satchel: versions the engine served were removed while the app was suspended, and it could not read the active ones again: \(error)"
            }
        }
    }

    /// How a return from the background went.
    public struct Outcome: Sendable, Equatable {
        /// What the store found; nil when it could not resume (``failures``).
        public let resumed: LocksResumed?
        /// Whether the engine read the active versions again, because some it served were lost.
        public let reloaded: Bool
        public let failures: [Failure]
    }

    public let locks: any SuspendableLocks
    public let engine: ResourceEngine

    /// - Parameters:
    ///   - locks: the app's store (`PackageStore`).
    ///   - engine: the engine that serves from it, pinned by it.
    public init(locks: any SuspendableLocks, engine: ResourceEngine) {
        self.locks = locks
        self.engine = engine
    }

    /// The app goes to the background: the store lets go of every lock. `whenUnlocked` runs once no operation of the
    /// store holds one (at once when none does): until then the app must keep running (a background task).
    @discardableResult
    public func suspend(whenUnlocked: @escaping @Sendable () -> Void = {}) -> LocksSuspended {
        locks.suspend(whenUnlocked: whenUnlocked)
    }

    /// The app runs again: the store takes its pins back, and the engine reads the active versions again if versions it
    /// served were swept meanwhile (the new versions it then serves are pinned, held).
    public func resume() -> Outcome {
        let resumed: LocksResumed
        do { resumed = try locks.resume() } catch {
            return Outcome(resumed: nil, reloaded: false, failures: [.notResumed("\(error)")])
        }
        guard !resumed.lost.isEmpty else { return Outcome(resumed: resumed, reloaded: false, failures: []) }
        do { try engine.reload() } catch {
            return Outcome(resumed: resumed, reloaded: false, failures: [.notReloaded("\(error)")])
        }
        return Outcome(resumed: resumed, reloaded: true, failures: [])
    }
}
