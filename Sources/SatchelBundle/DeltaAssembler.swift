import SatchelArchive
import SatchelCore
import SatchelPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

public enum DeltaError: Error, Equatable, Sendable, CustomStringConvertible {
    case bundle(path: String, BundleError)
    case isADelta(String)
    case differentPackages(String, String)
    case sameVersion(String)
    case deltaManifest(DeltaManifestError)
    case outputFolder(path: String, errno: Int32)
    case archive(ArchiveError)

    public var description: String {
        switch self {
        case .bundle(let path, let error): "\(path): \(error)"
        case .isADelta(let path): "\(path) is itself a delta; diff two full bundles"
        case .differentPackages(let old, let new): "the bundles are different packages (\(old) and \(new))"
        case .sameVersion(let version): "both bundles are version \(version); a delta needs two versions"
        case .deltaManifest(let error): "\(error)"
        case .outputFolder(let path, let code): "cannot write \(path): \(String(cString: strerror(code)))"
        case .archive(let error): "\(error)"
        }
    }
}

/// Builds a delta bundle on the device from parts it already has (docs/formats.md, "Objects and patches"): a
/// manifest rebuilt from a patch, its signature, and each file the base lacks from a downloaded object or from
/// another installed version. The store then installs it exactly as a published delta (signature, every file's
/// hash, the durable switch), so the objects path adds no install logic of its own.
public enum DeltaAssembler {
    /// Where one file's bytes come from.
    public enum Source: Sendable {
        /// A file on disk, as it is (an object published uncompressed, a file of an installed version).
        case file(String)
        /// A gzip file on disk whose content is the file (an object published compressed).
        case gzipFile(String)
        /// An entry of a bundle read in place (a built-in).
        case bundle(InPlaceBundle, FileRecord)
        /// `size` bytes of a file on disk from `offset`, as they are or a gzip of the file (an object inside a step).
        case slice(String, offset: Int64, size: Int64, gzip: Bool)
    }

    public static func write(
        to path: String, manifestBytes: [UInt8], signature: [UInt8]?, delta: DeltaManifest, files: [(FileRecord, Source)]
    ) throws(DeltaError) {
        let temporary = path + ".partial-\(getpid())"
        do {
            let writer = try ZipWriter(creating: temporary)
            try writer.add(Manifest.fileName, bytes: manifestBytes)
            if let signature { try writer.add(Manifest.signatureFileName, bytes: signature) }
            try writer.add(DeltaManifest.fileName, bytes: delta.canonicalBytes)
            var buffer = [UInt8](repeating: 0, count: 256 << 10)
            for (record, source) in files.sorted(by: { $0.0.path < $1.0.path }) {
                try writer.beginEntry(record.path.value, size: record.size)
                switch source {
                case .file(let file):
                    try copy(file, buffer: &buffer) { chunk in try writer.writeEntryData(chunk) }
                case .gzipFile(let file):
                    let reader = try GunzipReader { try writer.writeEntryData($0) }
                    try copy(file, buffer: &buffer) { chunk in try reader.write(chunk) }
                    try reader.finish()
                case .slice(let file, let offset, let size, false):
                    try copy(file, from: offset, count: size, buffer: &buffer) { chunk in try writer.writeEntryData(chunk) }
                case .slice(let file, let offset, let size, true):
                    let reader = try GunzipReader { try writer.writeEntryData($0) }
                    try copy(file, from: offset, count: size, buffer: &buffer) { chunk in try reader.write(chunk) }
                    try reader.finish()
                case .bundle(let bundle, let file):
                    let reader = try bundle.reader(for: file)
                    while true {
                        let count = try buffer.withUnsafeMutableBytes { try reader.read(into: $0) }
                        if count == 0 { break }
                        try buffer.withUnsafeBytes { try writer.writeEntryData(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
                    }
                }
            }
            try writer.finish()
            guard rename(temporary, path) == 0 else { throw DeltaError.outputFolder(path: path, errno: errno) }
        } catch let error as DeltaError {
            unlink(temporary)
            throw error
        } catch let error as ArchiveError {
            unlink(temporary)
            throw .archive(error)
        } catch let error as BundleError {
            unlink(temporary)
            throw .bundle(path: path, error)
        } catch {
            unlink(temporary)
            throw .archive(.writeFailed(entry: nil, reason: "\(error)"))
        }
    }

    /// Streams the file at `path` (from `start`, `count` bytes of it; nil: to its end) to `sink` through `buffer`.
    private static func copy(
        _ path: String, from start: Int64 = 0, count limit: Int64? = nil, buffer: inout [UInt8], sink: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw ArchiveError.io(operation: "open", path: path, errno: errno) }
        defer { POSIXIO.close(descriptor) }
        var offset = start
        var left = limit ?? Int64.max
        while left > 0 {
            let wanted = Int(min(Int64(buffer.count), left))
            let result = buffer.withUnsafeMutableBytes { POSIXIO.readFully(descriptor, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<wanted]), at: offset) }
            let count: Int
            switch result {
            case .failure(let code): throw ArchiveError.io(operation: "read", path: path, errno: code.rawValue)
            case .success(let got): count = got
            }
            if count == 0 {
                // A slice must be there whole: a file cut short is an error, not a short entry.
                if limit != nil { throw ArchiveError.io(operation: "read", path: path, errno: EIO) }
                return
            }
            offset += Int64(count)
            left -= Int64(count)
            try buffer.withUnsafeBytes { try sink(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
        }
    }
}
