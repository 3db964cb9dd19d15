import SatchelCore

/// No lock held while the app is suspended (decision 0037). iOS ends an app that is suspended holding a file lock on a
/// file in a shared App Group container (0xdead10cc), and a store there holds one for as long as an engine serves: each
/// pin's flock. Suspending lets go of every pin's lock, after writing into the pin file a lease that keeps its versions
/// from other processes' deletions; the store and pin locks, which operations hold for moments, are not taken meanwhile.
/// Resuming takes the pins' locks back, and tells what was lost if the app came back after a lease ended and another
/// process swept the pin.
extension PackageStore: SuspendableLocks {
    /// Lets go of every lock for the app's suspension: call it when the app goes to the background (the Apple adapter's
    /// `SatchelBackgroundLocks` does), and ``resume()`` when it comes back.
    ///
    /// - Each pin this store made lets go of its lock, its file kept with a lease until now plus
    ///   ``StoreConfiguration/suspendedPinLease``: another process's gc, remove or recovery keeps its versions until
    ///   then. A pin made while suspended is made that way.
    /// - Until ``resume()``, what would take the store lock (install, activate, confirm, rollback, remove, gc, a
    ///   launch's count) is refused with ``StoreError/suspended(store:lock:)``, and an install under way stops before its
    ///   next file, leaving the store as it was. Pinning still takes the pin lock, for moments, and is counted below.
    /// - `whenUnlocked` runs once no operation of this store holds a lock: at once when none does, else on the thread
    ///   of the operation that lets go last (or in ``resume()``, if that comes first). The app keeps running until then
    ///   (a background task), so that no lock is held when iOS suspends it.
    ///
    /// Call it and ``resume()`` from one thread (the main thread): they are the two edges of one state.
    @discardableResult
    public func suspend(whenUnlocked: @escaping @Sendable () -> Void = {}) -> LocksSuspended {
        let pins = suspension.withLock { state -> [VersionPin] in
            state.suspended = true
            state.pins.removeAll { $0.pin == nil }
            return state.pins.compactMap(\.pin)
        }
        let until = leaseEnd()
        var report = LocksSuspended()
        for pin in pins {
            guard case .suspended(let failure) = pin.suspend(until: until) else { continue }
            report.pins += 1
            if let failure { report.unprotected.append("\(pin.path): \(failure)") }
        }
        if report.pins > 0 { report.leaseEnds = until }
        // Checked and registered under one lock with the count that leaveLocked() lowers: no release falls between.
        report.inFlight = suspension.withLock { state -> Int in
            if state.holders > 0 { state.whenUnlocked.append(whenUnlocked) }
            return state.holders
        }
        if report.inFlight == 0 { whenUnlocked() }
        return report
    }

    /// Takes back the locks ``suspend(whenUnlocked:)`` let go, under the pin lock (so that no sweep runs meanwhile), and
    /// ends the suspension: the store lock may be taken again.
    ///
    /// A pin whose file is still the one it left was found live by every sweep, so its versions are all there: it is
    /// locked again. A pin another process swept after its lease ended (the app came back late) may have lost its
    /// versions: those whose folder is still the one pinned are pinned again in a new file, and the others are
    /// reported in ``LocksResumed/lost``; the engine serving them must read the active versions again
    /// (`ResourceEngine.reload()`, which SatchelHost's `StoreSuspension` calls).
    ///
    /// - Throws: when the pin lock cannot be taken or a pin cannot be made again; the pins not yet resumed stay
    ///   suspended, still kept by their lease, and a later call takes them back.
    public func resume() throws(StoreError) -> LocksResumed {
        let (pins, waiting) = suspension.withLock { state -> ([VersionPin], [@Sendable () -> Void]) in
            state.suspended = false
            state.pins.removeAll { $0.pin == nil }
            defer { state.whenUnlocked = [] }
            return (state.pins.compactMap(\.pin), state.whenUnlocked)
        }
        for callback in waiting { callback() }
        let suspended = pins.filter(\.isSuspended)
        guard !suspended.isEmpty else { return LocksResumed() }
        try enterLocked(refusingWhileSuspended: false)
        defer { leaveLocked() }
        return try holdingPinLock { () throws(StoreError) -> LocksResumed in
            var resumed = LocksResumed()
            for pin in suspended {
                switch try pin.resume(folder: layout.pins) {
                case .held: resumed.held += 1
                case .swept(let repinned, let lost):
                    if repinned { resumed.repinned += 1 }
                    for (id, version) in lost { resumed.lost[id, default: []].insert(version) }
                case .notSuspended: break
                }
            }
            return resumed
        }
    }

    /// When a lease written now ends, in milliseconds since 1970.
    func leaseEnd() -> Int64 {
        let lease = configuration.suspendedPinLease.components
        return configuration.now() + lease.seconds * 1000 + lease.attoseconds / 1_000_000_000_000_000
    }

    /// Counts an operation about to take the store lock or the pin lock; while suspended, one that would take the store
    /// lock is refused instead.
    func enterLocked(refusingWhileSuspended: Bool) throws(StoreError) {
        let refused = suspension.withLock { state -> Bool in
            if refusingWhileSuspended, state.suspended { return true }
            state.holders += 1
            return false
        }
        if refused { throw .suspended(store: layout.root, lock: layout.lockFile) }
    }

    /// Ends what ``enterLocked(refusingWhileSuspended:)`` counted, once its lock is let go; the last one out while
    /// suspended runs what waits for no lock to be held.
    func leaveLocked() {
        let waiting = suspension.withLock { state -> [@Sendable () -> Void] in
            state.holders -= 1
            guard state.holders == 0, state.suspended else { return [] }
            defer { state.whenUnlocked = [] }
            return state.whenUnlocked
        }
        for callback in waiting { callback() }
    }

    /// The error an operation under way meets at its next step once the store is suspended.
    func suspendedRefusal() -> StoreError? {
        suspension.withLock { $0.suspended } ? .suspended(store: layout.root, lock: layout.lockFile) : nil
    }
}
