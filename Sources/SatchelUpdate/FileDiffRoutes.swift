import Foundation
import SatchelArchive
import SatchelBundle
import SatchelCore
import SatchelDiff
import SatchelPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A content the objects path needs (no version on the device holds it): its object's size, what it costs as an
/// object, and its own size, what a diff must make.
struct NeededContent: Sendable, Equatable {
    var objectSize: Int64
    var size: Int64
}

/// Which needed contents go as per-file diffs (docs/formats.md, "Diffs"): whether the version's diff index is worth
/// a request, the index itself, and per content the smallest diff the device can apply. Pure but for ``index``.
struct FileDiffRoutes {
    let download: ResumableDownload
    /// Where the index is downloaded to (the objects' folder: its partial resumes as theirs do).
    let folder: String
    let limits: FileDiffLimits

    /// Whether fetching an index of `indexSize` bytes can pay: what diffs could save at most (each is at least a byte,
    /// so every needed object's bytes but one each) must exceed the index and its request, and the objects way at its
    /// very best with the index (the patch, the index, a byte per content) must still weigh less than the delta or
    /// the bundle. Otherwise the index is not asked for at all: the objects way weighs what it did before diffs.
    static func indexCanPay(
        indexSize: Int64, patchSize: Int64, needed all: [NeededContent], delta: UpdatePlan.Cost?, full: UpdatePlan.Cost,
        limits: FileDiffLimits = .device
    ) -> Bool {
        // Only what a diff could make counts: a target past the limits always comes as its object.
        let needed = all.filter { $0.size <= Int64(limits.maxTarget) }
        guard !needed.isEmpty else { return false }
        let objects = needed.reduce(Int64(0)) { $0 + $1.objectSize }
        guard objects - Int64(needed.count) > indexSize + UpdatePlan.bytesPerRequest else { return false }
        let best = UpdatePlan.Cost(bytes: patchSize + indexSize + Int64(needed.count), requests: 2 + needed.count)
        return UpdatePlan.cheapest(objects: best, delta: delta, full: full) == .objects
    }

    /// Whether the index is fetched beside the patch, before the patch says what is needed: when the objects way at its
    /// very best with the index (the patch, the index and one byte of one needed content, in three requests) still
    /// weighs less than the delta and the bundle. Its bytes are then spent even when the patch shows it cannot pay
    /// (``indexCanPay``): the price of a round trip saved whenever it can.
    static func fetchesIndexWithPatch(indexSize: Int64, patchSize: Int64, delta: UpdatePlan.Cost?, full: UpdatePlan.Cost) -> Bool {
        UpdatePlan.cheapest(objects: UpdatePlan.Cost(bytes: patchSize + indexSize + 1, requests: 3), delta: delta, full: full) == .objects
    }

    /// The contents some diff in `index` leads to a needed content from, that `held` lacks: where another package's
    /// versions may help. Empty when the package's own versions hold every source, so nothing else is read.
    static func sourcesNotHeld(
        in index: FileDiffIndex, needed: [String: NeededContent], held: HeldContents, limits: FileDiffLimits = .device
    ) -> Set<String> {
        // A content this package's versions already route needs no other source: only the others' are looked for.
        let routed = routes(in: index, needed: needed, held: held, limits: limits)
        return Set(index.diffs.lazy.filter { needed[$0.to] != nil && routed[$0.to] == nil && held[$0.from] == nil }.map(\.from))
    }

    /// Per needed content, the diff to fetch instead of its object: ``FileDiffIndex/routes(for:from:)`` (the smallest
    /// diff from a held content, smaller than the object: one request either way) among the diffs this device can
    /// apply within `limits`, judged from sizes it knows before downloading (the file's size from the manifest, the
    /// source's from the version holding it), so that no byte is spent on a diff the header check would refuse.
    static func routes(
        in index: FileDiffIndex, needed: [String: NeededContent], held: HeldContents, limits: FileDiffLimits
    ) -> [String: FileDiffIndex.Diff] {
        let applicable = index.diffs.filter { diff in
            guard let target = needed[diff.to], let source = held[diff.from] else { return false }
            return fits(diffSize: diff.size, sourceSize: source.size, targetSize: target.size, limits: limits)
        }
        let usable = FileDiffIndex(id: index.id, version: index.version, diffs: applicable)
        return usable.routes(for: needed.mapValues(\.objectSize)) { held[$0] != nil }
    }

    /// Whether a diff of these sizes can be applied within `limits`: the target at most `maxTarget`, the source within
    /// the window for that target, source and target together within the memory bound (the decoded streams come on
    /// top, and only the header says how much: that is checked after the download), and the diff itself no larger than
    /// the largest target (it is held in memory while it applies, and an honest diff is smaller than its object).
    static func fits(diffSize: Int64, sourceSize: Int64, targetSize: Int64, limits: FileDiffLimits) -> Bool {
        guard targetSize <= Int64(limits.maxTarget), diffSize <= Int64(limits.maxTarget) else { return false }
        guard sourceSize <= Int64(limits.window(forTarget: Int(targetSize))) else { return false }
        return sourceSize + targetSize <= Int64(limits.maxTotal)
    }

    /// The index `diffs` names, downloaded like a patch (resumable, checked against its size and SHA-256), inflated
    /// (at most ``FileDiffIndex/maxBytes``), read in canonical form and checked to be `entry`'s. A refusal is returned:
    /// the update goes on with objects only. Thrown: what would stop the objects too (cancelled, a full disk).
    func index(
        _ diffs: CatalogDiffs, for entry: CatalogEntry, from fetched: FetchedCatalog, spent: inout Int64,
        progress: @Sendable (Int64, Int64) -> Void
    ) async throws(UpdateError) -> Result<FileDiffIndex, DiffRefusal> {
        let url: String
        do { url = try fetched.resolve(diffs.url) } catch { return .failure(.indexDownload(error)) }
        // The compressed index is read whole: it may not be larger than the index it inflates to may be (gzip of
        // incompressible bytes adds a few bytes per 16 KiB block), whatever the catalog says.
        guard diffs.size <= Int64(FileDiffIndex.maxBytes + FileDiffIndex.maxBytes / 1024 + 64) else {
            return .failure(.indexUnreadable(url: url, "is \(diffs.size) bytes, more than an index of at most \(FileDiffIndex.maxBytes) bytes compresses to"))
        }
        let file: DownloadReport
        do {
            file = try await download.download(
                DownloadTarget(url: url, size: diffs.size, sha256: diffs.sha256), into: folder, counting: &spent, progress: progress)
        } catch {
            if !ContentFetch.isTolerable(error) { throw error }
            return .failure(.indexDownload(error))
        }
        defer { unlink(file.path) }
        var bytes: [UInt8] = []
        do {
            let compressed = try FileBytes.read(file.path, size: diffs.size)
            // A gzip bomb stops at the bound, not at the end of memory (the index is signed through the catalog, but
            // what a device holds at once should not rest on the publisher's care).
            let reader = try GunzipReader { chunk in
                guard bytes.count + chunk.count <= FileDiffIndex.maxBytes else {
                    throw DiffRefusal.indexUnreadable(url: url, "inflates past \(FileDiffIndex.maxBytes) bytes")
                }
                bytes.append(contentsOf: chunk)
            }
            try compressed.withUnsafeBytes { try reader.write($0) }
            try reader.finish()
        } catch let error as DiffRefusal {
            return .failure(error)
        } catch let error as UpdateError {
            // A file that cannot be read here is an index not used, not the objects' failure; a cancellation or a full
            // disk stops everything.
            if !ContentFetch.isTolerable(error) { throw error }
            return .failure(.indexUnreadable(url: url, "\(error)"))
        } catch {
            return .failure(.indexUnreadable(url: url, "not gzip: \(error)"))
        }
        let index: FileDiffIndex
        do { index = try FileDiffIndex.decode(bytes) } catch { return .failure(.indexMalformed(url: url, error)) }
        guard index.id == entry.id, index.version == entry.version else {
            return .failure(.indexMismatch(url: url, catalog: "\(entry.id) \(entry.version)", index: "\(index.id) \(index.version)"))
        }
        return .success(index)
    }
}

/// Applies one downloaded diff to the content the device holds and writes the result beside it, checked before use
/// (docs/formats.md, "Diffs"). One at a time: what it holds at once is the diff, the source and the target, which the
/// codec bounds (``FileDiffLimits``: 64 MiB on a device) and ``FileDiffRoutes/fits`` checked before the download.
struct FileDiffApplication {
    let limits: FileDiffLimits

    /// Applies the diff in `diffFile` (fetched from `url`) to `source`; the result must be `targetSize` bytes hashing
    /// to `diff.to`. Returns the path of the result (`output`), or why the diff was refused. Thrown: what no object
    /// would get past either (a full disk).
    func apply(
        _ diff: FileDiffIndex.Diff, file diffFile: String, url: String, source: HeldContent, targetSize: Int64, output: String
    ) throws(UpdateError) -> Result<String, DiffRefusal> {
        let bytes: [UInt8]
        do { bytes = try FileBytes.read(diffFile, size: diff.size) } catch { return .failure(.download(error)) }
        return try apply(bytes, makes: diff.to, url: url, source: source, targetSize: targetSize, output: output)
    }

    /// Applies the diff `bytes` (a downloaded diff, or a step's part) to `source`; the result must be `targetSize` bytes
    /// hashing to `content`, and is written to `output`.
    func apply(
        _ bytes: [UInt8], makes content: String, url: String, source: HeldContent, targetSize: Int64, output: String
    ) throws(UpdateError) -> Result<String, DiffRefusal> {
        // The header first: its sizes are checked against the limits and the files before a byte of the source is read.
        let header: FileDiffHeader
        do {
            header = try FileDiff.header(of: bytes)
            try limits.check(header)
        } catch {
            return .failure(.format(url: url, error))
        }
        guard Int64(header.sourceSize) == source.size else { return .failure(.sourceSize(url: url, declared: header.sourceSize, held: source.size)) }
        guard Int64(header.targetSize) == targetSize else { return .failure(.targetSize(url: url, declared: header.targetSize, manifest: targetSize)) }
        let sourceBytes: [UInt8]
        do { sourceBytes = try Self.read(source, for: url) } catch { return .failure(error) }
        let result: [UInt8]
        do { result = try FileDiff.apply(bytes, to: sourceBytes, limits: limits) } catch { return .failure(.format(url: url, error)) }
        let digest = Digests.sha256Hex(result)
        guard Int64(result.count) == targetSize, digest == content else {
            return .failure(.result(url: url, expected: content, actual: digest))
        }
        try FileBytes.write(result, to: output)
        return .success(output)
    }

    /// The bytes of a held content, exactly its size (a file cut short or grown since it was installed is refused here,
    /// before the diff reads it; its hash is not checked: the result's is).
    static func read(_ content: HeldContent, for url: String) throws(DiffRefusal) -> [UInt8] {
        switch content.source {
        case .file(let path):
            do { return try FileBytes.read(path, size: content.size) } catch { throw .source(url: url, "\(error)") }
        case .bundle(let bundle, let record):
            do throws(BundleError) {
                return try readAll(try bundle.reader(for: record), size: content.size)
            } catch {
                throw .source(url: url, "\(error)")
            }
        case .gzipFile(let path), .slice(let path, _, _, _):
            // Held contents are installed files and built-in entries, never a downloaded object or a step's part.
            throw .source(url: url, "\(path) is a downloaded object, not a content the device holds")
        }
    }

    /// Reads a built-in's entry whole, its end and CRC-32 checked.
    private static func readAll(_ reader: ZipEntryReader, size: Int64) throws(BundleError) -> [UInt8] {
        do {
            let bytes = try reader.read(upTo: Int(size))
            _ = try reader.read(upTo: 1)   // at the end: checks the entry's CRC-32
            return bytes
        } catch {
            throw .archive(error)
        }
    }
}

/// Whole small files in and out, for the diffs (each bounded by the caller: an index, a diff, a source, a result).
enum FileBytes {
    /// The file at `path`, which must be exactly `size` bytes.
    static func read(_ path: String, size: Int64) throws(UpdateError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .system("open", path) }
        defer { POSIXIO.close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw .system("stat", path) }
        guard Int64(info.st_size) == size else { throw .sizeMismatch(url: path, expected: size, actual: Int64(info.st_size)) }
        var bytes = [UInt8](repeating: 0, count: Int(size))
        let result = bytes.withUnsafeMutableBytes { POSIXIO.readFully(descriptor, into: $0, at: 0) }
        switch result {
        case .failure(let code): throw .system("read", path, code.rawValue)
        case .success(let count):
            guard Int64(count) == size else { throw .sizeMismatch(url: path, expected: size, actual: Int64(count)) }
        }
        return bytes
    }

    /// Writes `bytes` to a new file at `path` (replacing one left by an earlier run).
    static func write(_ bytes: [UInt8], to path: String) throws(UpdateError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .system("open", path) }
        defer { POSIXIO.close(descriptor) }
        if let code = POSIXIO.writeAll(bytes, to: descriptor) {
            unlink(path)
            throw .system("write", path, code)
        }
    }
}
