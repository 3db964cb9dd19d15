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

/// What `satchel diff` produced.
public struct DeltaResult: Sendable, Equatable, Codable {
    public var delta: String
    public var id: String
    public var from: String
    public var to: String
    public var size: Int64
    public var sha256: String
    public var added: Int
    public var changed: Int
    public var deleted: Int
    public var unchanged: Int
}

/// Builds a delta bundle (docs/formats.md, "Delta bundle") from two full bundles of one package: the target's
/// own `satchel.json` and `satchel.sig` byte for byte (so the delta needs no re-signing and installs are checked
/// against the same signed manifest), `satchel-delta.json`, then the added and changed files in manifest order.
///
/// Both bundles are read through ``BundleReader``, so a damaged target is refused rather than turned into a
/// delta, and the target's files are copied archive to archive without a temporary copy. Output is
/// deterministic and written like a pack: temporary file, fsync, rename.
public enum DeltaBuilder {
    public static func bundleName(id: PackageID, from: SemanticVersion, to: SemanticVersion) -> String {
        "\(id)-\(from)-\(to).zip"
    }

    public static func build(
        from oldPath: String, to newPath: String, outputFolder: String, compressionLevel: Int = Packer.defaultCompressionLevel
    ) throws(DeltaError) -> DeltaResult {
        let base: Manifest
        do { base = try BundleReader.anyFormat(path: oldPath).manifest } catch { throw .bundle(path: oldPath, error) }
        let target: BundleReader
        do { target = try BundleReader.anyFormat(path: newPath) } catch { throw .bundle(path: newPath, error) }
        let manifest = target.manifest
        guard target.delta == nil else { throw .isADelta(newPath) }
        guard base.id == manifest.id else { throw .differentPackages(base.id.value, manifest.id.value) }
        guard base.version != manifest.version else { throw .sameVersion(manifest.version.description) }

        let baseFiles = Dictionary(uniqueKeysWithValues: base.files.map { ($0.path, $0.sha256) })
        let targetPaths = Set(manifest.files.map(\.path))
        let carried = manifest.files.filter { baseFiles[$0.path] == nil }.count
        let changed = manifest.files.filter { file in baseFiles[file.path].map { $0 != file.sha256 } ?? false }.count
        let unchanged = manifest.files.count - carried - changed
        let deleted = base.files.map(\.path).filter { !targetPaths.contains($0) }
        let deltaManifest: DeltaManifest
        do { deltaManifest = try DeltaManifest(from: base.version, fromContentHash: base.contentHash, deleted: deleted) } catch {
            throw .deltaManifest(error)
        }

        do { try FileManager.default.createDirectory(atPath: outputFolder, withIntermediateDirectories: true) } catch {
            throw .outputFolder(path: outputFolder, errno: EACCES)
        }
        let name = bundleName(id: manifest.id, from: base.version, to: manifest.version)
        let finalPath = outputFolder + "/" + name
        let temporaryPath = outputFolder + "/.\(name).partial-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        do throws(DeltaError) {
            try write(target, delta: deltaManifest, keep: { baseFiles[$0.path] != $0.sha256 }, to: temporaryPath, level: compressionLevel)
            guard rename(temporaryPath, finalPath) == 0 else { throw DeltaError.outputFolder(path: outputFolder, errno: errno) }
        } catch {
            unlink(temporaryPath)
            throw error
        }
        let digest: (size: Int64, sha256: String)
        do { digest = try FileDigest.sha256(ofFile: finalPath) } catch { throw .outputFolder(path: finalPath, errno: error.errno) }
        return DeltaResult(
            delta: finalPath, id: manifest.id.value, from: base.version.description, to: manifest.version.description,
            size: digest.size, sha256: digest.sha256, added: carried, changed: changed, deleted: deleted.count, unchanged: unchanged)
    }

    private static func write(
        _ target: BundleReader, delta: DeltaManifest, keep: @escaping (FileRecord) -> Bool, to path: String, level: Int
    ) throws(DeltaError) {
        let manifest = target.manifest
        let entryTime = max(manifest.createdAt, Timestamp.zipEpoch).secondsSinceEpoch
        do {
            let writer = try ArchiveWriter(creating: path, format: .zip, compressionLevel: level)
            try writer.add(
                ArchiveEntryHeader(path: Manifest.fileName, size: Int64(target.manifestBytes.count), modificationTime: entryTime, compress: true),
                bytes: target.manifestBytes)
            if let signature = target.signatureBytes {
                try writer.add(
                    ArchiveEntryHeader(path: Manifest.signatureFileName, size: Int64(signature.count), modificationTime: entryTime, compress: false),
                    bytes: signature)
            }
            let deltaBytes = delta.canonicalBytes
            try writer.add(
                ArchiveEntryHeader(path: DeltaManifest.fileName, size: Int64(deltaBytes.count), modificationTime: entryTime, compress: true),
                bytes: deltaBytes)
            var sink = CopyingSink(writer: writer, entryTime: entryTime, keep: keep)
            try target.readFiles(into: &sink)
            try writer.finish()
        } catch let error as DeltaError {
            throw error
        } catch let error as BundleError {
            throw .bundle(path: target.path, error)
        } catch let error as ArchiveError {
            throw .archive(error)
        } catch {
            throw .archive(.writeFailed(entry: nil, reason: "\(error)"))
        }
    }

    /// Copies the kept files from the target bundle's stream into the delta as the reader verifies them.
    private struct CopyingSink: BundleFileSink {
        let writer: ArchiveWriter
        let entryTime: Int64
        let keep: (FileRecord) -> Bool
        var copying = false

        mutating func begin(_ file: FileRecord) throws {
            copying = keep(file)
            guard copying else { return }
            try writer.beginEntry(ArchiveEntryHeader(
                path: file.path.value, size: file.size, modificationTime: entryTime,
                compress: file.size > 0 && MIMETable.entry(for: file.path).isCompressible))
        }

        mutating func write(_ chunk: UnsafeRawBufferPointer) throws {
            if copying { try writer.writeEntryData(chunk) }
        }

        mutating func end(_ file: FileRecord) {}
    }
}
