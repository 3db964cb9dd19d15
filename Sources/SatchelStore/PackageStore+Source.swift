import Dispatch
import SatchelCore
import SatchelPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The store is the engine's package source: the active version of every package (an installed folder, or a
/// built-in bundle served from its archive), a cheap change token, and pins that keep served versions out of
/// gc's reach.
extension PackageStore: PackageSource {
    public func servedPackages() throws -> [ServedPackage] {
        var served: [ServedPackage] = []
        for id in try packageIDs() {
            guard let state = try state(of: id) else { continue }
            if let builtIn = builtIns[id], builtIn.version == state.active {
                served.append(ServedPackage(manifest: builtIn.manifest, files: .archive(builtIn.bundle)))
            } else if FileSystem.isDirectory(layout.version(id, state.active)) {
                served.append(ServedPackage(manifest: try installedManifest(id, state.active), folder: layout.version(id, state.active)))
            }
            // Otherwise the active version is nowhere (a built-in this store is no longer given): not served.
        }
        return served
    }

    /// Reads the active versions and pins them under the pin lock, which every deletion also takes: no version
    /// can be deleted between being read as active and being pinned.
    public func pinnedPackages() throws -> (packages: [ServedPackage], pin: any Sendable) {
        try enterLocked(refusingWhileSuspended: false)
        defer { leaveLocked() }
        let pinLock = try StoreLock(path: layout.pinLock)
        return try pinned(holding: pinLock)
    }

    /// Nil while gc, a removal or another engine's pinning holds the pin lock (they take milliseconds to seconds): the
    /// engine keeps serving what it pinned and tries again on a later request.
    public func pinnedPackagesWithoutWaiting() throws -> (packages: [ServedPackage], pin: any Sendable)? {
        try enterLocked(refusingWhileSuspended: false)
        defer { leaveLocked() }
        guard let pinLock = StoreLock.tryLock(path: layout.pinLock) else { return nil }
        return try pinned(holding: pinLock)
    }

    /// The active versions and a pin on them, read and made while `pinLock` is held, so that no removal falls between.
    private func pinned(holding pinLock: StoreLock) throws -> (packages: [ServedPackage], pin: any Sendable) {
        defer { withExtendedLifetime(pinLock) {} }
        let packages = try servedPackages()
        pinningHook.withLock { $0 }?()
        return (packages, try makePin(Self.installedVersions(packages)))
    }

    /// How long a token computed from the disk stays fresh. An engine in immediate mode asks for the token on
    /// every request, often twice (the server's response cache asks for the generation, then the route); at tens of
    /// thousands of requests a second even one `stat` each shows. Switches made through this same object are seen at
    /// once; another process's within this interval.
    public static let changeTokenFreshness: UInt64 = 1_000_000  // 1 ms

    /// The store's change counter (``StoreGeneration``, one `stat` of `<store>/generation`, whatever the number of
    /// packages): every install, activation, state change, removal and recovery advances it under the store lock.
    /// While it is odd (a change under way, or a writer that died in the middle of one) it is not trusted and the token
    /// also holds what every package's `state.json` looks like, as it did before the counter existed, so that a change
    /// whose closing bump never came is still seen.
    public func changeToken() -> [Int64] {
        let now = DispatchTime.now().uptimeNanoseconds
        let (fresh, switches) = tokenCache.withLock { cache -> ([Int64]?, Int) in
            guard let recent = cache.recent, recent.switches == cache.switches, now &- recent.at < Self.changeTokenFreshness else { return (nil, cache.switches) }
            return (recent.token, cache.switches)
        }
        if let fresh { return fresh }
        // Read with the switch count seen before it: a switch made meanwhile leaves this token stale at once.
        let token = tokenFromDisk()
        tokenCache.withLock { $0.recent = (token, now, switches) }
        return token
    }

    private func tokenFromDisk() -> [Int64] {
        let counter = generation.read()
        let head = [counter?.inode ?? -1, counter?.value ?? -1]
        if let counter, counter.value % 2 == 0 { return head }
        return head + everyState()
    }

    /// The token from before the counter: the packages folder's time, then each `state.json`'s inode and time (every
    /// state switch renames a new file into place, so its inode changes). One `stat` per package.
    private func everyState() -> [Int64] {
        var token: [Int64] = []
        var folder = stat()
        // Adding or removing a package changes the folder's modification time; then each state file.
        if stat(layout.packages, &folder) == 0 {
            token.append(FileTimes.modified(folder))
        }
        for name in packageNamesCache(folderToken: token.first ?? 0) {
            var info = stat()
            guard stat(layout.packages + "/" + name + "/state.json", &info) == 0 else { continue }
            let nanoseconds = FileTimes.modified(info)
            token.append(Int64(bitPattern: UInt64(info.st_ino)))
            token.append(nanoseconds)
        }
        return token
    }

    /// The package folder names, listed again only when the folder's modification time changed.
    private func packageNamesCache(folderToken: Int64) -> [String] {
        packageNames.withLock { cache in
            if cache.token != folderToken || cache.names == nil {
                cache = (folderToken, FileSystem.list(layout.packages))
            }
            return cache.names ?? []
        }
    }

    public func pin(_ packages: [ServedPackage]) throws -> any Sendable {
        try pin(Self.installedVersions(packages))
    }

    /// The installed versions among served packages (a built-in has no folder to keep).
    private static func installedVersions(_ packages: [ServedPackage]) -> [PackageID: SemanticVersion] {
        Dictionary(packages.filter { $0.folder != nil }.map { ($0.manifest.id, $0.manifest.version) }) { first, _ in first }
    }

    // MARK: Pins

    /// Records that a running engine serves these versions, so that gc, remove and recovery keep them. The pin
    /// lasts until the returned value is released or the process dies (it is an flock, which the kernel drops). While
    /// the store is suspended the pin is made without its lock, kept by a lease (``suspend(whenUnlocked:)``).
    public func pin(_ versions: [PackageID: SemanticVersion]) throws(StoreError) -> VersionPin {
        try enterLocked(refusingWhileSuspended: false)
        defer { leaveLocked() }
        return try holdingPinLock { () throws(StoreError) in try makePin(versions) }
    }

    /// Runs `body` holding the pin lock, let go when it returns.
    func holdingPinLock<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        let pinLock = try StoreLock(path: layout.pinLock)
        defer { withExtendedLifetime(pinLock) {} }
        return try body()
    }

    /// Creates a pin, remembering each version's folder (a pin swept while suspended is made again only on the same
    /// folders), and keeps it among this store's pins; the caller holds the pin lock. Made while the store is suspended,
    /// or while a suspension begins, it lets go of its lock like the others.
    private func makePin(_ versions: [PackageID: SemanticVersion]) throws(StoreError) -> VersionPin {
        let folders = Dictionary(uniqueKeysWithValues: versions.map { ($0.key, layout.version($0.key, $0.value)) })
        let suspended = suspension.withLock { $0.suspended }
        let pin = try VersionPin(folder: layout.pins, versions: versions, folders: folders, suspendedUntil: suspended ? leaseEnd() : nil)
        // Kept and checked under one lock: a suspension that began after the check above, and listed the pins before
        // this one was kept, is seen here.
        if suspension.withLock({ state -> Bool in
            // Pins an engine dropped leave the list here too: a server in immediate mode pins at every activation.
            state.pins.removeAll { $0.pin == nil }
            state.pins.append(WeakPin(pin: pin))
            return state.suspended
        }) {
            _ = pin.suspend(until: leaseEnd())
        }
        return pin
    }

    /// Pins whose owners are alive; pin files whose lock is free belong to dead processes and are removed, unless their
    /// lease (a pin let go for its app's suspension) has not ended.
    func livePins() -> [PackageID: Set<SemanticVersion>] {
        var result: [PackageID: Set<SemanticVersion>] = [:]
        let now = configuration.now()
        for name in FileSystem.list(layout.pins) where name.hasSuffix(".pin") {
            let path = layout.pins + "/" + name
            guard let versions = VersionPin.readIfHeld(path, now: now) else { continue }
            for (id, version) in versions { result[id, default: []].insert(version) }
        }
        return result
    }
}
