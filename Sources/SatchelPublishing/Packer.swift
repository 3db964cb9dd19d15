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

/// Everything a pack needs besides the source folder. Values are already checked model types, so a
/// `PackOptions` cannot hold an invalid id, version or host.
public struct PackOptions: Sendable {
    public var id: PackageID
    public var version: SemanticVersion
    public var scope: Scope
    public var entry: SafePath
    public var spaFallback: Bool
    public var offlinePage: SafePath?
    public var routes: [Route]
    /// The HTTP cache policies of URL prefixes; when any is given, `minRuntime` is at least
    /// ``SatchelRuntime/cachePolicies`` (set to it when nil), so older runtimes are never offered the bundle.
    public var cachePolicies: [CacheRoute]
    public var minRuntime: SemanticVersion?
    public var excludes: ExcludeRules
    public var format: ArchiveFormat
    public var signingKey: SigningKey?
    /// `SOURCE_DATE_EPOCH`; when nil, createdAt is the newest modification time among the files.
    public var sourceDateEpoch: Int64?
    /// Deflate level for compressible files. The default, 6, gives bundles within 0.5 % of `zip -9` in less time
    /// (docs/performance.md, "Pack"); 9 squeezes out the last few bytes.
    public var compressionLevel: Int

    public init(
        id: PackageID, version: SemanticVersion, scope: Scope, entry: SafePath = try! SafePath(validating: "index.html"),
        spaFallback: Bool = false, offlinePage: SafePath? = nil, routes: [Route] = [], cachePolicies: [CacheRoute] = [],
        minRuntime: SemanticVersion? = nil, excludes: ExcludeRules = ExcludeRules(), format: ArchiveFormat = .zip, signingKey: SigningKey? = nil,
        sourceDateEpoch: Int64? = nil, compressionLevel: Int = Packer.defaultCompressionLevel
    ) {
        self.id = id
        self.version = version
        self.scope = scope
        self.entry = entry
        self.spaFallback = spaFallback
        self.offlinePage = offlinePage
        self.routes = routes
        self.cachePolicies = cachePolicies
        self.minRuntime = minRuntime ?? (cachePolicies.isEmpty ? nil : SatchelRuntime.cachePolicies)
        self.excludes = excludes
        self.format = format
        self.signingKey = signingKey
        self.sourceDateEpoch = sourceDateEpoch
        self.compressionLevel = compressionLevel
    }

    /// Reads `SOURCE_DATE_EPOCH` from the environment (https://reproducible-builds.org/specs/source-date-epoch/).
    public static func sourceDateEpochFromEnvironment() throws(PackError) -> Int64? {
        guard let text = ProcessInfo.processInfo.environment["SOURCE_DATE_EPOCH"], !text.isEmpty else { return nil }
        guard let seconds = Int64(text), seconds >= 0 else { throw .invalidSourceDateEpoch(text) }
        return seconds
    }
}

/// What a pack produced; `satchel pack --json` prints it.
public struct PackResult: Sendable, Equatable, Codable {
    public var bundle: String
    public var id: String
    public var version: String
    public var size: Int64
    public var sha256: String
    public var fileCount: Int
    public var contentHash: String
    public var signed: Bool
}

/// Where a pack is, for progress displays.
public enum PackProgress: Sendable, Equatable {
    case scanned(files: Int, bytes: Int64)
    case hashed(bytes: Int64, of: Int64)
    case written(bytes: Int64, of: Int64)
    case finished(PackResult)
}

/// Turns a folder of web assets into a bundle (docs/formats.md, "Bundle").
///
/// The steps: list the folder (``SourceTree``), hash every file on all cores, build and sign the manifest,
/// then stream `satchel.json`, `satchel.sig` and the files into a temporary archive beside the output,
/// re-hashing each file as it is written so that a file edited mid-pack is caught, and finally rename the
/// archive into place. A failure at any step removes the temporary file: no partial bundle is ever left.
public enum Packer {
    public static let defaultCompressionLevel = 6

    /// The file name of a bundle: `<id>-<version>.<zip|tar.gz>`.
    public static func bundleName(id: PackageID, version: SemanticVersion, format: ArchiveFormat) -> String {
        "\(id)-\(version).\(format.fileExtension)"
    }

    public static func pack(
        source: String, options: PackOptions, outputFolder: String,
        progress: (PackProgress) -> Void = { _ in }
    ) throws(PackError) -> PackResult {
        let files = try SourceTree.scan(root: source, excludes: options.excludes)
        // Before a file is hashed: what readers would refuse is not made (the manifest's own size is checked once built).
        do { try BundleLimits.check(files.lazy.map { (path: $0.path.value, size: $0.size) }) } catch { throw .limit(error) }
        let totalBytes = files.reduce(Int64(0)) { $0 + $1.size }
        progress(.scanned(files: files.count, bytes: totalBytes))
        let paths = Set(files.map(\.path))
        guard paths.contains(options.entry) else { throw .entryMissing(options.entry.value) }
        if let page = options.offlinePage, !paths.contains(page) { throw .offlinePageMissing(page.value) }

        let digests = try hashAll(files, totalBytes: totalBytes, progress: progress)
        let newest = files.map(\.modificationTime).max() ?? 0
        let createdAt = Timestamp(secondsSinceEpoch: options.sourceDateEpoch ?? newest)
        let manifest: Manifest
        do {
            manifest = try Manifest(
                id: options.id, version: options.version, createdAt: createdAt, scope: options.scope,
                entry: options.entry, spaFallback: options.spaFallback, offlinePage: options.offlinePage,
                routes: options.routes, cachePolicies: options.cachePolicies, minRuntime: options.minRuntime,
                files: zip(files, digests).map { file, digest in
                    FileRecord(path: file.path, size: file.size, sha256: digest, mime: MIMETable.entry(for: file.path).type)
                })
        } catch { throw .manifest(error) }

        try createFolder(outputFolder)
        let name = bundleName(id: options.id, version: options.version, format: options.format)
        let finalPath = outputFolder + "/" + name
        let temporaryPath = outputFolder + "/.\(name).partial-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        do throws(PackError) {
            try write(manifest: manifest, files: files, options: options, to: temporaryPath, totalBytes: totalBytes, progress: progress)
            guard rename(temporaryPath, finalPath) == 0 else { throw PackError.outputFolder(path: outputFolder, errno: errno) }
        } catch {
            unlink(temporaryPath)
            throw error
        }
        syncFolder(outputFolder)
        var buffer = [UInt8](repeating: 0, count: 256 << 10)
        let (size, sha256) = try digestOfFile(finalPath, buffer: &buffer)
        let result = PackResult(
            bundle: finalPath, id: options.id.value, version: options.version.description, size: size, sha256: sha256,
            fileCount: manifest.files.count, contentHash: manifest.contentHash, signed: options.signingKey != nil)
        progress(.finished(result))
        return result
    }

    // MARK: Steps

    /// Hashes every file, spreading the work over all cores (SHA-256 is the only CPU cost before writing, and
    /// the manifest, which comes first in the bundle, needs every digest).
    static func hashAll(_ files: [SourceFile], totalBytes: Int64, progress: (PackProgress) -> Void) throws(PackError) -> [String] {
        let work = HashWork(count: files.count)
        let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, files.count))
        DispatchQueue.concurrentPerform(iterations: workers) { _ in
            var buffer = [UInt8](repeating: 0, count: 256 << 10)
            while let index = work.claim() {
                do {
                    let (size, digest) = try digestOfFile(files[index].location, buffer: &buffer)
                    guard size == files[index].size else { throw PackError.fileChanged(path: files[index].path.value) }
                    work.finish(index, digest: digest, bytes: size)
                } catch PackError.unreadable(_, let code) {
                    // Name the file as the package knows it, not by its place on this disk.
                    work.fail(.unreadable(path: files[index].path.value, errno: code), path: files[index].path.value)
                } catch let error as PackError {
                    work.fail(error, path: files[index].path.value)
                } catch {
                    work.fail(.unreadable(path: files[index].path.value, errno: EIO), path: files[index].path.value)
                }
            }
        }
        if let error = work.firstError { throw error }
        progress(.hashed(bytes: totalBytes, of: totalBytes))
        return work.digests
    }

    private static func write(
        manifest: Manifest, files: [SourceFile], options: PackOptions, to path: String, totalBytes: Int64,
        progress: (PackProgress) -> Void
    ) throws(PackError) {
        let entryTime = max(manifest.createdAt, Timestamp.zipEpoch).secondsSinceEpoch
        do {
            let writer = try ArchiveWriter(creating: path, format: options.format, compressionLevel: options.compressionLevel)
            let manifestBytes = manifest.canonicalBytes
            try writer.add(
                ArchiveEntryHeader(path: Manifest.fileName, size: Int64(manifestBytes.count), modificationTime: entryTime, compress: true),
                bytes: manifestBytes)
            if let key = options.signingKey {
                let signature = Array(try key.signature(for: manifestBytes).base64.utf8)
                try writer.add(
                    ArchiveEntryHeader(path: Manifest.signatureFileName, size: Int64(signature.count), modificationTime: entryTime, compress: false),
                    bytes: signature)
            }
            var written: Int64 = 0
            var lastReport = Date()
            for (file, record) in zip(files, manifest.files) {
                var hasher = SHA256()
                try writer.add(
                    ArchiveEntryHeader(
                        path: record.path.value, size: record.size, modificationTime: entryTime,
                        compress: record.size > 0 && MIMETable.entry(for: record.path).isCompressible),
                    contentsOf: file.location
                ) { chunk in hasher.update(bufferPointer: chunk) }
                guard Digests.hex(hasher.finalize()) == record.sha256 else { throw PackError.fileChanged(path: record.path.value) }
                written += record.size
                if Date().timeIntervalSince(lastReport) > 0.1 {
                    lastReport = Date()
                    progress(.written(bytes: written, of: totalBytes))
                }
            }
            try writer.finish()
            progress(.written(bytes: totalBytes, of: totalBytes))
        } catch let error as PackError {
            throw error
        } catch let error as ArchiveError {
            if case .io(let operation, let filePath, let code) = error, operation.hasPrefix("read") || operation == "open",
                let file = files.first(where: { $0.location == filePath })
            {
                throw code == EIO ? .fileChanged(path: file.path.value) : .unreadable(path: file.path.value, errno: code)
            }
            throw .archive(error)
        } catch {
            throw .archive(.writeFailed(entry: nil, reason: "\(error)"))
        }
    }

    private static func createFolder(_ path: String) throws(PackError) {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw .outputFolder(path: path, errno: (error as NSError).code == 0 ? EIO : Int32((error as NSError).code))
        }
        guard access(path, W_OK) == 0 else { throw .outputFolder(path: path, errno: errno) }
    }

    /// Makes the rename durable: without it a power cut could lose the directory entry of a finished bundle.
    private static func syncFolder(_ path: String) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY)
        if descriptor >= 0 {
            fsync(descriptor)
            close(descriptor)
        }
    }

    static func digestOfFile(_ path: String, buffer: inout [UInt8]) throws(PackError) -> (Int64, String) {
        do { return try FileDigest.sha256(ofFile: path, buffer: &buffer) } catch {
            throw .unreadable(path: error.path, errno: error.errno)
        }
    }
}

/// Shared state of the parallel hashing step: a work counter and one result slot per file, behind a lock.
private final class HashWork: @unchecked Sendable {
    private let lock = NSLock()
    private var next = 0
    private let count: Int
    private(set) var digests: [String]
    private(set) var firstError: PackError?
    private var failedPath: String?

    init(count: Int) {
        self.count = count
        digests = Array(repeating: "", count: count)
    }

    func claim() -> Int? {
        lock.withLock {
            guard firstError == nil, next < count else { return nil }
            defer { next += 1 }
            return next
        }
    }

    func finish(_ index: Int, digest: String, bytes: Int64) {
        lock.withLock { digests[index] = digest }
    }

    func fail(_ error: PackError, path: String) {
        lock.withLock {
            // Report the failure of the earliest file so the message does not depend on thread timing.
            if failedPath == nil || path.utf8.lexicographicallyPrecedes(failedPath!.utf8) {
                firstError = error
                failedPath = path
            }
        }
    }
}
