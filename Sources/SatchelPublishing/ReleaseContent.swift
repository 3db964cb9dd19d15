import Crypto
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

/// The content-addressed side of a release folder (docs/formats.md, "Objects and patches"), written by
/// `satchel catalog` while it verifies each bundle: every file content once, as `objects/<xx>/<sha256>` or, when its
/// gzip is smaller, `objects/<xx>/<sha256>.gz`; and manifest patches under `patches/<id>/<version>/`. Objects are
/// immutable and named by content, so publishing again (a new release into the same folder) writes only new contents;
/// an object already on disk is checked, not trusted.
public final class ReleaseContent {
    public let folder: String
    /// Every content seen so far, by its SHA-256.
    public private(set) var objects: [String: ContentObject] = [:]

    public init(folder: String) {
        self.folder = folder
    }

    public var objectsFolder: String { folder + "/objects" }

    /// A sink for ``BundleReader/readFiles(into:)`` that writes each file the folder does not hold yet as an object.
    public func sink() -> ObjectSink { ObjectSink(content: self) }

    /// Writes `patch` gzip-compressed as `patches/<id>/<version>/<from-<base> or full>.json.gz`; returns the path
    /// relative to the folder, with the file's size and SHA-256.
    public func write(_ patch: ManifestPatch, id: PackageID, version: SemanticVersion) throws(ReleaseContentError) -> (path: String, size: Int64, sha256: String) {
        let relative = "patches/\(id)/\(version)/" + (patch.from.map { "from-\($0.version)" } ?? "full") + ".json.gz"
        var compressed: [UInt8] = []
        do {
            let gzip = try GzipWriter(level: 9) { compressed.append(contentsOf: $0) }
            try patch.canonicalBytes.withUnsafeBytes { try gzip.write($0) }
            try gzip.finish()
        } catch { throw .write(path: relative, reason: "\(error)") }
        try Self.writeAtomically(compressed, to: folder + "/" + relative)
        return (relative, Int64(compressed.count), Digests.sha256Hex(compressed))
    }

    // MARK: Objects

    /// Records the object of `sha256` if one is already on disk (and whole).
    fileprivate func existingObject(_ sha256: String) -> ContentObject? {
        if let known = objects[sha256] { return known }
        let base = objectsFolder + "/" + sha256.prefix(2) + "/" + sha256
        if let digest = Self.gzipDigests(base + ".gz"), digest.content == sha256 {
            let object = ContentObject(size: digest.size, sha256: digest.sha256, gzip: true)
            objects[sha256] = object
            return object
        }
        if let digest = try? FileDigest.sha256(ofFile: base), digest.sha256 == sha256 {
            let object = ContentObject(size: digest.size, sha256: digest.sha256, gzip: false)
            objects[sha256] = object
            return object
        }
        return nil
    }

    fileprivate func record(_ sha256: String, _ object: ContentObject) { objects[sha256] = object }

    /// A gzip file's size and SHA-256, and the SHA-256 of what it decompresses to, in one streamed read; nil when it
    /// cannot be read or is not one whole gzip member.
    static func gzipDigests(_ path: String) -> (size: Int64, sha256: String, content: String)? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        var compressed = SHA256()
        var content = SHA256()
        var size: Int64 = 0
        do {
            let reader = try GunzipReader { content.update(bufferPointer: $0) }
            while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
                size += Int64(chunk.count)
                compressed.update(data: chunk)
                try chunk.withUnsafeBytes { try reader.write($0) }
            }
            try reader.finish()
        } catch {
            return nil
        }
        let hex = { (digest: SHA256.Digest) in digest.map { String(format: "%02x", $0) }.joined() }
        return (size, hex(compressed.finalize()), hex(content.finalize()))
    }

    static func writeAtomically(_ bytes: [UInt8], to path: String) throws(ReleaseContentError) {
        let folder = (path as NSString).deletingLastPathComponent
        do { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) } catch {
            throw .write(path: folder, reason: "cannot create the folder")
        }
        let temporary = path + ".partial-\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .write(path: temporary, reason: String(cString: strerror(errno))) }
        let code = POSIXIO.writeAll(bytes, to: descriptor)
        close(descriptor)
        guard code == nil, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw .write(path: path, reason: String(cString: strerror(code ?? errno)))
        }
    }
}

/// Writes each new file content of a bundle as it is read: the raw bytes and their gzip side by side, keeping the
/// smaller. A content already written (in this run or an earlier one) is skipped.
public struct ObjectSink: BundleFileSink {
    let content: ReleaseContent
    private var current: Writing?

    private final class Writing {
        let sha256: String
        let raw: String
        let compressed: String
        let rawDescriptor: Int32
        let gzipDescriptor: Int32
        var gzip: GzipWriter?
        var gzipSize: Int64 = 0
        var gzipHasher = SHA256()
        var failure: Int32?

        init(sha256: String, folder: String) throws(ReleaseContentError) {
            self.sha256 = sha256
            let stem = folder + "/.\(sha256).partial-\(getpid())"
            raw = stem
            compressed = stem + ".gz"
            rawDescriptor = open(raw, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            gzipDescriptor = open(compressed, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard rawDescriptor >= 0, gzipDescriptor >= 0 else { throw .write(path: stem, reason: String(cString: strerror(errno))) }
            let descriptor = gzipDescriptor
            do {
                gzip = try GzipWriter(level: 6) { [unowned self] chunk in
                    gzipSize += Int64(chunk.count)
                    gzipHasher.update(bufferPointer: chunk)
                    if let code = POSIXIO.writeAll(chunk, to: descriptor) { failure = code }
                }
            } catch { throw .write(path: compressed, reason: "\(error)") }
        }

        func closeFiles() {
            _ = close(rawDescriptor)
            _ = close(gzipDescriptor)
        }
    }

    init(content: ReleaseContent) { self.content = content }

    public mutating func begin(_ file: FileRecord) throws {
        current = nil
        guard content.existingObject(file.sha256) == nil else { return }
        let folder = content.objectsFolder + "/" + file.sha256.prefix(2)
        do { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) } catch {
            throw ReleaseContentError.write(path: folder, reason: "cannot create the folder")
        }
        current = try Writing(sha256: file.sha256, folder: folder)
    }

    public mutating func write(_ chunk: UnsafeRawBufferPointer) throws {
        guard let current else { return }
        if let code = POSIXIO.writeAll(chunk, to: current.rawDescriptor) { current.failure = code }
        try current.gzip?.write(chunk)
    }

    public mutating func end(_ file: FileRecord) throws {
        guard let current else { return }
        self.current = nil
        defer {
            current.closeFiles()
            unlink(current.raw)
            unlink(current.compressed)
        }
        try current.gzip?.finish()
        current.gzip = nil
        if let code = current.failure { throw ReleaseContentError.write(path: current.raw, reason: String(cString: strerror(code))) }
        let folder = content.objectsFolder + "/" + file.sha256.prefix(2)
        // The smaller of the two is the object; a tie keeps the raw bytes (nothing to undo on the device).
        let object: ContentObject
        if current.gzipSize < file.size {
            object = ContentObject(size: current.gzipSize, sha256: current.gzipHasher.finalize().map { String(format: "%02x", $0) }.joined(), gzip: true)
            guard rename(current.compressed, folder + "/" + file.sha256 + ".gz") == 0 else {
                throw ReleaseContentError.write(path: folder, reason: String(cString: strerror(errno)))
            }
        } else {
            object = ContentObject(size: file.size, sha256: file.sha256, gzip: false)
            guard rename(current.raw, folder + "/" + file.sha256) == 0 else {
                throw ReleaseContentError.write(path: folder, reason: String(cString: strerror(errno)))
            }
        }
        content.record(file.sha256, object)
    }
}

public enum ReleaseContentError: Error, Equatable, Sendable, CustomStringConvertible {
    case write(path: String, reason: String)

    public var description: String {
        switch self {
        case .write(let path, let reason): "cannot write \(path): \(reason)"
        }
    }
}
