import Foundation
import SatchelArchive
import SatchelBundle
import SatchelCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How a store checks what it installs and how patient it is with trials.
public struct StoreConfiguration: Sendable {
    /// When not empty, every bundle must be signed by one of these keys; unsigned bundles are refused.
    public var trustedKeys: [VerifyingKey]
    /// Launches a trial may have without being confirmed; the next launch rolls it back.
    public var maxTrialLaunches: Int
    public var archiveLimits: ArchiveLimits

    public init(trustedKeys: [VerifyingKey] = [], maxTrialLaunches: Int = 3, archiveLimits: ArchiveLimits = .default) {
        self.trustedKeys = trustedKeys
        self.maxTrialLaunches = maxTrialLaunches
        self.archiveLimits = archiveLimits
    }
}

/// What an install did.
public struct InstallResult: Sendable, Equatable, Codable {
    public var id: String
    public var version: String
    public var fileCount: Int
    public var bytes: Int64
    public var contentHash: String
    /// The version that was active before, if any.
    public var previous: String?
    /// False when this exact version was already installed and only became active again.
    public var extracted: Bool
    /// Set when the bundle was a delta: how the new version was assembled from the installed base.
    public var delta: DeltaApplied?
}

/// How a delta became a full version: files written from the delta, and unchanged files taken from the base
/// by hard link (or by copy where the file system cannot link).
public struct DeltaApplied: Sendable, Equatable, Codable {
    public var from: String
    public var written: Int
    public var linked: Int
    public var copied: Int
}

/// A rollback that a launch performed because a trial ran out of launches.
public struct TrialRollback: Sendable, Equatable, Codable {
    public var id: String
    public var from: String
    public var to: String
}

public struct LaunchReport: Sendable, Equatable, Codable {
    /// Trials still running, with the launch count they have reached.
    public var trials: [String: Int]
    public var rolledBack: [TrialRollback]
    /// Trials past their limit that have no confirmed version to fall back to; they stay active.
    public var exhaustedWithoutFallback: [String]
}

/// One package as `satchel list` shows it.
public struct InstalledPackage: Sendable, Equatable, Codable {
    public var id: String
    public var active: String
    public var state: String
    public var launches: Int
    public var confirmed: String?
    public var otherVersions: [String]
    public var hosts: [String]
    public var pathPrefix: String
    public var fileCount: Int
    public var bytes: Int64
}

/// A difference between an active version on disk and its manifest.
public struct CheckProblem: Sendable, Equatable, Codable, CustomStringConvertible {
    public enum Kind: String, Sendable, Codable { case missing, sizeMismatch, hashMismatch, unexpected, unreadable, signature }
    public var id: String
    public var version: String
    public var path: String
    public var kind: Kind

    public var description: String { "\(id) \(version): \(path): \(kind.rawValue)" }
}

/// The on-disk store of installed offline packages (DESIGN.md, Formats: Store layout, and flow step 3).
///
/// Guarantees, whatever instant a process is killed at:
/// - nothing becomes visible before it is verified and durable: bundles are extracted into `staging/`,
///   every file hashed as it streams, flushed with one `syncfs`, renamed into `packages/<id>/versions/<v>/`,
///   and only then does the atomic replacement of `state.json` make it active;
/// - the previous version stays until the new one is confirmed, and rollback is one state replacement;
/// - opening a store recovers: stale staging folders, temporary state files, unreferenced versions and
///   half-deleted trees are removed (versions that a running engine has pinned are kept).
///
/// Mutations hold an exclusive `flock` on `<store>/lock`, so installers in different processes take turns;
/// readers read `state.json`, which is never partially written.
public final class PackageStore: Sendable {
    public let layout: StoreLayout
    public let configuration: StoreConfiguration
    /// For ``changeToken()``: the package names and the folder time they were listed at.
    let packageNames = Locked<(token: Int64, names: [String]?)>((0, nil))
    /// For ``changeToken()``: the last token, when it was computed (monotonic nanoseconds) and this object's
    /// own state-switch count at that moment.
    let recentToken = Locked<(token: [Int64], at: UInt64, switches: Int)?>(nil)
    /// State switches made through this object; a change made here invalidates the cached token at once.
    let stateSwitches = Locked(0)

    /// Opens (creating when missing) the store at `root`, and recovers from any interrupted operation.
    public init(root: String, configuration: StoreConfiguration = StoreConfiguration()) throws(StoreError) {
        layout = StoreLayout(root: root)
        self.configuration = configuration
        try FileSystem.makeDirectories(layout.root)
        let lock = try StoreLock(path: layout.lockFile)
        if FileSystem.exists(layout.storeFile) {
            let bytes = try FileSystem.read(layout.storeFile)
            struct Wire: Decodable { let layout: Int }
            guard let wire = try? JSONDecoder().decode(Wire.self, from: Data(bytes)) else {
                throw .corruptState(path: layout.storeFile, reason: "not a store.json")
            }
            guard wire.layout == StoreLayout.version else { throw .unsupportedLayout(path: layout.storeFile, layout: wire.layout) }
        } else {
            for folder in [layout.staging, layout.packages, layout.pins] { try FileSystem.makeDirectory(folder) }
            try FileSystem.writeAtomically(CanonicalJSON.object(["layout": .integer(Int64(StoreLayout.version))]).bytes, to: layout.storeFile)
        }
        try recover(holding: lock)
    }

    // MARK: Install

    /// Installs a bundle as the new active version of its package, on trial.
    ///
    /// - Parameter expectedSHA256: the bundle file's own hash when known (`--sha256`, the catalog); checked
    ///   before anything else is read.
    @discardableResult
    public func install(bundle path: String, expectedSHA256: String? = nil) throws(StoreError) -> InstallResult {
        let lock = try StoreLock(path: layout.lockFile)
        if let expected = expectedSHA256?.lowercased() {
            let actual = try Self.sha256(ofFile: path)
            guard actual == expected else { throw .bundleChecksumMismatch(expected: expected, actual: actual) }
        }
        let reader: BundleReader
        do { reader = try BundleReader(path: path, trustedKeys: configuration.trustedKeys, limits: configuration.archiveLimits) } catch {
            throw .invalidBundle(error)
        }
        let manifest = reader.manifest
        try checkScope(of: manifest)
        let previous = try state(of: manifest.id)
        FaultInjection.checkpoint("verify")

        let target = layout.version(manifest.id, manifest.version)
        var extracted = false
        var applied: DeltaApplied?
        if FileSystem.isDirectory(target) {
            // The same version again: fine if it is the same content (an interrupted update retried), refused
            // if it differs, since two different packages must not share a version number.
            let existing = try installedManifest(manifest.id, manifest.version)
            guard existing.contentHash == manifest.contentHash else {
                throw .invalidBundle(.manifest(.invalidField(FieldError(
                    field: "version", value: manifest.version.description,
                    reason: "is already installed with different content (contentHash \(existing.contentHash))"))))
            }
        } else if let delta = reader.delta {
            applied = try applyDelta(reader, delta, into: target)
            extracted = true
        } else {
            try extract(reader, into: target)
            extracted = true
        }
        if previous?.active == manifest.version {
            return result(manifest, previous: previous, extracted: extracted, delta: applied)
        }
        let next = PackageState(
            active: manifest.version, confirmed: previous?.confirmed, trial: manifest.version, launches: 0,
            history: previous?.history ?? [])
        do {
            try writeState(next, for: manifest.id)
        } catch {
            if extracted { try? discard(target) }
            if previous == nil { try? discard(layout.package(manifest.id)) }
            throw error
        }
        withExtendedLifetime(lock) {}
        return result(manifest, previous: previous, extracted: extracted, delta: applied)
    }

    private func result(_ manifest: Manifest, previous: PackageState?, extracted: Bool, delta: DeltaApplied?) -> InstallResult {
        InstallResult(
            id: manifest.id.value, version: manifest.version.description, fileCount: manifest.files.count,
            bytes: manifest.totalSize, contentHash: manifest.contentHash, previous: previous?.active.description,
            extracted: extracted, delta: delta)
    }

    /// Streams the files into a new staging folder, makes them durable, and renames the folder into place.
    /// On any failure the staging folder is removed and nothing else was touched.
    private func extract(_ reader: BundleReader, into target: String) throws(StoreError) {
        try stage(reader, into: target) { (sink: StagingSink) throws(StoreError) in
            _ = try Self.readFiles(reader, into: sink)
        }
    }

    /// Builds a version from a delta: the delta's files are streamed into staging as a full install's are, the
    /// unchanged files are hard-linked from the installed base (copied where links are impossible) and hashed,
    /// so the staged folder is verified against the full target manifest before it is renamed into place.
    private func applyDelta(_ reader: BundleReader, _ delta: DeltaManifest, into target: String) throws(StoreError) -> DeltaApplied {
        let manifest = reader.manifest
        let baseFolder = layout.version(manifest.id, delta.from)
        guard FileSystem.isDirectory(baseFolder) else {
            throw .deltaBaseNotInstalled(id: manifest.id.value, version: delta.from.description)
        }
        let base = try installedManifest(manifest.id, delta.from)
        do { try delta.check(base: base, target: manifest) } catch { throw .deltaMismatch(error) }
        let baseFiles = Dictionary(uniqueKeysWithValues: base.files.map { ($0.path, $0) })
        var applied = DeltaApplied(from: delta.from.description, written: 0, linked: 0, copied: 0)
        try stage(reader, into: target) { (sink: StagingSink) throws(StoreError) in
            let written = Set(try Self.readFiles(reader, into: sink))
            applied.written = written.count
            var taken: [(file: FileRecord, location: String)] = []
            for file in manifest.files where !written.contains(file.path) {
                guard let old = baseFiles[file.path], old.sha256 == file.sha256 else {
                    // The delta left this file to the base, but the base does not have it as the target wants.
                    throw .invalidBundle(.missingFile(file.path.value))
                }
                let destination = try sink.prepare(file)
                if try FileSystem.linkOrCopy(baseFolder + "/" + file.path.value, to: destination) { applied.linked += 1 } else { applied.copied += 1 }
                taken.append((file, destination))
            }
            if let damaged = try Self.firstMismatch(taken) {
                throw .baseFileDamaged(id: manifest.id.value, version: delta.from.description, path: damaged.value)
            }
        }
        return applied
    }

    /// Hashes files on every core (the one CPU cost of a delta install) and returns the first, in manifest
    /// order, whose size or SHA-256 is not the manifest's.
    private static func firstMismatch(_ files: [(file: FileRecord, location: String)]) throws(StoreError) -> SafePath? {
        let results = Locked([StoreError?](repeating: nil, count: files.count))
        let mismatched = Locked([Bool](repeating: false, count: files.count))
        let next = Locked(0)
        let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, files.count))
        DispatchQueue.concurrentPerform(iterations: workers) { _ in
            var buffer = [UInt8](repeating: 0, count: 256 << 10)
            while true {
                let index = next.withLock { value -> Int in
                    defer { value += 1 }
                    return value
                }
                guard index < files.count else { return }
                let (file, location) = files[index]
                do {
                    let digest = try FileDigest.sha256(ofFile: location, buffer: &buffer)
                    if digest.size != file.size || digest.sha256 != file.sha256 { mismatched.withLock { $0[index] = true } }
                } catch let failure as FileDigest.Failure {
                    results.withLock { $0[index] = .system(failure.operation, failure.path, failure.errno) }
                } catch {
                    results.withLock { $0[index] = .io(operation: "read", path: location, errno: EIO) }
                }
            }
        }
        let errors = results.withLock { $0 }
        let flags = mismatched.withLock { $0 }
        for index in files.indices {
            if let error = errors[index] { throw error }
            if flags[index] { return files[index].file.path }
        }
        return nil
    }

    private static func readFiles(_ reader: BundleReader, into sink: StagingSink) throws(StoreError) -> [SafePath] {
        var sinkReference = sink
        do { return try reader.readFiles(into: &sinkReference) } catch let error as StoreError {
            throw error
        } catch let error as BundleError {
            throw .invalidBundle(error)
        } catch {
            throw .io(operation: "extract", path: reader.path, errno: EIO)
        }
    }

    /// The shared shape of every install: fill a fresh staging folder, add the manifest and signature, make it
    /// durable with one syncfs, rename it into place. Any failure removes the staging folder and nothing else.
    private func stage(
        _ reader: BundleReader, into target: String, fill: (StagingSink) throws(StoreError) -> Void
    ) throws(StoreError) {
        let manifest = reader.manifest
        let staging = layout.staging + "/" + FileSystem.randomName("install")
        try FileSystem.makeDirectory(staging)
        do throws(StoreError) {
            let sink = StagingSink(root: staging, fileCount: manifest.files.count)
            try fill(sink)
            try FileSystem.writeAtomically(reader.manifestBytes, to: staging + "/" + Manifest.fileName)
            if let signature = reader.signatureBytes {
                try FileSystem.writeAtomically(signature, to: staging + "/" + Manifest.signatureFileName)
            }
            FaultInjection.checkpoint("durability")
            try FileSystem.syncFileSystem(containing: staging, files: sink.writtenFiles)
            FaultInjection.checkpoint("rename")
            try FileSystem.makeDirectories(layout.versions(manifest.id))
            guard rename(staging, target) == 0 else { throw StoreError.system("rename", staging) }
            try FileSystem.syncDirectory(layout.versions(manifest.id))
        } catch {
            try? FileSystem.removeTree(staging)
            throw error
        }
    }

    /// Two packages with different ids may not claim the same host with the same path prefix.
    private func checkScope(of manifest: Manifest) throws(StoreError) {
        for other in try packageIDs() where other != manifest.id {
            guard let state = try state(of: other) else { continue }
            let scope = try installedManifest(other, state.active).scope
            guard scope.pathPrefix == manifest.scope.pathPrefix else { continue }
            if let host = manifest.scope.hosts.first(where: { scope.hosts.contains($0) }) {
                throw .scopeConflict(id: manifest.id.value, otherID: other.value, host: host.value, pathPrefix: scope.pathPrefix.value)
            }
        }
    }

    // MARK: Activation, trial, rollback

    /// Makes an installed version active. A version confirmed before is active as confirmed; any other is on trial.
    public func activate(_ id: PackageID, _ version: SemanticVersion) throws(StoreError) {
        let lock = try StoreLock(path: layout.lockFile)
        guard var state = try state(of: id) else { throw .packageNotInstalled(id.value) }
        guard FileSystem.isDirectory(layout.version(id, version)) else { throw .versionNotInstalled(id: id.value, version: version.description) }
        guard state.active != version else { return }
        state.active = version
        state.trial = state.history.contains(version) ? nil : version
        state.launches = 0
        try writeState(state, for: id)
        withExtendedLifetime(lock) {}
    }

    /// Confirms the trial: the active version becomes the one to fall back to.
    @discardableResult
    public func confirm(_ id: PackageID) throws(StoreError) -> PackageState {
        let lock = try StoreLock(path: layout.lockFile)
        guard var state = try state(of: id) else { throw .packageNotInstalled(id.value) }
        guard state.isTrial else { throw .notInTrial(id: id.value) }
        state.trial = nil
        state.launches = 0
        state.confirmed = state.active
        state.history.removeAll { $0 == state.active }
        state.history.append(state.active)
        try writeState(state, for: id)
        withExtendedLifetime(lock) {}
        return state
    }

    /// Returns to the last confirmed version before the active one. The versions rolled back from leave the
    /// history, so a second rollback goes further back rather than forth again.
    @discardableResult
    public func rollback(_ id: PackageID) throws(StoreError) -> PackageState {
        let lock = try StoreLock(path: layout.lockFile)
        guard var state = try state(of: id) else { throw .packageNotInstalled(id.value) }
        try rollBack(&state, id: id)
        try writeState(state, for: id)
        withExtendedLifetime(lock) {}
        return state
    }

    private func rollBack(_ state: inout PackageState, id: PackageID) throws(StoreError) {
        guard let target = state.rollbackTarget, let index = state.history.lastIndex(of: target) else {
            throw .noEarlierConfirmedVersion(id: id.value)
        }
        state.history.removeSubrange((index + 1)...)
        state.active = target
        state.confirmed = target
        state.trial = nil
        state.launches = 0
    }

    /// Counts one launch of every trial; a trial past ``StoreConfiguration/maxTrialLaunches`` is rolled back
    /// to its confirmed version, persistently, so a crash loop ends even if the app never gets to confirm.
    /// Apps call this once at start (`satchel launch` and `satchel serve` do too); reading never counts.
    public func beginLaunch() throws(StoreError) -> LaunchReport {
        let lock = try StoreLock(path: layout.lockFile)
        var report = LaunchReport(trials: [:], rolledBack: [], exhaustedWithoutFallback: [])
        for id in try packageIDs() {
            guard var state = try state(of: id), let trial = state.trial else { continue }
            state.launches += 1
            if state.launches > configuration.maxTrialLaunches {
                if state.rollbackTarget != nil {
                    try rollBack(&state, id: id)
                    report.rolledBack.append(TrialRollback(id: id.value, from: trial.description, to: state.active.description))
                } else {
                    report.exhaustedWithoutFallback.append(id.value)
                }
            } else {
                report.trials[id.value] = state.launches
            }
            try writeState(state, for: id)
        }
        withExtendedLifetime(lock) {}
        return report
    }

    // MARK: Removal and garbage collection

    /// Removes one inactive version, or (without `version`) the whole package.
    public func remove(_ id: PackageID, version: SemanticVersion? = nil) throws(StoreError) {
        let lock = try StoreLock(path: layout.lockFile)
        guard var state = try state(of: id) else { throw .packageNotInstalled(id.value) }
        guard let version else {
            try discard(layout.package(id))
            return
        }
        guard FileSystem.isDirectory(layout.version(id, version)) else { throw .versionNotInstalled(id: id.value, version: version.description) }
        guard version != state.active else { throw .activeVersion(id: id.value, version: version.description) }
        state.history.removeAll { $0 == version }
        if state.confirmed == version { state.confirmed = state.history.last }
        try writeState(state, for: id)
        try discard(layout.version(id, version))
        withExtendedLifetime(lock) {}
    }

    /// Removes every version that is not active, the last confirmed, a trial, pinned by a running engine, or
    /// among the `keep` most recent other confirmed versions.
    /// - Returns: the removed versions, as `id@version`.
    public func collectGarbage(keep: Int = 0) throws(StoreError) -> [String] {
        let lock = try StoreLock(path: layout.lockFile)
        let pinned = livePins()
        var removed: [String] = []
        for id in try packageIDs() {
            guard var state = try state(of: id) else { continue }
            var keepSet: Set<SemanticVersion> = [state.active]
            if let confirmed = state.confirmed { keepSet.insert(confirmed) }
            if let trial = state.trial { keepSet.insert(trial) }
            keepSet.formUnion(pinned[id] ?? [])
            let others = state.history.filter { !keepSet.contains($0) }
            keepSet.formUnion(others.suffix(max(0, keep)))
            let doomed = installedVersions(of: id).filter { !keepSet.contains($0) }
            guard !doomed.isEmpty else { continue }
            state.history.removeAll { doomed.contains($0) }
            try writeState(state, for: id)
            for version in doomed {
                FaultInjection.checkpoint("gc")
                try discard(layout.version(id, version))
                removed.append("\(id)@\(version)")
            }
        }
        withExtendedLifetime(lock) {}
        return removed
    }

    // MARK: Reading

    /// The ids of the installed packages.
    public func packageIDs() throws(StoreError) -> [PackageID] {
        FileSystem.list(layout.packages).compactMap { try? PackageID($0) }
    }

    /// A package's state, or nil when it is not installed.
    public func state(of id: PackageID) throws(StoreError) -> PackageState? {
        let path = layout.state(id)
        guard FileSystem.exists(path) else { return nil }
        return try PackageState.decode(try FileSystem.read(path), path: path)
    }

    /// The manifest of an installed version, read from its folder.
    public func installedManifest(_ id: PackageID, _ version: SemanticVersion) throws(StoreError) -> Manifest {
        let path = layout.version(id, version) + "/" + Manifest.fileName
        let bytes = try FileSystem.read(path)
        do { return try Manifest.decode(bytes) } catch { throw .corruptState(path: path, reason: error.description) }
    }

    /// Versions with a folder on disk, oldest first.
    public func installedVersions(of id: PackageID) -> [SemanticVersion] {
        FileSystem.list(layout.versions(id)).compactMap { try? SemanticVersion($0) }.sorted()
    }

    /// Every installed package, for `satchel list`.
    public func list() throws(StoreError) -> [InstalledPackage] {
        var packages: [InstalledPackage] = []
        for id in try packageIDs() {
            guard let state = try state(of: id) else { continue }
            let manifest = try installedManifest(id, state.active)
            packages.append(InstalledPackage(
                id: id.value, active: state.active.description, state: state.isTrial ? "trial" : "confirmed",
                launches: state.launches, confirmed: state.confirmed?.description,
                otherVersions: installedVersions(of: id).filter { $0 != state.active }.map(\.description),
                hosts: manifest.scope.hosts.map(\.value), pathPrefix: manifest.scope.pathPrefix.value,
                fileCount: manifest.files.count, bytes: manifest.totalSize))
        }
        return packages
    }

    /// Re-verifies every file of every active version against its manifest (size and SHA-256), that the
    /// folder holds nothing else, and the signature when keys are trusted.
    public func check() throws(StoreError) -> [CheckProblem] {
        var problems: [CheckProblem] = []
        for id in try packageIDs() {
            guard let state = try state(of: id) else { continue }
            let folder = layout.version(id, state.active)
            let manifest = try installedManifest(id, state.active)
            func problem(_ path: String, _ kind: CheckProblem.Kind) {
                problems.append(CheckProblem(id: id.value, version: state.active.description, path: path, kind: kind))
            }
            var expected = Set(manifest.files.map(\.path.value))
            expected.insert(Manifest.fileName)
            expected.insert(Manifest.signatureFileName)
            for file in manifest.files {
                let path = folder + "/" + file.path.value
                guard FileSystem.exists(path) else {
                    problem(file.path.value, .missing)
                    continue
                }
                guard let (size, digest) = try? Self.sha256AndSize(ofFile: path) else {
                    problem(file.path.value, .unreadable)
                    continue
                }
                if size != file.size { problem(file.path.value, .sizeMismatch) } else if digest != file.sha256 { problem(file.path.value, .hashMismatch) }
            }
            for path in Self.allFiles(under: folder) where !expected.contains(path) { problem(path, .unexpected) }
            if !configuration.trustedKeys.isEmpty {
                let signature = (try? FileSystem.read(folder + "/" + Manifest.signatureFileName)).flatMap { try? Signature(base64: String(decoding: $0, as: UTF8.self)) }
                let manifestBytes = try FileSystem.read(folder + "/" + Manifest.fileName)
                if signature.map({ s in configuration.trustedKeys.contains { $0.isValid(s, for: manifestBytes) } }) != true {
                    problem(Manifest.signatureFileName, .signature)
                }
            }
        }
        return problems
    }

    // MARK: Pins

    /// Records that a running engine serves these versions, so that gc and recovery keep them. The pin lasts
    /// until the returned value is released or the process dies (it is an flock, which the kernel drops).
    public func pin(_ versions: [PackageID: SemanticVersion]) throws(StoreError) -> VersionPin {
        try VersionPin(folder: layout.pins, versions: versions)
    }

    /// Pins whose owners are alive; stale pin files are removed on the way.
    func livePins() -> [PackageID: Set<SemanticVersion>] {
        var result: [PackageID: Set<SemanticVersion>] = [:]
        for name in FileSystem.list(layout.pins) where name.hasSuffix(".pin") {
            let path = layout.pins + "/" + name
            guard let versions = VersionPin.readIfHeld(path) else { continue }
            for (id, version) in versions { result[id, default: []].insert(version) }
        }
        return result
    }

    // MARK: Recovery

    /// Brings the store back to a consistent state after a crash at any instant. Runs under the lock.
    private func recover(holding lock: StoreLock) throws(StoreError) {
        for name in FileSystem.list(layout.staging) { try FileSystem.removeTree(layout.staging + "/" + name) }
        let pinned = livePins()
        for name in FileSystem.list(layout.packages) {
            let folder = layout.packages + "/" + name
            guard let id = try? PackageID(name) else { continue }
            for file in FileSystem.list(folder) where file.hasSuffix(".tmp") { try FileSystem.removeTree(folder + "/" + file) }
            guard let state = try state(of: id) else {
                // A first install killed before its state was written never became visible.
                try discard(folder)
                continue
            }
            let keep = state.referencedVersions.union(pinned[id] ?? [])
            for version in FileSystem.list(layout.versions(id)) {
                let path = layout.versions(id) + "/" + version
                if version.hasSuffix(".tmp") { try FileSystem.removeTree(path); continue }
                if let parsed = try? SemanticVersion(version), keep.contains(parsed) { continue }
                try discard(path)
            }
        }
        for name in FileSystem.list(layout.root) where name.hasSuffix(".tmp") { try FileSystem.removeTree(layout.root + "/" + name) }
        withExtendedLifetime(lock) {}
    }

    // MARK: Helpers

    private func writeState(_ state: PackageState, for id: PackageID) throws(StoreError) {
        try FileSystem.makeDirectories(layout.package(id))
        defer { stateSwitches.withLock { $0 += 1 } }
        try FileSystem.writeAtomically(state.canonicalBytes, to: layout.state(id)) { FaultInjection.checkpoint("switch") }
    }

    /// Removes a tree so that a crash half-way leaves nothing visible: first one atomic rename into
    /// `staging/` (cleared by recovery), then the slow deletion.
    private func discard(_ path: String) throws(StoreError) {
        guard FileSystem.exists(path) else { return }
        let trash = layout.staging + "/" + FileSystem.randomName("trash")
        guard rename(path, trash) == 0 else { throw .system("rename", path) }
        try FileSystem.syncDirectory(FileSystem.parent(of: path))
        FaultInjection.checkpoint("trash")
        try FileSystem.removeTree(trash)
    }

    static func sha256(ofFile path: String) throws(StoreError) -> String { try sha256AndSize(ofFile: path).1 }

    static func sha256AndSize(ofFile path: String) throws(StoreError) -> (Int64, String) {
        do { return try FileDigest.sha256(ofFile: path) } catch { throw .system(error.operation, error.path, error.errno) }
    }

    /// Relative paths of every regular file (or other non-folder) under `root`.
    static func allFiles(under root: String, prefix: String = "") -> [String] {
        var result: [String] = []
        for name in FileSystem.list(root + (prefix.isEmpty ? "" : "/" + prefix)) {
            let relative = prefix.isEmpty ? name : prefix + "/" + name
            if FileSystem.isDirectory(root + "/" + relative) {
                result += allFiles(under: root, prefix: relative)
            } else {
                result.append(relative)
            }
        }
        return result
    }
}
