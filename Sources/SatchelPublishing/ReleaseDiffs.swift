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

/// The per-file diffs of a release folder (docs/formats.md, "Diffs"), written by `satchel catalog` after the objects:
/// for each version, each content no base holds gets a diff from its predecessor (``ContentPairing``'s name rules, then
/// the base file it most resembles, ``ContentSketch``) in each of the
/// ``ReleaseFolder/patchBases`` newest older versions of its package and in each built-in version older than it.
/// Diffs are named by the two contents, so one serves every pair of versions that needs it, and a second run keeps
/// the diffs it finds (after checking each still makes its target) and encodes only new pairs.
struct ReleaseDiffs: Sendable {
    /// A diff is published only when it is at most this share of the object it stands in for: below that, the space
    /// on the CDN and the index's line buy a download at least a quarter smaller.
    static let worthShare = 0.75
    /// Beside where a diff would be, an empty file saying the pair was encoded and found not worth publishing.
    static let notWorthSuffix = ".none"

    let folder: String
    /// The folder's objects (every content of every full bundle), read concurrently.
    let objects: [String: ContentObject]
    let objectsFolder: String

    init(folder: String, content: ReleaseContent) {
        self.folder = folder
        objects = content.objects
        objectsFolder = content.objectsFolder
    }

    var diffsFolder: String { folder + "/diffs" }

    /// What one run wrote: for each version (`"<id> <version>"`), its index's rows; and the counts.
    struct Written {
        var indexes: [String: [FileDiffIndex.Diff]] = [:]
        var encoded = 0
        var kept = 0
        var bytes: Int64 = 0
        /// Pairs encoded in this run and found not worth a diff (each leaves its `.none` verdict).
        var judgedNotWorth = 0
    }

    /// Every diff the versions need, written or found on disk; versions are all the full bundles of the folder.
    func write(versions: [Manifest], builtIns: Set<String>) throws(ReleaseContentError) -> Written {
        // Which pairs each version wants, from which bases.
        var wanted: [String: [(from: String, to: String)]] = [:]
        var pairs = Set<[String]>()
        var sketches: [String: ContentSketch] = [:]
        for target in versions {
            let older = versions.filter { $0.id == target.id && $0.version < target.version }.sorted { $0.version > $1.version }
            var bases = Array(older.prefix(ReleaseFolder.patchBases))
            for base in older.dropFirst(ReleaseFolder.patchBases) where builtIns.contains("\(base.id)@\(base.version)") { bases.append(base) }
            var rows: [(String, String)] = []
            var seen = Set<[String]>()
            for base in bases {
                var found = ContentPairing.predecessors(of: target.files, in: base.files).filter { Self.fits($0.base, $0.target) }
                    .map { ($0.base.sha256, $0.target.sha256) }
                found += try similarPredecessors(of: target.files, in: base.files, paired: Set(found.map(\.1)), sketches: &sketches)
                for (from, to) in found where seen.insert([from, to]).inserted {
                    rows.append((from, to))
                    pairs.insert([from, to])
                }
            }
            wanted["\(target.id) \(target.version)"] = rows
        }
        // Each distinct pair once, on every core (at most 8): encoding is CPU-bound.
        let ordered = pairs.sorted { $0.lexicographicallyPrecedes($1) }
        let results = Locked<[[String]: Outcome]>([:])
        let failure = Locked<ReleaseContentError?>(nil)
        let next = Locked(0)
        let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8))
        DispatchQueue.concurrentPerform(iterations: workers) { _ in
            while true {
                let index = next.withLock { value -> Int in
                    defer { value += 1 }
                    return value
                }
                guard index < ordered.count, failure.withLock({ $0 == nil }) else { return }
                let pair = ordered[index]
                do {
                    let outcome = try diff(from: pair[0], to: pair[1])
                    results.withLock { $0[pair] = outcome }
                } catch let error as ReleaseContentError {
                    failure.withLock { $0 = $0 ?? error }
                } catch {
                    failure.withLock { $0 = $0 ?? .write(path: diffsFolder, reason: "\(error)") }
                }
            }
        }
        if let error = failure.withLock({ $0 }) { throw error }
        let outcomes = results.withLock { $0 }
        var written = Written()
        for outcome in outcomes.values {
            switch outcome {
            case .encoded(let diff): written.encoded += 1; written.bytes += diff.size
            case .kept(let diff): written.kept += 1; written.bytes += diff.size
            case .notWorth(let judgedNow): if judgedNow { written.judgedNotWorth += 1 }
            }
        }
        let maxRows = FileDiffIndex.maxBytes / FileDiffIndex.maxBytesPerDiff
        for (key, rows) in wanted {
            let diffs = rows.compactMap { row -> FileDiffIndex.Diff? in
                switch outcomes[[row.from, row.to]] {
                case .encoded(let diff)?, .kept(let diff)?: diff
                default: nil
                }
            }
            // Rows come newest base first: past the index's bound, the oldest bases' diffs are left out.
            written.indexes[key] = Array(diffs.prefix(maxRows))
        }
        return written
    }

    /// Whether a device could apply a diff between these two files (``FileDiffLimits/device``), judged from their sizes
    /// before a byte of either is read: a pair past the limits is never read, sketched or encoded.
    static func fits(_ source: FileRecord, _ target: FileRecord) -> Bool {
        let limits = FileDiffLimits.device
        guard target.size <= Int64(limits.maxTarget), source.size <= Int64(limits.window(forTarget: Int(target.size))) else { return false }
        return source.size + target.size <= Int64(limits.maxTotal)
    }

    /// A sketch of two contents must share at least this share of marks for them to be paired by content: below it,
    /// a diff rarely comes to 3/4 of the object, and encoding it would be time spent for nothing.
    static let minimumSimilarity = 0.25

    /// Pairs by content what the name rules left (``ContentPairing``): each file of `target` whose content `base`
    /// lacks and that no rule paired, with the base file of the same extension, between half and twice its size,
    /// whose content it most resembles (``ContentSketch``), when that is at least ``minimumSimilarity``. Each content
    /// is sketched once per run (`sketches`).
    private func similarPredecessors(
        of target: [FileRecord], in base: [FileRecord], paired: Set<String>, sketches: inout [String: ContentSketch]
    ) throws(ReleaseContentError) -> [(String, String)] {
        let held = Set(base.map(\.sha256))
        // The extension: the text after the last `.` of the name; none for a name without one.
        func kind(_ file: FileRecord) -> Substring {
            let name = file.path.value.split(separator: "/").last ?? ""
            guard let dot = name.lastIndex(of: ".") else { return "" }
            return name[name.index(after: dot)...]
        }
        func sketch(_ sha256: String) throws(ReleaseContentError) -> ContentSketch? {
            if let known = sketches[sha256] { return known }
            guard let bytes = try contentBytes(sha256) else { return nil }
            let made = ContentSketch(bytes)
            sketches[sha256] = made
            return made
        }
        var found: [(String, String)] = []
        for file in target where file.size > 0 && !held.contains(file.sha256) && !paired.contains(file.sha256) {
            let candidates = base.filter {
                $0.size > 0 && kind($0) == kind(file) && $0.size * 2 >= file.size && $0.size <= file.size * 2 && Self.fits($0, file)
            }
            guard !candidates.isEmpty, let mine = try sketch(file.sha256) else { continue }
            var best: (sha256: String, score: Double)?
            for candidate in candidates {
                guard let theirs = try sketch(candidate.sha256) else { continue }
                let score = mine.similarity(to: theirs)
                if score >= Self.minimumSimilarity, score > best?.score ?? 0 { best = (candidate.sha256, score) }
            }
            if let best { found.append((best.sha256, file.sha256)) }
        }
        return found
    }

    enum Outcome {
        case encoded(FileDiffIndex.Diff)
        case kept(FileDiffIndex.Diff)
        /// `judgedNow`: encoded in this run, rather than known from an earlier run's verdict or the limits.
        case notWorth(judgedNow: Bool)
    }

    /// The diff from one content to another: the one on disk when it still makes its target, else a new one, written
    /// when it is worth publishing.
    private func diff(from: String, to: String) throws(ReleaseContentError) -> Outcome {
        guard let object = objects[to], let source = try contentBytes(from), let target = try contentBytes(to) else {
            return .notWorth(judgedNow: false)
        }
        let path = diffsFolder + "/" + FileDiffIndex.path(from: from, to: to)
        // A pair found not worth a diff in an earlier run is not encoded again (delete diffs/ to judge every pair anew).
        let verdict = path + Self.notWorthSuffix
        if FileManager.default.fileExists(atPath: verdict) { return .notWorth(judgedNow: false) }
        if let existing = FileManager.default.contents(atPath: path).map(Array.init),
            let made = try? FileDiff.apply(existing, to: source), Digests.sha256Hex(made) == to
        {
            return .kept(FileDiffIndex.Diff(from: from, to: to, size: Int64(existing.count), sha256: Digests.sha256Hex(existing)))
        }
        guard let encoded = FileDiffEncoder.encode(source: source, target: target),
            Double(encoded.count) <= Double(object.size) * Self.worthShare
        else {
            try ReleaseContent.writeAtomically([], to: verdict)
            return .notWorth(judgedNow: true)
        }
        try ReleaseContent.writeAtomically(encoded, to: path)
        return .encoded(FileDiffIndex.Diff(from: from, to: to, size: Int64(encoded.count), sha256: Digests.sha256Hex(encoded)))
    }

    /// A content's bytes, from its object (decompressed); nil when no object holds it.
    private func contentBytes(_ sha256: String) throws(ReleaseContentError) -> [UInt8]? {
        guard let object = objects[sha256] else { return nil }
        let path = objectsFolder + "/" + object.path(forContent: sha256)
        guard let data = FileManager.default.contents(atPath: path) else { throw .write(path: path, reason: "cannot read the object") }
        guard object.gzip else { return Array(data) }
        do { return try GunzipReader.decompress(Array(data)) } catch { throw .write(path: path, reason: "the object is not gzip: \(error)") }
    }

    /// Writes a version's index gzip-compressed as `patches/<id>/<version>/diffs-<first 16 hex digits of its
    /// SHA-256>.json.gz`: named by its bytes, because a later run can list other diffs for the same version (a built-in
    /// added, an older version published or pruned), and a CDN may keep a file by one name for a day. Returns its path
    /// relative to the folder, size and SHA-256.
    func writeIndex(_ index: FileDiffIndex) throws(ReleaseContentError) -> (path: String, size: Int64, sha256: String) {
        var compressed: [UInt8] = []
        do {
            let gzip = try GzipWriter(level: 9) { compressed.append(contentsOf: $0) }
            try index.canonicalBytes.withUnsafeBytes { try gzip.write($0) }
            try gzip.finish()
        } catch { throw .write(path: "patches/\(index.id)/\(index.version)/", reason: "\(error)") }
        let sha256 = Digests.sha256Hex(compressed)
        let relative = "patches/\(index.id)/\(index.version)/diffs-\(sha256.prefix(16)).json.gz"
        try ReleaseContent.writeAtomically(compressed, to: folder + "/" + relative)
        return (relative, Int64(compressed.count), sha256)
    }
}
