/// A store that lets go of every file lock while its app may be suspended, and takes them back when the app runs again
/// (decision 0037). iOS ends an app that is suspended holding a file lock on a file in a shared App Group container
/// (exception 0xdead10cc); a store's pins hold theirs for as long as an engine serves. `PackageStore` implements it;
/// SatchelHost's `StoreSuspension` calls it, with the engine that must read its versions again when some were lost.
public protocol SuspendableLocks: AnyObject, Sendable {
    /// Lets go of every pin's lock, leaving each pin file with a lease that keeps its versions from other processes'
    /// deletions until the lease ends; from now until ``resume()`` nothing that would hold the store's lock starts, and
    /// an operation holding it stops at its next step. `whenUnlocked` runs once no lock of this store is held (at once
    /// when none is), on the thread that lets go of the last one.
    @discardableResult
    func suspend(whenUnlocked: @escaping @Sendable () -> Void) -> LocksSuspended

    /// Takes each pin's lock again. A pin another process swept once its lease ended is made again when its versions
    /// are still the folders it pinned; versions that are not are reported, and whoever serves them must read the
    /// active versions again (`ResourceEngine.reload()`).
    func resume() throws -> LocksResumed
}

/// What suspending did.
public struct LocksSuspended: Sendable, Equatable {
    /// Pins whose lock was let go; each is kept by its lease meanwhile.
    public var pins: Int
    /// When the leases end, in milliseconds since 1970 (nil when no pin was let go).
    public var leaseEnds: Int64?
    /// Pins whose lease could not be written (the error, with the pin file): their lock was let go all the same, so
    /// while suspended they keep nothing from another process's deletions; ``SuspendableLocks/resume()`` finds out.
    public var unprotected: [String]
    /// Operations that held a lock when suspending began; `whenUnlocked` runs once they have let go.
    public var inFlight: Int

    public init(pins: Int = 0, leaseEnds: Int64? = nil, unprotected: [String] = [], inFlight: Int = 0) {
        self.pins = pins
        self.leaseEnds = leaseEnds
        self.unprotected = unprotected
        self.inFlight = inFlight
    }
}

/// What resuming found.
public struct LocksResumed: Sendable, Equatable {
    /// Pins found as they were left and locked again.
    public var held: Int
    /// Pins another process swept after their lease ended, whose versions were still the folders pinned: pinned again.
    public var repinned: Int
    /// Versions a swept pin kept that are gone, or are no longer the folder pinned (removed, perhaps installed again):
    /// whatever serves them must read the active versions again.
    public var lost: [PackageID: Set<SemanticVersion>]

    public init(held: Int = 0, repinned: Int = 0, lost: [PackageID: Set<SemanticVersion>] = [:]) {
        self.held = held
        self.repinned = repinned
        self.lost = lost
    }
}
