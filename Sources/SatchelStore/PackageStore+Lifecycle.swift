import SatchelCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Activation, trials, rollback, removal, gc and recovery: each reads the state, applies one rule of
/// `PackageState+Rules.swift`, writes the result, and deletes the folders outside the keep set.
extension PackageStore {
    // MARK: Activation, trial, rollback

    /// Makes an installed (or the built-in) version active. A version that served confirmed is active as
    /// confirmed; any other, a failed one included, starts a trial.
    public func activate(_ id: PackageID, _ version: SemanticVersion) throws(StoreError) {
        try changeState(of: id) { (state, available) throws(StateRefusal) in try state.activate(version, in: available) }
    }

    /// Confirms the trial: the active version becomes the newest confirmed one.
    @discardableResult
    public func confirm(_ id: PackageID) throws(StoreError) -> PackageState {
        try changeState(of: id) { (state, _) throws(StateRefusal) in try state.confirm() }
    }

    /// Returns to the fallback: the newest version that served before and did not fail, else the built-in. The
    /// version left is marked failed, so a second rollback goes further back rather than forth again.
    /// - Parameter reason: why (`satchel list` shows it, device reports send its `why`); without one it reads as `trial`.
    @discardableResult
    public func rollback(_ id: PackageID, because reason: TrialFailure? = nil) throws(StoreError) -> PackageState {
        try changeState(of: id) { (state, available) throws(StateRefusal) in try state.rollBack(in: available, because: reason) }
    }

    /// The one shape of every operation on one package's state: under the store lock, read the state as it serves
    /// (lifted to the built-in floor), apply one rule of `PackageState+Rules.swift` (its refusal names the
    /// package), and write the result when it differs from what is on disk.
    @discardableResult
    func changeState(
        of id: PackageID, _ rule: (inout PackageState, AvailableVersions) throws(StateRefusal) -> Void
    ) throws(StoreError) -> PackageState {
        try withStoreLock { () throws(StoreError) -> PackageState in
                let loaded = try loadState(of: id)
                guard var state = loaded.effective else { throw .packageNotInstalled(id.value) }
                let available = availability(of: id)
                try apply(id) { () throws(StateRefusal) in try rule(&state, available) }
                try persist(state, for: id, loaded)
                return state
        }
    }

    /// Counts one launch that shows the app's pages against every trial; a trial past
    /// ``StoreConfiguration/maxTrialLaunches`` is marked failed and falls back, persistently, so a crash loop ends even
    /// if the app never gets to confirm.
    ///
    /// An app does not call this: its container (`SatchelWebViews`, `SatchelWebContext`, given the store as `trials:`)
    /// counts the launch before it answers its first page, and a launch that shows none (a background refresh) is never
    /// counted (decision 0036). A host that shows pages without a container counts it itself at start (`satchel serve`;
    /// `satchel launch` counts one by hand). Reading and updating never count.
    public func countPageLaunch() throws(StoreError) -> LaunchCount {
        try withStoreLock { () throws(StoreError) -> LaunchCount in
            var count = LaunchCount()
            for id in try packageIDs() {
                let loaded = try loadState(of: id)
                guard var state = loaded.effective else { continue }
                switch state.beginLaunch(maxTrialLaunches: configuration.maxTrialLaunches, in: availability(of: id)) {
                case .notOnTrial: break
                case .counted(let launches): count.trials[id] = launches
                case .rolledBack(let from, let to): count.rolledBack.append(LaunchCount.Rollback(id: id, from: from, to: to))
                case .exhaustedWithoutFallback: count.exhaustedWithoutFallback.append(id)
                }
                try persist(state, for: id, loaded)
            }
            return count
        }
    }

    /// ``countPageLaunch()`` as the CLI prints it (`satchel launch --json`).
    public func beginLaunch() throws(StoreError) -> LaunchReport {
        LaunchReport(try countPageLaunch())
    }

    // MARK: Removal and garbage collection

    /// Removes one installed version, or (without `version`) every installed version of the package and its
    /// state, after which its built-in (if the app has one) serves again. The active version, the built-in, and
    /// the versions the rule keeps (the fallback, the newest confirmed one) are refused. A version a running
    /// engine has pinned leaves the state now and the disk when the engine lets go of it.
    public func remove(_ id: PackageID, version: SemanticVersion? = nil) throws(StoreError) {
        try withStoreLock { () throws(StoreError) in
            let loaded = try loadState(of: id)
            let builtIn = builtIns[id]
            let folders = versionFolders(of: id)
            guard loaded.stored != nil || !folders.isEmpty || builtIn != nil else { throw .packageNotInstalled(id.value) }
            guard let version else {
                if loaded.stored == nil, folders.isEmpty, let builtIn { throw .builtInReadOnly(id: id.value, version: builtIn.version.description) }
                try removePackage(id)
                return
            }
            guard folders.contains(version) else {
                if version == builtIn?.version { throw .builtInReadOnly(id: id.value, version: version.description) }
                throw .versionNotInstalled(id: id.value, version: version.description)
            }
            var state = loaded.effective
            if state != nil {
                let available = availability(of: id)
                try apply(id) { () throws(StateRefusal) in try state!.remove(version, in: available) }
                try persist(state!, for: id, loaded)
            }
            try deleteUnretained(id, state: state)
        }
    }

    /// Forgets, then deletes, every version the rule does not keep: versions that are not active, not the
    /// fallback, not the newest confirmed one, not pinned by a running engine and not among the `keep` newest
    /// other ones that served; failed versions go too.
    /// - Returns: the removed versions, as `id@version`.
    public func collectGarbage(keep: Int = 0) throws(StoreError) -> [String] {
        try withStoreLock { () throws(StoreError) -> [String] in
            var removed: [String] = []
            for id in try packageIDs() {
                let loaded = try loadState(of: id)
                var state = loaded.effective
                if state != nil {
                    state!.collectGarbage(keep: keep, in: availability(of: id))
                    try persist(state!, for: id, loaded)
                }
                removed += try deleteUnretained(id, state: state).map { "\(id)@\($0)" }
            }
            return removed
        }
    }

    /// Deletes the package's version folders outside the keep set (``PackageState/retained(by:pinned:)``),
    /// reading the pins and renaming into `staging/` under the pin lock, so no engine can pin a version between
    /// the check and the rename; the slow deletion comes after. Runs under the store lock.
    @discardableResult
    func deleteUnretained(_ id: PackageID, state: PackageState?) throws(StoreError) -> [SemanticVersion] {
        var trash: [String] = []
        var removed: [SemanticVersion] = []
        do {
            let pinLock = try StoreLock(path: layout.pinLock)
            defer { withExtendedLifetime(pinLock) {} }
            let keep = PackageState.retained(by: state, pinned: livePins()[id] ?? [])
            let referenced = PackageState.retained(by: state, pinned: [])
            var pinnedOnly = false
            for name in FileSystem.list(layout.versions(id)) {
                let parsed = try? SemanticVersion(name)
                if let parsed, keep.contains(parsed) {
                    pinnedOnly = pinnedOnly || !referenced.contains(parsed)
                    continue
                }
                FaultInjection.checkpoint("gc")
                trash.append(try moveToTrash(layout.versions(id) + "/" + name))
                if let parsed { removed.append(parsed) }
            }
            // A version kept only for a running engine goes when a later open finds its pin gone; anything else the
            // package held outside the keep set is gone now.
            if pinnedOnly { try markUnclean(id) } else { operation.withLock { _ = $0.unclean.remove(id) } }
        }
        if !trash.isEmpty { FaultInjection.checkpoint("trash") }
        for path in trash { try FileSystem.removeTree(path) }
        keptTrust.sweepSignatures(of: id)
        return removed.sorted()
    }

    /// Removes a package's state and versions; versions pinned by a running engine stay until it lets go
    /// (recovery removes them then, as it does any version no state refers to).
    private func removePackage(_ id: PackageID) throws(StoreError) {
        var trash: [String] = []
        do {
            let pinLock = try StoreLock(path: layout.pinLock)
            defer { withExtendedLifetime(pinLock) {} }
            if livePins()[id]?.isEmpty ?? true {
                trash.append(try moveToTrash(layout.package(id)))
            } else {
                // The state goes first: from then on nothing refers to the versions, and a crash leaves a package
                // without state, which recovery (told by the marker, made first) clears of everything unpinned.
                try markUnclean(id)
                if FileSystem.exists(layout.state(id)) {
                    try beginChange()
                    guard unlink(layout.state(id)) == 0 else { throw StoreError.system("unlink", layout.state(id)) }
                    try FileSystem.syncDirectory(layout.package(id))
                    tokenCache.withLock { $0.switches += 1 }
                }
                }
        }
        if !trash.isEmpty {
            FaultInjection.checkpoint("trash")
            for path in trash { try FileSystem.removeTree(path) }
        } else {
            try deleteUnretained(id, state: nil)
        }
    }

    // MARK: Recovery

    /// Brings the store back to a consistent state after a crash at any instant. Runs under the lock.
    ///
    /// It looks only where an interrupted operation can have left something: `staging/` (installs being filled,
    /// trees being deleted, state temporaries), the temporaries of the root, `builtins/` and `pins/`, and the packages
    /// named by a recovery marker (`staging/recover-<id>`: a version renamed in before its state switch, a version
    /// kept for a running engine or no longer referred to) or given a built-in (whose floor may have risen). So an
    /// open costs a few folder listings, not a read of every package.
    func recover(holding lock: StoreLock) throws(StoreError) {
        operation.withLock { $0 = Operation() }
        let unfinished = generation.isOdd
        var marked: Set<PackageID> = []
        for name in FileSystem.list(layout.staging) {
            if name.hasPrefix(StoreLayout.recoveryPrefix), let id = try? PackageID(String(name.dropFirst(StoreLayout.recoveryPrefix.count))) {
                marked.insert(id)
            } else {
                try FileSystem.removeTree(layout.staging + "/" + name)
            }
        }
        for folder in [layout.root, layout.builtIns] {
            for name in FileSystem.list(folder) where name.hasSuffix(".tmp") { try FileSystem.removeTree(folder + "/" + name) }
        }
        do {
            // Under the pin lock no pin is being created, so a temporary pin file belongs to a process that died.
            let pinLock = try StoreLock(path: layout.pinLock)
            defer { withExtendedLifetime(pinLock) {} }
            for name in FileSystem.list(layout.pins) where name.hasSuffix(".tmp") { unlink(layout.pins + "/" + name) }
        }
        // The markers found are this recovery's: each is removed once its package is clean.
        operation.withLock { $0.marked = marked }
        do {
            for id in marked.union(builtIns.keys).sorted() { try recover(id) }
        } catch {
            finishOperation(succeeded: false)
            throw error
        }
        // A counter left odd by a writer that died is made even: what it changed is now on disk for anyone to read.
        if unfinished { try? beginChange() }
        finishOperation(succeeded: true)
    }

    /// Recovers one package: temporaries beside its state (left by runtimes from before they went to `staging/`),
    /// its state lifted to the built-in floor, version folders outside the keep set, and the folder itself when
    /// nothing is left in it.
    private func recover(_ id: PackageID) throws(StoreError) {
        let folder = layout.package(id)
        for file in FileSystem.list(folder) where file.hasSuffix(".tmp") { try FileSystem.removeTree(folder + "/" + file) }
        let loaded = try loadState(of: id)
        // An app update that ships a newer built-in lifts the state to it, on disk too.
        if loaded.stored != nil, let effective = loaded.effective { try persist(effective, for: id, loaded) }
        // A first install killed before its state was written never became visible: with no state, nothing
        // is kept but what an engine pins.
        try deleteUnretained(id, state: loaded.stored == nil ? nil : loaded.effective)
        if loaded.stored == nil, FileSystem.list(layout.versions(id)).isEmpty { try discard(folder) }
    }
}

extension PackageStore: LaunchRecords {}

extension LaunchReport {
    /// A count with its ids and versions as text, in the order the store met them.
    init(_ count: LaunchCount) {
        self.init(
            trials: Dictionary(uniqueKeysWithValues: count.trials.map { ($0.key.value, $0.value) }),
            rolledBack: count.rolledBack.map { TrialRollback(id: $0.id.value, from: $0.from.description, to: $0.to.description) },
            exhaustedWithoutFallback: count.exhaustedWithoutFallback.map(\.value))
    }
}
