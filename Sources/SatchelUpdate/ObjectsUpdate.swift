import Foundation
import SatchelArchive
import SatchelBundle
import SatchelCore
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

    /// What the objects path took, for the outcome.
    struct Taken {
        var install: InstallResult
        var received: Int64
        var resumed: Bool
        var patchFrom: String
        var objects: Int
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
        let patchFile = try await download.download(
            DownloadTarget(url: try fetched.resolve(patchEntry.url), size: patchEntry.size, sha256: patchEntry.sha256), into: folder,
            counting: &spent, progress: progress)
        defer { unlink(patchFile.path) }
        var received = patchFile.received
        var resumed = patchFile.resumed
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
        guard Digests.sha256Hex(rebuilt.bytes) == content.manifest else {
            throw .content(url: patchEntry.url, "the rebuilt manifest's sha256 is not the catalog's")
        }
        guard rebuilt.manifest.id == entry.id, rebuilt.manifest.version == entry.version else {
            throw .catalogMismatch(url: patchEntry.url, catalog: "\(entry.id) \(entry.version)", bundle: "\(rebuilt.manifest.id) \(rebuilt.manifest.version)")
        }

        // What each target file the base lacks comes from: another version on the device, or an object.
        let baseFiles = Dictionary(uniqueKeysWithValues: base.manifest.files.map { ($0.path, $0.sha256) })
        var onDisk: [String: DeltaAssembler.Source] = [:]
        for other in bases {
            for file in other.manifest.files where onDisk[file.sha256] == nil { onDisk[file.sha256] = other.source(file) }
        }
        let objectsOf = Dictionary(patch.set.map { ($0.file.sha256, $0.object) }) { first, _ in first }
        var parts: [(FileRecord, DeltaAssembler.Source?)] = []
        var needed: [String: ContentObject] = [:]
        for file in rebuilt.manifest.files where baseFiles[file.path] != file.sha256 {
            if let local = onDisk[file.sha256] {
                parts.append((file, local))
            } else if let object = objectsOf[file.sha256] {
                needed[file.sha256] = object
                parts.append((file, nil))
            } else {
                throw .content(url: patchEntry.url, "the patch gives no object for \(file.path), which no version on the device holds")
            }
        }
        let cost = UpdatePlan.Cost(bytes: patchEntry.size + needed.values.reduce(0) { $0 + $1.size }, requests: 1 + needed.count)
        guard UpdatePlan.cheapest(objects: cost, delta: delta, full: full) == .objects else { return nil }

        // Several objects at once, each resumed where a broken connection left it and checked against its SHA-256.
        var targets: [DownloadTarget] = []
        for (sha256, object) in needed {
            targets.append(DownloadTarget(url: try fetched.resolve(content.objects + object.path(forContent: sha256)), size: object.size, sha256: object.sha256))
        }
        let objects = try await ContentFetch(download: download, folder: folder, concurrency: concurrency).fetch(targets, spent: &spent, progress: progress)
        defer { for path in objects.paths.values { unlink(path) } }
        received += objects.received
        resumed = resumed || objects.resumed
        var fetchedObjects: [String: DeltaAssembler.Source] = [:]
        for (sha256, object) in needed {
            guard let path = objects.paths[object.sha256] else {
                throw .content(url: content.objects, "the object of \(sha256) was not fetched")
            }
            fetchedObjects[sha256] = object.gzip ? .gzipFile(path) : .file(path)
        }
        let files = parts.map { part in (part.0, part.1 ?? fetchedObjects[part.0.sha256]!) }

        let targetPaths = Set(rebuilt.manifest.files.map(\.path))
        let deltaPath = folder + "/\(rebuilt.manifest.contentHash).objects.zip"
        defer { unlink(deltaPath) }
        do {
            let delta = try DeltaManifest(
                from: base.manifest.version, fromContentHash: base.manifest.contentHash,
                deleted: base.manifest.files.map(\.path).filter { !targetPaths.contains($0) })
            try DeltaAssembler.write(
                to: deltaPath, manifestBytes: rebuilt.bytes, signature: patch.signature.map { Array($0.utf8) }, delta: delta, files: files)
        } catch let error as DeltaError {
            throw .content(url: patchEntry.url, "cannot assemble the version: \(error)")
        } catch {
            throw .content(url: patchEntry.url, "cannot assemble the version: \(error)")
        }
        let digest: (size: Int64, sha256: String)
        do { digest = try FileDigest.sha256(ofFile: deltaPath) } catch { throw .io(operation: "read", path: deltaPath, errno: error.errno) }
        let install: InstallResult
        do { install = try store.install(bundle: deltaPath, expectedSHA256: digest.sha256) } catch { throw .store(error) }
        return Taken(
            install: install, received: received, resumed: resumed, patchFrom: patch.from?.version.description ?? "nothing", objects: needed.count)
    }

    /// How many of `target`'s files `base` holds at the same path with the same bytes.
    static func overlap(_ base: Manifest, _ target: Manifest) -> Int {
        let files = Dictionary(uniqueKeysWithValues: base.files.map { ($0.path, $0.sha256) })
        return target.files.filter { files[$0.path] == $0.sha256 }.count
    }
}
