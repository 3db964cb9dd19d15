import Crypto
import Foundation
import SatchelArchive
import SatchelCore
import SatchelPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The steps of a release folder (docs/formats.md, "Steps"), written by `satchel catalog` after the objects and the
/// diffs, from files already on disk: for a version and one base (its predecessor, or a built-in), the manifest patch
/// from the base, then per content the base lacks the smallest published diff from one of the base's contents when it
/// is smaller than the object, else the object as published. What a device holding only the base would fetch on the
/// objects way, in one file.
struct ReleaseSteps {
    let folder: String
    let objects: [String: ContentObject]
    let objectsFolder: String
    let diffsFolder: String

    /// Where a written step is, for the catalog and the summary.
    struct Written {
        var path: String
        var size: Int64
        var sha256: String
    }

    /// Writes the step from `base` to `target` as `steps/<id>/<version>/from-<base>-<first 16 hex digits of its
    /// SHA-256>.step`: named by its bytes, since a later run may choose other diffs (a built-in added, diffs judged anew)
    /// and a CDN keeps a name for a year. `diffs` are the published diffs to `target` (its index's rows).
    func write(target: Manifest, signature: String?, base: Manifest, diffs: [FileDiffIndex.Diff]) throws(ReleaseContentError) -> Written {
        let location = "steps/\(target.id)/\(target.version)"
        let patch: ManifestPatch
        do { patch = try ManifestPatch.make(from: base, to: target, signature: signature, objects: objects) } catch {
            throw .write(path: location, reason: error.description)
        }
        let patchBytes = try Self.gzip(patch.canonicalBytes, what: location)
        let held = Set(base.files.map(\.sha256))
        var chosen: [String: FileDiffIndex.Diff] = [:]
        for diff in diffs where held.contains(diff.from) {
            guard let object = objects[diff.to], diff.size < object.size else { continue }
            if let best = chosen[diff.to], (best.size, best.from) <= (diff.size, diff.from) { continue }
            chosen[diff.to] = diff
        }
        var parts: [UpdateStep.Part] = []
        var sources: [String: String] = [:]
        for sha256 in Set(target.files.map(\.sha256)).subtracting(held).sorted() {
            if let diff = chosen[sha256] {
                parts.append(.diff(from: diff.from, to: sha256, size: diff.size))
                sources[sha256] = diffsFolder + "/" + diff.path
            } else if let object = objects[sha256] {
                parts.append(.object(sha256, size: object.size, gzip: object.gzip))
                sources[sha256] = objectsFolder + "/" + object.path(forContent: sha256)
            } else {
                throw .write(path: location, reason: "no object was published for content \(sha256)")
            }
        }
        let step = UpdateStep(
            id: target.id, version: target.version, from: base.version, fromContentHash: base.contentHash,
            patchSize: Int64(patchBytes.count), parts: parts)
        let header = try Self.gzip(step.canonicalBytes, what: location)
        guard header.count <= UpdateStep.maxCompressedHeaderBytes else {
            throw .write(path: location, reason: "the step's header is \(header.count) bytes compressed, past the readers' limit")
        }

        let outputFolder = folder + "/" + location
        do { try FileManager.default.createDirectory(atPath: outputFolder, withIntermediateDirectories: true) } catch {
            throw .write(path: outputFolder, reason: "cannot create the folder")
        }
        let temporary = outputFolder + "/.from-\(base.version).partial-\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .write(path: temporary, reason: String(cString: strerror(errno))) }
        var hasher = SHA256()
        var size: Int64 = 0
        // Untyped throws through withUnsafeBytes: a typed-throws closure there crashes Swift 6.3.1's IR generation.
        func emit(_ bytes: UnsafeRawBufferPointer) throws {
            hasher.update(bufferPointer: bytes)
            size += Int64(bytes.count)
            if let code = POSIXIO.writeAll(bytes, to: descriptor) { throw ReleaseContentError.write(path: temporary, reason: String(cString: strerror(code))) }
        }
        do {
            defer { close(descriptor) }
            for bytes in [UpdateStep.prefix(headerLength: header.count), header, patchBytes] {
                try bytes.withUnsafeBytes { try emit($0) }
            }
            // Each part is copied as published: a diff from diffs/, an object (its gzip, when compressed) from objects/.
            for part in step.parts {
                let path = sources[part.to]!
                guard let data = FileManager.default.contents(atPath: path), Int64(data.count) == part.size else {
                    throw ReleaseContentError.write(path: path, reason: "cannot read \(part.size) bytes for the step")
                }
                try data.withUnsafeBytes { try emit($0) }
            }
        } catch let error as ReleaseContentError {
            unlink(temporary)
            throw error
        } catch {
            unlink(temporary)
            throw .write(path: temporary, reason: "\(error)")
        }
        let sha256 = hasher.finalize().map { String(format: "%02x", $0) }.joined()
        let relative = location + "/from-\(base.version)-\(sha256.prefix(16)).\(UpdateStep.fileExtension)"
        guard rename(temporary, folder + "/" + relative) == 0 else {
            unlink(temporary)
            throw .write(path: relative, reason: String(cString: strerror(errno)))
        }
        return Written(path: relative, size: size, sha256: sha256)
    }

    static func gzip(_ bytes: [UInt8], what: String) throws(ReleaseContentError) -> [UInt8] {
        var compressed: [UInt8] = []
        do {
            let gzip = try GzipWriter(level: 9) { compressed.append(contentsOf: $0) }
            try bytes.withUnsafeBytes { try gzip.write($0) }
            try gzip.finish()
        } catch { throw .write(path: what, reason: "\(error)") }
        return compressed
    }

    /// The versions whose catalog entries name steps: per package the newest version that is not staged, and every
    /// staged one (a rollout's version: its devices update to it, the others to the newest released). Older entries
    /// name none: the catalog every device fetches grows by one field per package, not per version.
    static func targets(_ versions: [(id: PackageID, version: SemanticVersion)], staged: Set<String>) -> Set<String> {
        var newest: [PackageID: SemanticVersion] = [:]
        var targets = Set<String>()
        for (id, version) in versions {
            let key = "\(id) \(version)"
            if staged.contains(key) {
                targets.insert(key)
            } else if newest[id].map({ $0 < version }) ?? true {
                newest[id] = version
            }
        }
        for (id, version) in newest { targets.insert("\(id) \(version)") }
        return targets
    }

    /// The bases a target's steps lead from: its predecessor (the newest older version of its package in the folder)
    /// and each built-in older than it.
    static func bases(of target: Manifest, among versions: [Manifest], builtIns: Set<String>) -> [Manifest] {
        let older = versions.filter { $0.id == target.id && $0.version < target.version }.sorted { $0.version > $1.version }
        guard let predecessor = older.first else { return [] }
        return [predecessor] + older.dropFirst().filter { builtIns.contains("\($0.id)@\($0.version)") }
    }
}
