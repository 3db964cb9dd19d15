import Foundation
import SatchelArchive
import SatchelBundle
import SatchelCore
import SatchelPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How a store checks what it installs, how patient it is with trials, and which bundles the app ships.
public struct StoreConfiguration: Sendable {
    /// When not empty, every bundle must be signed by one of these keys; unsigned bundles are refused (built-ins
    /// included).
    public var trustedKeys: [VerifyingKey]
    /// Launches a trial may have without being confirmed; the next launch rolls it back.
    public var maxTrialLaunches: Int
    public var archiveLimits: ArchiveLimits
    /// Built-in bundles: zip bundle files, or folders whose `*.zip` files are bundles, shipped read-only with the
    /// app. Each is the floor of its package: served (straight from the archive, never extracted) when nothing
    /// newer is installed or everything newer failed, and always somewhere for a rollback to go.
    public var builtIns: [String]
    /// The root keys the app ships (`--root-public-key`; docs/formats.md, "Trust"): with them, a bundle must carry a
    /// threshold of signatures by the `bundles` role of the newest trust version the device holds (kept by the updater
    /// in `downloads/trust/`), counting its `satchel.sig` and the keyed signatures given with it; ``trustedKeys`` then
    /// only count until a first trust version is held. Nil: today's rule, ``trustedKeys`` alone.
    public var trustAnchor: TrustAnchor?
    /// Trust documents the app ships (their bytes, as published), walked from ``trustAnchor`` before those the device
    /// kept: a device that ships today's trust version fetches none of the versions before it.
    public var trustDocuments: [[UInt8]]
    /// The folder whose files the system seals (``ResourceSeal/enforcedRoot``: the app bundle on an iOS device, nil
    /// elsewhere): a built-in inside it whose sealed bytes were verified before is not hashed again at a new place,
    /// after an app update (decision 0035). Not public: declaring a folder sealed is the platform's word, never the
    /// app's; tests seal a folder of their own.
    var sealedRoot: String? = ResourceSeal.enforcedRoot
    /// How long a pin let go for its app's suspension (``PackageStore/suspend(whenUnlocked:)``) keeps its versions from
    /// other processes' deletions (decision 0037). A suspended app that iOS ends sends no word, so its pins must end by
    /// themselves; one that comes back later than this finds what was swept and pins what is left, or is told what it lost.
    /// Longer keeps a dead app's versions on disk longer; shorter makes a long-suspended app read its versions again.
    public var suspendedPinLease: Duration = .seconds(7 * 24 * 3600)
    /// The wall clock leases are written and judged by, in milliseconds since 1970: processes sharing a container share
    /// no other. Not public: tests move their own.
    var now: @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    public init(
        trustedKeys: [VerifyingKey] = [], maxTrialLaunches: Int = 3, archiveLimits: ArchiveLimits = .default, builtIns: [String] = [],
        trustAnchor: TrustAnchor? = nil, trustDocuments: [[UInt8]] = []
    ) {
        self.trustAnchor = trustAnchor
        self.trustDocuments = trustDocuments
        self.trustedKeys = trustedKeys
        self.maxTrialLaunches = maxTrialLaunches
        self.archiveLimits = archiveLimits
        self.builtIns = builtIns
    }
}

/// What an install did.
public struct InstallResult: Sendable, Equatable, Codable {
    public var id: PackageID
    public var version: SemanticVersion
    public var fileCount: Int
    public var bytes: Int64
    public var contentHash: String
    /// The version that was active before, if any.
    public var previous: String?
    /// False when this exact version was already installed and only became active again.
    public var extracted: Bool
    /// Set when the bundle was a delta: how the new version was assembled from the installed base.
    public var delta: DeltaApplied?
    /// True when the bundle is the app's built-in version: nothing was extracted, the built-in serves.
    public var builtIn: Bool?
}

/// How a delta became a full version: files written from the delta, and unchanged files taken from the base
/// by hard link (or by copy where the file system cannot link, and always from a built-in base's archive).
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
    /// Trials past their limit with nothing to fall back to; they are marked failed but stay active.
    public var exhaustedWithoutFallback: [String]
}

/// One package as `satchel list` shows it.
public struct InstalledPackage: Sendable, Equatable, Codable {
    public var id: String
    public var active: String
    /// Trial, confirmed, built-in when the app's built-in bundle serves, or missing.
    public var state: ServingState
    public var launches: Int
    public var confirmed: String?
    /// Where a rollback (or a failed trial) would go.
    public var fallback: String?
    /// Versions that failed (a trial ran out, or a rollback left them); kept on disk until gc.
    public var failed: [String]
    /// Why each of ``failed`` failed, oldest version first (`trial` when no reason was recorded).
    public var failureReasons: [FailureReasonEntry]
    /// Installed versions other than the active one.
    public var otherVersions: [String]
    /// The app's built-in version of this package, and its bundle.
    public var builtIn: String?
    public var builtInBundle: String?
    public var hosts: [String]
    public var pathPrefix: String
    public var fileCount: Int
    public var bytes: Int64
    /// The release channel the store follows (store-wide; shown per package).
    public var channel: String
}

/// One failed version and why (`satchel list --json`'s `failureReasons`).
public struct FailureReasonEntry: Sendable, Equatable, Codable {
    public var version: String
    public var why: String
    /// The device-only detail (a script error's first line, a status code); null when there is none.
    public var detail: String?

    public init(version: String, why: String, detail: String?) {
        self.version = version
        self.why = why
        self.detail = detail
    }

    public func encode(to encoder: any Encoder) throws {
        // `detail` is always present in the JSON, null when there is none.
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(version, forKey: .version)
        try container.encode(why, forKey: .why)
        try container.encode(detail, forKey: .detail)
    }
}

/// A difference between an active version on disk and its manifest.
public struct CheckProblem: Sendable, Equatable, Codable, CustomStringConvertible {
    /// `revoked`: the version (installed or built-in) keeps serving, but every signature of it that verifies is by a
    /// key the newest trust version no longer gives the `bundles` role.
    public enum Kind: String, Sendable, Codable { case missing, sizeMismatch, hashMismatch, unexpected, unreadable, signature, builtInRefused, revoked }
    public var id: String
    public var version: String
    public var path: String
    public var kind: Kind

    public var description: String {
        kind == .revoked
            ? "\(id) \(version): \(path): revoked (signed only by keys a trust version revoked; it keeps serving)"
            : "\(id) \(version): \(path): \(kind.rawValue)"
    }
}

/// The on-disk store of installed offline packages (docs/formats.md, "Store layout"; docs/architecture.md, the install flow).
///
/// Guarantees, whatever instant a process is killed at:
/// - nothing becomes visible before it is verified and durable: bundles are extracted into `staging/`,
///   every file hashed as it streams, flushed with one `syncfs`, renamed into `packages/<id>/versions/<v>/`,
///   and only then does the atomic replacement of `state.json` make it active;
/// - the previous version stays until the new one is confirmed, and rollback is one state replacement;
/// - opening a store recovers: stale staging folders, temporary state files, unreferenced versions and
///   half-deleted trees are removed (versions that a running engine has pinned are kept).
///
/// Which version serves, what a failed trial falls back to and what stays on disk are decided by pure rules on
/// ``PackageState`` (`PackageState+Rules.swift`); the store reads, applies them and writes. Built-in bundles
/// (``StoreConfiguration/builtIns``) are the floor under every package and are served from their archives.
///
/// Mutations hold an exclusive `flock` on `<store>/lock`, so installers in different processes take turns;
/// readers read `state.json`, which is never partially written. Taking a pin and deleting a version are
/// serialised by a second, short lock (`pins/lock`), so an engine never pins a version that is being deleted.
public final class PackageStore: Sendable {
    public let layout: StoreLayout
    public let configuration: StoreConfiguration
    /// For ``changeToken()``: the package names and the folder time they were listed at.
    let packageNames = Locked<(token: Int64, names: [String]?)>((0, nil))
    /// For ``changeToken()``, under one lock (it is asked on every request, from every thread): state switches
    /// made through this object (one made here invalidates the cached token at once), and the last token, when
    /// it was computed (monotonic nanoseconds) and the switch count at that moment.
    let tokenCache = Locked<(switches: Int, recent: (token: [Int64], at: UInt64, switches: Int)?)>((0, nil))
    /// The built-in packages served, by id.
    let builtIns: [PackageID: BuiltInPackage]
    /// Built-in bundles that were not accepted, and why.
    public let builtInRefusals: [BuiltInRefusal]
    /// Test-only: runs while ``pinnedPackages()`` holds the pin lock, between reading and pinning.
    let pinningHook = Locked<(@Sendable () -> Void)?>(nil)
    /// Test-only: runs once an operation has taken the store lock, before its work.
    let lockedHook = Locked<(@Sendable () -> Void)?>(nil)
    /// Whether the app let go of the store's locks for a suspension, the operations holding one, and the pins this
    /// store made (``suspend(whenUnlocked:)``, decision 0037).
    let suspension = Locked(Suspension())

    struct Suspension {
        var suspended = false
        /// Operations of this store holding (or waiting for) the store lock or the pin lock.
        var holders = 0
        /// Run when `holders` falls to zero while suspended (or when ``resume()`` ends the suspension first).
        var whenUnlocked: [@Sendable () -> Void] = []
        var pins: [WeakPin] = []
    }

    /// The pins this store made, held weakly: the engine owns them, and a pin it drops ends.
    struct WeakPin {
        weak var pin: VersionPin?
    }
    /// The store-wide change counter every mutation advances and ``changeToken()`` reads.
    let generation: StoreGeneration
    /// What the operation holding the store lock has changed so far. Only the holder touches it: the flock
    /// serialises holders, this process's threads included (each takes its own descriptor).
    let operation = Locked(Operation())

    struct Operation {
        /// The counter was made odd (``StoreGeneration/begin()``) and must be made even when the operation ends.
        var changing = false
        /// Packages given a recovery marker by this operation.
        var marked: Set<PackageID> = []
        /// Packages that may hold leftovers when the operation ends (a version kept only by a running engine's pin,
        /// a version the state stopped referring to): their markers stay for a later open.
        var unclean: Set<PackageID> = []
    }

    /// Opens (creating when missing) the store at `root`, and recovers from any interrupted operation.
    public init(root: String, configuration: StoreConfiguration = StoreConfiguration()) throws(StoreError) {
        layout = StoreLayout(root: root)
        generation = StoreGeneration(path: layout.generation)
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
        // A built-in ships with the app: with trust, its signature counts when a key the bundles role has or ever had
        // in a version held made it (a revoked key never strands an app), or any key when none is known yet.
        var builtInConfiguration = configuration
        if let trust = Self.trustState(configuration, layout) {
            let signers = trust.bundleSigners(.builtIn)
            builtInConfiguration.trustedKeys = signers.keys.keys.sorted().map { signers.keys[$0]! }
        }
        var loaded = try BuiltIns.load(configuration.builtIns, configuration: builtInConfiguration, layout: layout)
        // A built-in may not claim what another installed package already serves. Only an app with built-ins pays
        // for this look at every package (each active manifest read once, whatever the number of built-ins).
        if !loaded.packages.isEmpty {
            var conflicts: [PackageID: BuiltInRefusal] = [:]
            for other in FileSystem.list(layout.packages).compactMap({ try? PackageID($0) }) {
                guard let stored = try? PackageState.decode(FileSystem.read(layout.state(other)), path: layout.state(other)),
                    let manifest = try? Self.readManifest(layout.version(other, stored.active))
                else { continue }
                for (id, builtIn) in loaded.packages where id != other && conflicts[id] == nil {
                    if let conflict = BuiltIns.scopeConflict(builtIn.manifest, manifest) { conflicts[id] = BuiltIns.refusal(builtIn.bundle, conflict) }
                }
            }
            for (id, refusal) in conflicts.sorted(by: { $0.key < $1.key }) {
                loaded.packages[id] = nil
                loaded.refusals.append(refusal)
            }
        }
        builtIns = loaded.packages
        builtInRefusals = loaded.refusals
        try recover(holding: lock)
    }

    // MARK: Install

    /// Installs a bundle as the new active version of its package, on trial.
    ///
    /// - Parameters:
    ///   - expectedSHA256: the bundle file's own hash when known (`--sha256`, the catalog); checked before anything
    ///     else is read.
    ///   - retryingFailed: install a version that failed here before (its trial ran out, or a rollback left it).
    ///     Only an explicit choice does (`satchel install`); an automatic one (the updater) is refused with
    ///     ``StoreError/failedBefore(id:version:)``, so a crashing release is not brought back by the next update.
    ///   - signatures: keyed signatures of the bundle's `satchel.json` beyond its `satchel.sig` (a catalog entry's
    ///     `signatures`, a `<bundle>.sigs`).
    ///     Counted only with a ``StoreConfiguration/trustAnchor``, against the `bundles` role; those that count are
    ///     kept beside the version (`packages/<id>/signatures/<version>.sigs`) for ``check()``.
    @discardableResult
    public func install(
        bundle path: String, expectedSHA256: String? = nil, retryingFailed: Bool = false, signatures: [KeyedSignature] = []
    ) throws(StoreError) -> InstallResult {
        try withStoreLock { () throws(StoreError) -> InstallResult in
            try installLocked(bundle: path, expectedSHA256: expectedSHA256, retryingFailed: retryingFailed, signatures: signatures)
        }
    }

    private func installLocked(bundle path: String, expectedSHA256: String?, retryingFailed: Bool, signatures: [KeyedSignature]) throws(StoreError) -> InstallResult {
        if let expected = expectedSHA256?.lowercased() {
            let actual = try Self.sha256(ofFile: path)
            guard actual == expected else { throw .bundleChecksumMismatch(expected: expected, actual: actual) }
        }
        let reader: BundleReader
        do { reader = try BundleReader(path: path, limits: configuration.archiveLimits) } catch {
            throw .invalidBundle(error)
        }
        let manifest = reader.manifest
        let id = manifest.id
        // The one rule (TrustState.judgeBundle): with roots, a threshold of the bundles role (a catalog key alone never
        // makes a bundle installable); with plain keys, satchel.sig by one of them.
        let kept = try judgeBundle(reader, keyed: signatures).kept
        try checkScope(of: manifest)
        let loaded = try loadState(of: id)
        let builtIn = builtIns[id]
        let previous = loaded.effective
        if let previous, previous.failed.contains(manifest.version), !retryingFailed {
            throw .failedBefore(id: id.value, version: manifest.version.description)
        }
        // The rules decide before anything is extracted: a version below the built-in is refused here.
        var available = availability(of: id)
        available.installed.insert(manifest.version)
        var next = previous ?? .firstInstall(manifest.version)
        if previous != nil { _ = try apply(id) { () throws(StateRefusal) in try next.install(manifest.version, in: available) } }
        FaultInjection.checkpoint("verify")

        let target = layout.version(id, manifest.version)
        var extracted = false
        var applied: DeltaApplied?
        if let builtIn, builtIn.version == manifest.version {
            // The app's own built-in version: nothing to extract, the archive serves it; other content under the
            // same number is refused, since two different packages must not share a version number.
            guard builtIn.manifest.contentHash == manifest.contentHash else {
                throw .invalidBundle(.manifest(.invalidField(FieldError(
                    field: "version", value: manifest.version.description,
                    reason: "is the app's built-in version with different content (contentHash \(builtIn.manifest.contentHash))"))))
            }
        } else if FileSystem.isDirectory(target) {
            // The same version again: fine if it is the same content (an interrupted update retried), refused
            // if it differs, since two different packages must not share a version number.
            let existing = try installedManifest(id, manifest.version)
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
        // The signatures that counted go beside the version once it is there (packages/<id>/signatures/), and go again
        // if the state switch fails. A crash in between leaves the version with its satchel.sig alone for check().
        let keptSignatures = builtIn?.version == manifest.version ? nil : keptTrust.keepSignatures(kept, of: id, manifest.version)
        let result = InstallResult(
            id: id, version: manifest.version, fileCount: manifest.files.count,
            bytes: manifest.totalSize, contentHash: manifest.contentHash, previous: previous?.active.description,
            extracted: extracted, delta: applied, builtIn: builtIn?.version == manifest.version ? true : nil)
        guard loaded.needsWriting(next) else { return result }
        do {
            try writeState(next, for: id, replacing: loaded.stored)
            if next.active == manifest.version { noteActiveScope(of: id, manifest) }
        } catch {
            if extracted { try? discard(target) }
            if let keptSignatures { unlink(keptSignatures) }
            if loaded.stored == nil, FileSystem.list(layout.versions(id)).isEmpty { try? discard(layout.package(id)) }
            throw error
        }
        return result
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
        let builtInBase = builtIns[manifest.id].flatMap { $0.version == delta.from ? $0 : nil }
        let base: Manifest
        if FileSystem.isDirectory(baseFolder) {
            base = try installedManifest(manifest.id, delta.from)
        } else if let builtInBase {
            base = builtInBase.manifest
        } else {
            throw .deltaBaseNotInstalled(id: manifest.id.value, version: delta.from.description)
        }
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
                if FileSystem.isDirectory(baseFolder) {
                    if try FileSystem.linkOrCopy(baseFolder + "/" + file.path.value, to: destination) { applied.linked += 1 } else { applied.copied += 1 }
                } else if let builtInBase {
                    // A built-in lives in the app's archive: its unchanged files are copied out (decoded when deflated).
                    try Self.copy(file, from: builtInBase.bundle, to: destination)
                    applied.copied += 1
                }
                taken.append((file, destination))
            }
            if let damaged = try Self.firstMismatch(taken) {
                throw .baseFileDamaged(id: manifest.id.value, version: delta.from.description, path: damaged.value)
            }
        }
        return applied
    }

    /// Writes one file of a bundle served in place to a new file; its hash is checked afterwards with the rest.
    private static func copy(_ file: FileRecord, from bundle: InPlaceBundle, to destination: String) throws(StoreError) {
        let reader: ZipEntryReader
        do { reader = try bundle.reader(for: file) } catch { throw .invalidBundle(error) }
        let output = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard output >= 0 else { throw .system("create", destination) }
        defer { close(output) }
        while !reader.isAtEnd {
            let chunk: [UInt8]
            do { chunk = try reader.read(upTo: 256 << 10) } catch { throw .invalidBundle(.archive(error)) }
            try FileSystem.writeAll(output, chunk, path: destination)
        }
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
            // A suspension stops the install at its next file: the lock must be let go before iOS suspends the app.
            let sink = StagingSink(root: staging, fileCount: manifest.files.count) { [self] in suspendedRefusal() }
            try fill(sink)
            try FileSystem.writeAtomically(reader.manifestBytes, to: staging + "/" + Manifest.fileName)
            if let signature = reader.signatureBytes {
                try FileSystem.writeAtomically(signature, to: staging + "/" + Manifest.signatureFileName)
            }
            // A version renamed in but never referred to (killed before the state switch) is a leftover the next
            // open must find without looking at every package: the marker says where. The flush below makes it
            // durable before the rename can be.
            try markForRecovery(manifest.id, durable: false)
            FaultInjection.checkpoint("durability")
            try FileSystem.syncFileSystem(containing: staging, entries: sink.createdEntries + [staging, layout.staging])
            FaultInjection.checkpoint("rename")
            try FileSystem.makeDirectories(layout.versions(manifest.id))
            try beginChange()
            guard rename(staging, target) == 0 else { throw StoreError.system("rename", staging) }
            try FileSystem.syncDirectory(layout.versions(manifest.id))
        } catch {
            try? FileSystem.removeTree(staging)
            throw error
        }
    }

    /// Two packages with different ids may not claim the same host with the same path prefix (built-ins included).
    private func checkScope(of manifest: Manifest) throws(StoreError) {
        if let (other, host) = try scopeConflict(with: manifest.scope, except: manifest.id) {
            throw .scopeConflict(id: manifest.id.value, otherID: other.value, host: host, pathPrefix: manifest.scope.pathPrefix.value)
        }
    }

    // MARK: Helpers

    /// Replaces a package's `state.json`. Its temporary is written in `staging/`, which every open empties, so a
    /// writer killed before the rename leaves nothing that recovery must look for in the package's folder.
    /// - Parameter previous: the state it replaces; versions it referred to that this one does not are left on disk
    ///   (a rollback does not delete), so the package is marked for the next open to clear.
    func writeState(_ state: PackageState, for id: PackageID, replacing previous: PackageState?) throws(StoreError) {
        try FileSystem.makeDirectories(layout.package(id))
        if let previous, !previous.referencedVersions.isSubset(of: state.referencedVersions) { try markUnclean(id) }
        try beginChange()
        defer { tokenCache.withLock { $0.switches += 1 } }
        try FileSystem.writeAtomically(state.canonicalBytes, to: layout.state(id), temporaryFolder: layout.staging) {
            FaultInjection.checkpoint("switch")
        }
    }

    /// Runs `body` holding the store lock: every operation that reads state to change it does, so two processes
    /// never apply rules to the same state at once. When it ends, the change counter is made even again and the
    /// recovery markers of packages it left clean are removed (a failed operation keeps them: the next open looks).
    ///
    /// While the store is suspended (``suspend(whenUnlocked:)``) it refuses with ``StoreError/suspended(store:lock:)``:
    /// a lock taken now could still be held when iOS suspends the app.
    func withStoreLock<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        try enterLocked(refusingWhileSuspended: true)
        defer { leaveLocked() }
        return try holdingStoreLock(body)
    }

    /// ``withStoreLock(_:)``'s work, in a function of its own so that the lock is let go when it returns, before
    /// ``leaveLocked()`` may tell a suspension that nothing holds a lock.
    private func holdingStoreLock<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        let lock = try StoreLock(path: layout.lockFile)
        defer { withExtendedLifetime(lock) {} }
        lockedHook.withLock { $0 }?()
        operation.withLock { $0 = Operation() }
        let result: T
        do { result = try body() } catch {
            finishOperation(succeeded: false)
            throw error
        }
        finishOperation(succeeded: true)
        return result
    }

    /// Ends the operation holding the lock. An even counter that cannot be written stays odd, which readers treat
    /// as "look at every package": slower, never wrong; so its failure does not fail the operation.
    func finishOperation(succeeded: Bool) {
        let done = operation.withLock { current -> Operation in
            defer { current = Operation() }
            return current
        }
        if succeeded {
            for id in done.marked.subtracting(done.unclean) { unlink(layout.recoveryMarker(id)) }
        }
        if done.changing {
            try? generation.end()
            tokenCache.withLock { $0.switches += 1 }
        }
    }

    /// Called before the first change under `packages/` of the operation holding the lock: makes the counter odd.
    func beginChange() throws(StoreError) {
        guard !operation.withLock({ $0.changing }) else { return }
        try generation.begin()
        operation.withLock { $0.changing = true }
    }

    /// Leaves `staging/recover-<id>` for the next open, unless this operation already did.
    /// - Parameter durable: flush `staging/` now (else the caller flushes it before the change it guards is durable).
    func markForRecovery(_ id: PackageID, durable: Bool) throws(StoreError) {
        guard !operation.withLock({ $0.marked.contains(id) }) else { return }
        let path = layout.recoveryMarker(id)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .system("create", path) }
        close(descriptor)
        if durable { try FileSystem.syncDirectory(layout.staging) }
        operation.withLock { _ = $0.marked.insert(id) }
    }

    /// The package may hold leftovers when this operation ends: its marker stays.
    func markUnclean(_ id: PackageID) throws(StoreError) {
        try markForRecovery(id, durable: true)
        operation.withLock { _ = $0.unclean.insert(id) }
    }

    /// A package's state as read under the store lock.
    struct LoadedState {
        /// Its `state.json`; nil when it has none (a package only its built-in provides).
        let stored: PackageState?
        /// As it serves: the stored state lifted to the built-in floor (``PackageState/effective(stored:builtIn:)``).
        let effective: PackageState?

        /// Whether `state`, the result of a rule, must be written. A package that only its built-in provides keeps
        /// having no state file until something is installed or chosen.
        func needsWriting(_ state: PackageState) -> Bool {
            if let stored { return stored != state }
            return state != effective
        }
    }

    func loadState(of id: PackageID) throws(StoreError) -> LoadedState {
        let stored = try storedState(of: id)
        return LoadedState(stored: stored, effective: PackageState.effective(stored: stored, builtIn: builtIns[id]?.version))
    }

    /// Writes the state a rule produced, unless nothing changed.
    func persist(_ state: PackageState, for id: PackageID, _ loaded: LoadedState) throws(StoreError) {
        if loaded.needsWriting(state) { try writeState(state, for: id, replacing: loaded.stored) }
    }

    /// Applies a rule, naming the package in the error it refuses with.
    func apply<T>(_ id: PackageID, _ rule: () throws(StateRefusal) -> T) throws(StoreError) -> T {
        do { return try rule() } catch { throw StoreError(refusal: error, id: id) }
    }

    /// Removes a tree so that a crash half-way leaves nothing visible: first one atomic rename into
    /// `staging/` (cleared by recovery), then the slow deletion.
    func discard(_ path: String) throws(StoreError) {
        guard FileSystem.exists(path) else { return }
        let trash = try moveToTrash(path)
        FaultInjection.checkpoint("trash")
        try FileSystem.removeTree(trash)
    }

    /// The atomic half of ``discard(_:)``: renames the tree into `staging/` and returns where it went.
    func moveToTrash(_ path: String) throws(StoreError) -> String {
        try beginChange()
        let trash = layout.staging + "/" + FileSystem.randomName("trash")
        guard rename(path, trash) == 0 else { throw .system("rename", path) }
        try FileSystem.syncDirectory(FileSystem.parent(of: path))
        return trash
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
