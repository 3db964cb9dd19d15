import Foundation
import SatchelArchive
import SatchelBundle
import SatchelCore
import SatchelDiff
import SatchelPlatform
import SatchelStore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The objects path of an update (docs/formats.md, "Objects and patches"): the new version's manifest rebuilt from a
/// small patch on a version the device holds (installed, or the built-in), then only the files no version on the
/// device holds, as content-addressed objects; the rest is taken from disk. The parts become a delta on the device,
/// which the store installs as any delta (signature, every file's hash, the durable switch).
struct ObjectsUpdate {
    let store: PackageStore
    let download: ResumableDownload
    let folder: String
    /// Objects in flight at once (``UpdaterOptions/concurrency``).
    let concurrency: Int

    /// What a diff may take on this device (``FileDiffLimits/device``: a window of max(8 MiB, twice the file), 64 MiB
    /// in all); diffs past it are never fetched, their files go as objects.
    var limits: FileDiffLimits = .device

    /// What the objects path took, for the outcome.
    struct Taken {
        var install: InstallResult
        /// Every byte received: the patch, the index, objects and diffs (refused ones included).
        var received: Int64
        var resumed: Bool
        var patchFrom: String
        /// Objects downloaded, those fetched after their diff was refused included.
        var objects: Int
        var objectBytes: Int64
        var diffs: DiffUse
    }

    /// A needed content that comes as a diff: the diff, the held content it applies to, and the size it must make.
    struct DiffRoute: Sendable {
        let diff: FileDiffIndex.Diff
        let source: HeldContent
        let size: Int64
    }

    /// What the diffs did in one update, for the outcome (docs/formats.md, "Diffs").
    struct DiffUse: Sendable, Equatable {
        /// The catalog entry lists diffs (`content.diffs`).
        var listed = false
        /// Why the index was not used, when it was asked for and refused.
        var indexFallback: DiffRefusal?
        /// Bytes received for the index and the diffs, refused ones included.
        var bytes: Int64 = 0
        /// Files made from a diff.
        var applied = 0
        /// Why each diff that was refused was, in the order of the contents' SHA-256; its file came as its object.
        var refusals: [DiffRefusal] = []
    }

    /// The versions on the device the target can be built from, newest first: installed folders and the built-in.
    struct Base {
        let manifest: Manifest
        let source: (FileRecord) -> DeltaAssembler.Source
    }

    func bases(of id: PackageID) -> [Base] {
        var found: [Base] = []
        for version in store.installedVersions(of: id).sorted(by: >) {
            guard let manifest = try? store.installedManifest(id, version) else { continue }
            let root = store.layout.version(id, version)
            found.append(Base(manifest: manifest, source: { .file(root + "/" + $0.path.value) }))
        }
        for builtIn in store.builtInPackages where builtIn.id == id && !found.contains(where: { $0.manifest.version == builtIn.version }) {
            let bundle = builtIn.bundle
            found.append(Base(manifest: builtIn.manifest, source: { .bundle(bundle, $0) }))
        }
        return found
    }

    /// Installs `entry` through its objects, or returns nil when the patch and the objects would not weigh less than
    /// the delta (nil: none) or the full bundle (``UpdatePlan/cheapest(objects:delta:full:)``: bytes and requests);
    /// every byte received (a patch or object then refused included) counts in `spent`.
    func install(
        _ entry: CatalogEntry, content: CatalogContent, from fetched: FetchedCatalog, delta: UpdatePlan.Cost?, full: UpdatePlan.Cost,
        spent: inout Int64, progress: @Sendable (Int64, Int64) -> Void
    ) async throws(UpdateError) -> Taken? {
        let bases = bases(of: entry.id)
        guard !bases.isEmpty else { return nil }
        // The smallest patch from a version on the device, else the one from nothing.
        let onDevice = Set(bases.map(\.manifest.version))
        let patchEntry = content.patches.filter { $0.from.map(onDevice.contains) ?? false }.min { $0.size < $1.size } ?? content.patch(from: nil)
        // The patch alone, one request, is the least the objects can weigh: not worth fetching when that loses already.
        guard let patchEntry, UpdatePlan.cheapest(objects: UpdatePlan.Cost(bytes: patchEntry.size, requests: 1), delta: delta, full: full) == .objects
        else { return nil }
        // The diff index, fetched beside the patch when the objects way could still win with it at its best: one round
        // trip for both instead of two in a row (docs/formats.md, "When the index is fetched").
        let early = content.diffs.flatMap { diffs in
            FileDiffRoutes.fetchesIndexWithPatch(indexSize: diffs.size, patchSize: patchEntry.size, delta: delta, full: full) ? diffs : nil
        }
        async let earlyIndex = fetchIndex(early, for: entry, from: fetched, progress: progress)
        let read: ReadPatch
        do {
            read = try await readPatch(patchEntry, bases: bases, entry: entry, content: content, from: fetched, spent: &spent, progress: progress)
        } catch {
            // Every byte received counts, the index's too.
            spent += (await earlyIndex)?.spent ?? 0
            throw error
        }
        defer { unlink(read.file.path) }
        let (patch, rebuilt, base, parts, needed, neededContents) = (read.patch, read.rebuilt, read.base, read.parts, read.needed, read.neededContents)
        var received = read.file.received
        var resumed = read.file.resumed
        let held = HeldContents(bases: bases)

        // Per-file diffs, when the version lists them and their index was fetched with the patch or can pay for itself
        // now: each needed content then comes as the smallest diff from a content the device holds, when that is
        // smaller than its object.
        var diffing = DiffUse()
        var routes: [String: DiffRoute] = [:]
        if let diffs = content.diffs {
            diffing.listed = true
            var index: IndexFetch?
            if early != nil {
                index = await earlyIndex
            } else if FileDiffRoutes.indexCanPay(
                indexSize: diffs.size, patchSize: patchEntry.size, needed: Array(neededContents.values), delta: delta, full: full,
                limits: limits)
            {
                index = await fetchIndex(diffs, for: entry, from: fetched, progress: progress)
            }
            if let index {
                spent += index.spent
                diffing.bytes += index.spent
                received += index.spent
                switch index.result {
                case .failure(let error): throw error
                case .success(.failure(let why)): diffing.indexFallback = why
                case .success(.success(let read)): routes = chooseDiffs(read, for: entry, needed: neededContents, held: held)
                }
            }
        }
        let objectBytes = needed.filter { routes[$0.key] == nil }.values.reduce(Int64(0)) { $0 + $1.size }
        let diffBytes = routes.values.reduce(Int64(0)) { $0 + $1.diff.size }
        // The index was weighed when it was asked for (only when it could pay); read, it is spent whichever way wins,
        // so the way is weighed as before diffs with each routed file's diff in place of its object: diffs never send
        // a device a heavier way than it took without them.
        let cost = UpdatePlan.Cost(bytes: patchEntry.size + objectBytes + diffBytes, requests: 1 + needed.count)
        guard UpdatePlan.cheapest(objects: cost, delta: delta, full: full) == .objects else { return nil }

        let gathered = try await gather(
            needed, routes: routes, content: content, from: fetched, diffing: &diffing, spent: &spent, progress: progress)
        defer { for path in gathered.files { unlink(path) } }
        received += gathered.received
        resumed = resumed || gathered.resumed
        let fetchedSources = gathered.sources
        let files = parts.map { part in (part.0, part.1 ?? fetchedSources[part.0.sha256]!) }

        let install = try await assembleAndInstall(rebuilt, signature: patch.signature, base: base, files: files, entry: entry, url: patchEntry.url)
        return Taken(
            install: install, received: received, resumed: resumed, patchFrom: patch.from?.version.description ?? "nothing",
            objects: gathered.objects, objectBytes: gathered.objectBytes, diffs: diffing)
    }

    /// A manifest rebuilt from a patch must be the one the catalog names (its SHA-256) and the entry's id and version.
    static func check(
        _ rebuilt: (bytes: [UInt8], manifest: Manifest), against entry: CatalogEntry, content: CatalogContent, url: String
    ) throws(UpdateError) {
        guard Digests.sha256Hex(rebuilt.bytes) == content.manifest else {
            throw .content(url: url, "the rebuilt manifest's sha256 is not the catalog's")
        }
        guard rebuilt.manifest.id == entry.id, rebuilt.manifest.version == entry.version else {
            throw .catalogMismatch(url: url, catalog: "\(entry.id) \(entry.version)", bundle: "\(rebuilt.manifest.id) \(rebuilt.manifest.version)")
        }
    }

    /// The version, assembled on the device as a delta from `base` (the rebuilt manifest, the patch's signature, each
    /// file from where it comes), installed by the store exactly as a downloaded delta: signature, every file's hash,
    /// the durable switch. The assembled file is deleted afterwards.
    func assembleAndInstall(
        _ rebuilt: (bytes: [UInt8], manifest: Manifest), signature: String?, base: Base, files: [(FileRecord, DeltaAssembler.Source)],
        entry: CatalogEntry, url: String
    ) async throws(UpdateError) -> InstallResult {
        let targetPaths = Set(rebuilt.manifest.files.map(\.path))
        let deltaPath = folder + "/\(rebuilt.manifest.contentHash).objects.zip"
        defer { unlink(deltaPath) }
        do {
            let delta = try DeltaManifest(
                from: base.manifest.version, fromContentHash: base.manifest.contentHash,
                deleted: base.manifest.files.map(\.path).filter { !targetPaths.contains($0) })
            try DeltaAssembler.write(
                to: deltaPath, manifestBytes: rebuilt.bytes, signature: signature.map { Array($0.utf8) }, delta: delta, files: files)
        } catch let error as DeltaError {
            throw .content(url: url, "cannot assemble the version: \(error)")
        } catch {
            throw .content(url: url, "cannot assemble the version: \(error)")
        }
        let digest: (size: Int64, sha256: String)
        do { digest = try FileDigest.sha256(ofFile: deltaPath) } catch { throw .io(operation: "read", path: deltaPath, errno: error.errno) }
        // The entry's bundle signatures go with the version assembled here, as with a downloaded bundle or delta. On a
        // thread of its own, as every install the updater makes (Updater.install): it waits for the store lock.
        let (store, sha256, signatures) = (store, digest.sha256, entry.signatures)
        do {
            return try await onOwnThread { () throws(StoreError) in try store.install(bundle: deltaPath, expectedSHA256: sha256, signatures: signatures) }
        } catch { throw .store(error) }
    }

    /// The needed contents, fetched: what the assembled delta reads each from, and the files to delete after it.
    struct Gathered {
        var sources: [String: DeltaAssembler.Source] = [:]
        /// Downloaded objects and diff results, deleted once the version is installed (or refused).
        var files: [String] = []
        var received: Int64 = 0
        var resumed = false
        var objects = 0
        var objectBytes: Int64 = 0
    }

    /// Fetches every needed content: the routed ones as diffs, the rest as objects, together and several at once
    /// (``ContentFetch``: each resumable, checked against its size and SHA-256). Each diff is then applied in turn (one
    /// in memory at a time) and its result checked; a diff refused at any step is not the update's failure: its file's
    /// object is fetched after. Thrown: an object refused (the way falls back to the delta or the bundle), a full disk,
    /// a cancellation. Every byte received is in `spent`.
    private func gather(
        _ needed: [String: ContentObject], routes: [String: DiffRoute], content: CatalogContent,
        from fetched: FetchedCatalog, diffing: inout DiffUse, spent: inout Int64, progress: @Sendable (Int64, Int64) -> Void
    ) async throws(UpdateError) -> Gathered {
        func objectTarget(_ sha256: String) throws(UpdateError) -> DownloadTarget {
            let object = needed[sha256]!
            return DownloadTarget(url: try fetched.resolve(content.objects + object.path(forContent: sha256)), size: object.size, sha256: object.sha256)
        }
        var objectTargets: [DownloadTarget] = []
        for sha256 in needed.keys where routes[sha256] == nil { objectTargets.append(try objectTarget(sha256)) }
        var diffTargets: [String: DownloadTarget] = [:]
        for (sha256, route) in routes {
            guard let base = content.diffs?.base else { break }
            diffTargets[sha256] = DownloadTarget(url: try fetched.resolve(base + route.diff.path), size: route.diff.size, sha256: route.diff.sha256)
        }
        var gathered = Gathered()
        // Whatever is thrown below, what was downloaded or written so far goes.
        var keep = false
        var downloaded: [String: String] = [:]
        defer { if !keep { for path in Array(downloaded.values) + gathered.files { unlink(path) } } }

        // Two routes can take the very same diff bytes (two files with the same edit at the same place): each
        // distinct diff is fetched, counted and kept once, and used by every route that names it.
        let distinctDiffs = Dictionary(diffTargets.values.map { ($0.sha256, $0) }) { first, _ in first }
        let fetch = ContentFetch(download: download, folder: folder, concurrency: concurrency)
        let first = try await fetch.fetch(
            objectTargets + Array(distinctDiffs.values), tolerating: Set(distinctDiffs.keys), spent: &spent, progress: progress)
        downloaded = first.paths
        gathered.received = first.received
        gathered.resumed = first.resumed
        gathered.objectBytes = objectTargets.reduce(Int64(0)) { $0 + (first.receivedBy[$1.sha256] ?? 0) }
        let diffsReceived = distinctDiffs.keys.reduce(Int64(0)) { $0 + (first.receivedBy[$1] ?? 0) }
        diffing.bytes += diffsReceived
        // A refused diff's bytes were received all the same: every byte counts.
        gathered.received += distinctDiffs.keys.reduce(Int64(0)) { $0 + (first.refused[$1] == nil ? 0 : first.receivedBy[$1] ?? 0) }

        var fallbacks: [String] = []
        let application = FileDiffApplication(limits: limits)
        for (sha256, route) in routes.sorted(by: { $0.key < $1.key }) {
            let target = diffTargets[sha256]!
            let result: Result<String, DiffRefusal>
            if let error = first.refused[target.sha256] {
                result = .failure(.download(error))
            } else if let file = downloaded[target.sha256] {
                // Left in `downloaded` for another route that names the same diff; removed with the rest.
                result = try application.apply(
                    route.diff, file: file, url: target.url, source: route.source, targetSize: route.size,
                    output: folder + "/\(sha256).from-diff")
            } else {
                result = .failure(.download(.content(url: target.url, "the diff was not fetched")))
            }
            switch result {
            case .success(let path):
                gathered.files.append(path)
                gathered.sources[sha256] = .file(path)
                diffing.applied += 1
            case .failure(let why):
                diffing.refusals.append(why)
                fallbacks.append(sha256)
            }
        }
        // The objects of refused diffs: now they must come, as any object must.
        if !fallbacks.isEmpty {
            var targets: [DownloadTarget] = []
            for sha256 in fallbacks { targets.append(try objectTarget(sha256)) }
            let second = try await fetch.fetch(targets, spent: &spent, progress: progress)
            downloaded.merge(second.paths) { _, new in new }
            gathered.received += second.received
            gathered.resumed = gathered.resumed || second.resumed
            gathered.objectBytes += second.received
        }
        gathered.objects = objectTargets.count + fallbacks.count

        for (sha256, object) in needed where gathered.sources[sha256] == nil {
            guard let path = downloaded[object.sha256] else { throw .content(url: content.objects, "the object of \(sha256) was not fetched") }
            gathered.sources[sha256] = object.gzip ? .gzipFile(path) : .file(path)
        }
        gathered.files += downloaded.values
        keep = true
        return gathered
    }

    /// A diff index fetched: the index or why it was refused, or what stopped it (cancelled, a full disk); and the
    /// bytes it took.
    struct IndexFetch: Sendable {
        var result: Result<Result<FileDiffIndex, DiffRefusal>, UpdateError>
        var spent: Int64
    }

    /// Fetches the index `diffs` names (nil: none, and nothing fetched).
    private func fetchIndex(
        _ diffs: CatalogDiffs?, for entry: CatalogEntry, from fetched: FetchedCatalog, progress: @Sendable (Int64, Int64) -> Void
    ) async -> IndexFetch? {
        guard let diffs else { return nil }
        let routing = FileDiffRoutes(download: download, folder: folder, limits: limits)
        var spent: Int64 = 0
        do {
            return IndexFetch(result: .success(try await routing.index(diffs, for: entry, from: fetched, spent: &spent, progress: progress)), spent: spent)
        } catch {
            return IndexFetch(result: .failure(error), spent: spent)
        }
    }

    /// The patch, downloaded and applied: the version rebuilt and checked, the base the delta is assembled on, and per
    /// file the base lacks where it comes from (another version on the device) or that it is needed.
    struct ReadPatch {
        var file: DownloadReport
        var patch: ManifestPatch
        var rebuilt: (bytes: [UInt8], manifest: Manifest)
        var base: Base
        var parts: [(FileRecord, DeltaAssembler.Source?)]
        var needed: [String: ContentObject]
        var neededContents: [String: NeededContent]
    }

    private func readPatch(
        _ patchEntry: CatalogPatch, bases: [Base], entry: CatalogEntry, content: CatalogContent, from fetched: FetchedCatalog,
        spent: inout Int64, progress: @Sendable (Int64, Int64) -> Void
    ) async throws(UpdateError) -> ReadPatch {
        let patchFile = try await download.download(
            DownloadTarget(url: try fetched.resolve(patchEntry.url), size: patchEntry.size, sha256: patchEntry.sha256), into: folder,
            counting: &spent, progress: progress)
        var keep = false
        defer { if !keep { unlink(patchFile.path) } }
        let patch: ManifestPatch
        let rebuilt: (bytes: [UInt8], manifest: Manifest)
        let base: Base
        do {
            guard let data = FileManager.default.contents(atPath: patchFile.path) else { throw UpdateError.io(operation: "read", path: patchFile.path, errno: EIO) }
            patch = try ManifestPatch.decode(try GunzipReader.decompress(Array(data)))
            let patchBase = patch.from.flatMap { from in bases.first { $0.manifest.version == from.version } }
            rebuilt = try patch.apply(to: patchBase?.manifest)
            // The delta's base: the patch's, or (from nothing) the version that holds the most of the target as it is.
            base = patchBase ?? bases.max { Self.overlap($0.manifest, rebuilt.manifest) < Self.overlap($1.manifest, rebuilt.manifest) }!
        } catch let error as UpdateError {
            throw error
        } catch let error as ManifestPatchError {
            throw .content(url: patchEntry.url, error.description)
        } catch {
            throw .content(url: patchEntry.url, "the patch is not gzip: \(error)")
        }
        try Self.check(rebuilt, against: entry, content: content, url: patchEntry.url)

        // What each target file the base lacks comes from: another version on the device, or an object (or a diff).
        let baseFiles = Dictionary(uniqueKeysWithValues: base.manifest.files.map { ($0.path, $0.sha256) })
        let held = HeldContents(bases: bases)
        let objectsOf = Dictionary(patch.set.map { ($0.file.sha256, $0.object) }) { first, _ in first }
        var parts: [(FileRecord, DeltaAssembler.Source?)] = []
        var needed: [String: ContentObject] = [:]
        var neededContents: [String: NeededContent] = [:]
        for file in rebuilt.manifest.files where baseFiles[file.path] != file.sha256 {
            if let local = held[file.sha256] {
                parts.append((file, local.source))
            } else if let object = objectsOf[file.sha256] {
                needed[file.sha256] = object
                neededContents[file.sha256] = NeededContent(objectSize: object.size, size: file.size)
                parts.append((file, nil))
            } else {
                throw .content(url: patchEntry.url, "the patch gives no object for \(file.path), which no version on the device holds")
            }
        }
        keep = true
        return ReadPatch(file: patchFile, patch: patch, rebuilt: rebuilt, base: base, parts: parts, needed: needed, neededContents: neededContents)
    }

    /// Per needed content, the diff to take instead of its object. Other packages' versions are read only for sources
    /// the index names and this package's versions lack.
    private func chooseDiffs(_ index: FileDiffIndex, for entry: CatalogEntry, needed: [String: NeededContent], held: HeldContents) -> [String: DiffRoute] {
        var held = held
        let elsewhere = FileDiffRoutes.sourcesNotHeld(in: index, needed: needed, held: held, limits: limits)
        if !elsewhere.isEmpty { held.addOtherPackages(of: store, except: entry.id, wanted: elsewhere) }
        let chosen = FileDiffRoutes.routes(in: index, needed: needed, held: held, limits: limits)
        return chosen.compactMapValues { diff in
            guard let source = held[diff.from], let target = needed[diff.to] else { return nil }
            return DiffRoute(diff: diff, source: source, size: target.size)
        }
    }

    /// How many of `target`'s files `base` holds at the same path with the same bytes.
    static func overlap(_ base: Manifest, _ target: Manifest) -> Int {
        let files = Dictionary(uniqueKeysWithValues: base.files.map { ($0.path, $0.sha256) })
        return target.files.filter { files[$0.path] == $0.sha256 }.count
    }
}
