import Foundation
import SatchelBundle
import SatchelCore
import SatchelDiff
import SatchelStore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The step way of an update (docs/formats.md, "Steps"): one download from the version the device runs, holding the
/// manifest patch, a diff or the whole object per content the base lacks. It is applied as the objects way applies
/// its parts (one diff in memory at a time, every result checked against the manifest's SHA-256, a refused diff
/// replaced by its object) and installed through the same assembled delta.
extension ObjectsUpdate {
    /// What the step way took, for the outcome.
    struct StepTaken {
        var install: InstallResult
        /// Every byte received: the step, and the objects fetched for parts refused.
        var received: Int64
        var resumed: Bool
        /// Files made from the step's diffs, and taken whole from the step.
        var diffs: Int
        var wholeObjects: Int
        /// Objects fetched besides the step (for refused or missing parts), and their bytes.
        var fetchedObjects: Int
        var fetchedBytes: Int64
        var refusals: [DiffRefusal]
    }

    /// Downloads the step `step` names (resumable, checked against its size and SHA-256), checks that it leads from the
    /// version the device holds to `entry`, and installs the version it makes. Thrown: anything that refuses the step
    /// as a whole (the caller then takes the objects way, the delta or the bundle); every byte received is in `spent`.
    func installStep(
        _ step: CatalogStep, entry: CatalogEntry, content: CatalogContent, from fetched: FetchedCatalog, spent: inout Int64,
        progress: @Sendable (Int64, Int64) -> Void
    ) async throws(UpdateError) -> StepTaken {
        let bases = bases(of: entry.id)
        let url = try fetched.resolve(step.url)
        guard let base = bases.first(where: { $0.manifest.version == step.from }) else {
            throw .content(url: url, "the step leads from \(step.from), which this device does not hold")
        }
        let report = try await download.download(
            DownloadTarget(url: url, size: step.size, sha256: step.sha256), into: folder, counting: &spent, progress: progress)
        defer { unlink(report.path) }
        let file: StepFile
        let patch: ManifestPatch
        do {
            file = try StepFile.open(report.path)
            patch = try file.patch()
        } catch {
            if case .io(let operation, let path, let code) = error { throw .io(operation: operation, path: path, errno: code) }
            throw .content(url: url, error.description)
        }
        guard file.step.id == entry.id, file.step.version == entry.version else {
            throw .catalogMismatch(url: url, catalog: "\(entry.id) \(entry.version)", bundle: "\(file.step.id) \(file.step.version)")
        }
        guard file.step.from == base.manifest.version, file.step.fromContentHash == base.manifest.contentHash else {
            throw .content(url: url, "the step leads from \(file.step.from) with contentHash \(file.step.fromContentHash), this device holds \(base.manifest.version) with \(base.manifest.contentHash)")
        }
        let rebuilt: (bytes: [UInt8], manifest: Manifest)
        do { rebuilt = try patch.apply(to: base.manifest) } catch { throw .content(url: url, error.description) }
        try Self.check(rebuilt, against: entry, content: content, url: url)

        // Each file the base lacks: from another version on the device that holds it, else from the step's part, else
        // (no part, or a part refused) from its object, fetched after.
        let baseFiles = Dictionary(uniqueKeysWithValues: base.manifest.files.map { ($0.path, $0.sha256) })
        let held = HeldContents(bases: bases)
        let objectsOf = Dictionary(patch.set.map { ($0.file.sha256, $0.object) }) { first, _ in first }
        let partIndex = Dictionary(uniqueKeysWithValues: file.step.parts.enumerated().map { ($1.to, $0) })
        let application = FileDiffApplication(limits: limits)
        var taken = Tally(received: report.received, resumed: report.resumed)
        var sources: [String: DeltaAssembler.Source] = [:]
        var madeFiles: [String] = []
        defer { for path in madeFiles { unlink(path) } }
        var fallbacks: [String] = []
        var parts: [(FileRecord, DeltaAssembler.Source?)] = []
        for record in rebuilt.manifest.files where baseFiles[record.path] != record.sha256 {
            if let local = held[record.sha256] {
                parts.append((record, local.source))
                continue
            }
            parts.append((record, nil))
            let sha256 = record.sha256
            guard sources[sha256] == nil, !fallbacks.contains(sha256) else { continue }
            guard objectsOf[sha256] != nil else {
                throw .content(url: url, "the patch gives no object for \(record.path), which no version on the device holds")
            }
            switch try use(file, part: partIndex[sha256], for: record, held: held, object: objectsOf[sha256]!, url: url, application: application) {
            case .success(let made):
                sources[sha256] = made.source
                if let path = made.file { madeFiles.append(path) }
                if made.isDiff { taken.diffs += 1 } else { taken.wholeObjects += 1 }
            case .failure(let why):
                taken.refusals.append(why)
                fallbacks.append(sha256)
            }
        }
        // The objects of parts refused or missing: fetched as the objects way fetches them; one refused fails the step.
        if !fallbacks.isEmpty {
            var targets: [DownloadTarget] = []
            for sha256 in fallbacks {
                let object = objectsOf[sha256]!
                targets.append(DownloadTarget(url: try fetched.resolve(content.objects + object.path(forContent: sha256)), size: object.size, sha256: object.sha256))
            }
            let fetch = ContentFetch(download: download, folder: folder, concurrency: concurrency)
            let got = try await fetch.fetch(targets, spent: &spent, progress: progress)
            madeFiles += got.paths.values
            taken.received += got.received
            taken.resumed = taken.resumed || got.resumed
            taken.fetchedObjects = fallbacks.count
            taken.fetchedBytes = got.received
            for sha256 in fallbacks {
                let object = objectsOf[sha256]!
                guard let path = got.paths[object.sha256] else { throw .content(url: content.objects, "the object of \(sha256) was not fetched") }
                sources[sha256] = object.gzip ? .gzipFile(path) : .file(path)
            }
        }
        let files = parts.map { part in (part.0, part.1 ?? sources[part.0.sha256]!) }
        let install = try await assembleAndInstall(rebuilt, signature: patch.signature, base: base, files: files, entry: entry, url: url)
        return StepTaken(
            install: install, received: taken.received, resumed: taken.resumed, diffs: taken.diffs, wholeObjects: taken.wholeObjects,
            fetchedObjects: taken.fetchedObjects, fetchedBytes: taken.fetchedBytes, refusals: taken.refusals)
    }

    /// What the step way counts as it goes.
    private struct Tally {
        var received: Int64
        var resumed: Bool
        var diffs = 0
        var wholeObjects = 0
        var fetchedObjects = 0
        var fetchedBytes: Int64 = 0
        var refusals: [DiffRefusal] = []
    }

    /// What one part gives: where the assembled delta reads the file from, and a file written for it (a diff's result).
    private struct MadePart {
        var source: DeltaAssembler.Source
        var file: String?
        var isDiff: Bool
    }

    /// The part of `file` that makes `record`'s content, checked: a diff applied (within the device's limits, from a
    /// content the device holds, its result the manifest's size and SHA-256); an object taken in place when it is the
    /// object the patch names (its size and compression; its bytes are hashed as the store installs the version).
    private func use(
        _ file: StepFile, part index: Int?, for record: FileRecord, held: HeldContents, object: ContentObject, url: String,
        application: FileDiffApplication
    ) throws(UpdateError) -> Result<MadePart, DiffRefusal> {
        guard let index else { return .failure(.stepPart(url: url, content: record.sha256, "is missing")) }
        let part = file.step.parts[index]
        guard let from = part.from else {
            guard part.size == object.size, part.gzip == object.gzip else {
                return .failure(.stepPart(url: url, content: record.sha256, "is \(part.size) bytes (gzip \(part.gzip)), the patch's object \(object.size) (gzip \(object.gzip))"))
            }
            let range = file.range(ofPart: index)
            return .success(MadePart(source: .slice(file.path, offset: range.offset, size: range.size, gzip: part.gzip), file: nil, isDiff: false))
        }
        guard let source = held[from] else {
            return .failure(.stepPart(url: url, content: record.sha256, "is a diff from \(from), which this device does not hold"))
        }
        // Judged from sizes before the diff's bytes are read, as a downloaded diff is judged before it is fetched.
        guard FileDiffRoutes.fits(diffSize: part.size, sourceSize: source.size, targetSize: record.size, limits: limits) else {
            return .failure(.stepPart(url: url, content: record.sha256, "is a diff past this device's limits"))
        }
        let bytes: [UInt8]
        do { bytes = try file.bytes(ofPart: index) } catch { return .failure(.stepPart(url: url, content: record.sha256, "cannot be read: \(error)")) }
        switch try application.apply(bytes, makes: record.sha256, url: url, source: source, targetSize: record.size, output: folder + "/\(record.sha256).from-step") {
        case .success(let path): return .success(MadePart(source: .file(path), file: path, isDiff: true))
        case .failure(let why): return .failure(why)
        }
    }
}
