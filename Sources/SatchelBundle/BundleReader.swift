import Crypto
import SatchelArchive
import SatchelCore
import SatchelPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Receives a bundle's files as ``BundleReader`` streams them; the store's installer writes them to disk,
/// the verifier only lets them be hashed.
public protocol BundleFileSink {
    /// A new file starts; its record comes from the (already verified) manifest.
    mutating func begin(_ file: FileRecord) throws
    mutating func write(_ chunk: UnsafeRawBufferPointer) throws
    /// The file's bytes matched its size and SHA-256. Only now may the file be trusted.
    mutating func end(_ file: FileRecord) throws
}

/// A sink that keeps nothing: verification only.
public struct DiscardingSink: BundleFileSink {
    public init() {}
    public mutating func begin(_ file: FileRecord) {}
    public mutating func write(_ chunk: UnsafeRawBufferPointer) {}
    public mutating func end(_ file: FileRecord) {}
}

/// Reads a bundle in one streaming pass, in the order the format fixes: `satchel.json`, then `satchel.sig`
/// when signed, then the files in manifest order.
///
/// A device reads zip only, with Satchel's own reader on zlib (``ZipReader``): ``init(path:trustedKeys:limits:)``
/// refuses a tar.gz by name. The publishing side hands in libarchive's reader for tar.gz through
/// ``init(path:entries:trustedKeys:)``, so both formats pass the same checks in the same order.
///
/// Opening the reader parses and checks the manifest and the signature before a single file byte is read, so
/// nothing is trusted before it is verified; ``readFiles(into:)`` then hashes every file as it streams and
/// accepts exactly the files the manifest lists.
public final class BundleReader {
    public let path: String
    public let manifest: Manifest
    /// The exact bytes of `satchel.json`, which the signature covers.
    public let manifestBytes: [UInt8]
    public let signature: Signature?
    /// The exact bytes of `satchel.sig`, which a delta copies unchanged.
    public let signatureBytes: [UInt8]?
    /// Set when the bundle is a delta (`satchel-delta.json` follows the manifest and signature); its files are
    /// then an ordered subset of the manifest's, the rest coming from the installed base.
    public let delta: DeltaManifest?
    /// Whether a trusted key verified ``signature``.
    public let signatureVerified: Bool
    private let archive: any ArchiveEntryStream
    private var pending: ArchiveEntryInfo?
    private var consumed = false

    /// Opens a zip bundle with the device's own reader.
    /// - Parameters:
    ///   - trustedKeys: when not empty, the bundle must be signed by one of them.
    /// - Throws: ``BundleError/unsupportedFormat(path:format:)`` for a tar.gz.
    public convenience init(path: String, trustedKeys: [VerifyingKey] = [], limits: ArchiveLimits = .default) throws(BundleError) {
        let entries: ZipReader
        do { entries = try ZipReader(path: path, limits: limits) } catch {
            // Not a zip: say so by name when it is the other format the packer writes (asked only now, so a good
            // bundle is opened once).
            let refusal = BundleError.reading(error)
            if case .directory = refusal, BundleFormat.isGzip(path) { throw .unsupportedFormat(path: path, format: "tar.gz") }
            throw refusal
        }
        try self.init(path: path, entries: entries, trustedKeys: trustedKeys)
    }

    /// Reads a bundle from `entries`, an archive opened by the caller (the publishing side's tar.gz reader).
    public init(path: String, entries archive: any ArchiveEntryStream, trustedKeys: [VerifyingKey] = []) throws(BundleError) {
        self.path = path
        let manifestBytes: [UInt8]
        let signature: Signature?
        var signatureBytes: [UInt8]? = nil
        var delta: DeltaManifest? = nil
        do {
            guard let first = try archive.nextEntry() else { throw BundleError.manifestNotFirst(found: nil) }
            guard first.path == Manifest.fileName else { throw BundleError.manifestNotFirst(found: first.path) }
            guard first.kind == .regular else {
                throw BundleError.notARegularFile(entry: first.path, kind: first.kind.description)
            }
            manifestBytes = try archive.readAll(maxBytes: Manifest.maxBytes)
            manifest = try Manifest.decode(manifestBytes)
            var next = try archive.nextEntry()
            if let entry = next, entry.path == Manifest.signatureFileName {
                guard entry.kind == .regular else {
                    throw BundleError.notARegularFile(entry: entry.path, kind: entry.kind.description)
                }
                let raw = try archive.readAll(maxBytes: DocumentLimits.legacySignature)
                signatureBytes = raw
                let text = String(decoding: raw, as: UTF8.self)
                guard let parsed = try? Signature(base64: text) else { throw BundleError.signatureMalformed }
                signature = parsed
                next = try archive.nextEntry()
            } else {
                signature = nil
            }
            if let entry = next, entry.path == DeltaManifest.fileName {
                guard entry.kind == .regular else {
                    throw BundleError.notARegularFile(entry: entry.path, kind: entry.kind.description)
                }
                delta = try DeltaManifest.decode(try archive.readAll(maxBytes: DeltaManifest.maxBytes))
                next = try archive.nextEntry()
            }
            pending = next
            self.manifestBytes = manifestBytes
            self.signature = signature
            self.signatureBytes = signatureBytes
            self.delta = delta
        } catch {
            throw BundleError.reading(error)
        }
        self.archive = archive
        signatureVerified = try BundleError.checkingSignature(of: manifestBytes, signature, trustedKeys: trustedKeys)
    }

    /// Streams every file to `sink`, checking that the archive holds exactly the manifest's files (for a delta:
    /// an ordered subset of them), in order, as regular files with the listed size and SHA-256. Call once.
    /// - Returns: the paths that were read, in manifest order.
    @discardableResult
    public func readFiles<Sink: BundleFileSink>(into sink: inout Sink) throws -> [SafePath] {
        precondition(!consumed, "a bundle's files can be read once")
        consumed = true
        var entry = pending
        var read: [SafePath] = []
        read.reserveCapacity(delta == nil ? manifest.files.count : 0)
        do {
            var index = 0
            while index < manifest.files.count {
                let file = manifest.files[index]
                index += 1
                guard let current = entry else {
                    if delta != nil { break }
                    throw BundleError.missingFile(file.path.value)
                }
                if delta != nil, try SafePath(validating: current.path) != file.path, current.kind == .regular {
                    // A delta skips the files it leaves to the base; a name that sorts before this one is out of order.
                    let name = try SafePath(validating: current.path)
                    if name > file.path { continue }
                }
                try check(current, expected: file)
                try stream(file, into: &sink)
                read.append(file.path)
                entry = try archive.nextEntry()
            }
            if let extra = entry {
                _ = try SafePath(validating: extra.path)
                if let listed = manifest.file(at: try SafePath(validating: extra.path)) {
                    throw BundleError.outOfOrder(entry: extra.path, expected: listed.path.value)
                }
                throw BundleError.unexpectedEntry(extra.path)
            }
        } catch {
            // The sink's own errors (a full disk while staging) pass through as they are.
            throw BundleError.mapping(error) ?? error
        }
        return read
    }

    private func stream<Sink: BundleFileSink>(_ file: FileRecord, into sink: inout Sink) throws {
        try sink.begin(file)
        var hasher = SHA256()
        let size = try archive.readData { chunk in
            hasher.update(bufferPointer: chunk)
            try sink.write(chunk)
        }
        guard size == file.size else {
            throw BundleError.sizeMismatch(path: file.path.value, expected: file.size, actual: size)
        }
        let digest = Digests.hex(hasher.finalize())
        guard digest == file.sha256 else {
            throw BundleError.hashMismatch(path: file.path.value, expected: file.sha256, actual: digest)
        }
        try sink.end(file)
    }

    private func check(_ entry: ArchiveEntryInfo, expected file: FileRecord) throws {
        guard entry.kind == .regular else {
            // tar names folders with a trailing slash; name the entry as the manifest would.
            let name = entry.path.hasSuffix("/") ? String(entry.path.dropLast()) : entry.path
            throw BundleError.notARegularFile(entry: name, kind: entry.kind.description)
        }
        let name = try SafePath(validating: entry.path)
        guard name == file.path else {
            if manifest.file(at: name) == nil { throw BundleError.unexpectedEntry(entry.path) }
            // A listed name in the wrong place is a reordering, a duplicate, or a file that went missing.
            if name < file.path { throw BundleError.outOfOrder(entry: entry.path, expected: file.path.value) }
            throw BundleError.missingFile(file.path.value)
        }
        if let declared = entry.declaredSize, declared != file.size {
            throw BundleError.sizeMismatch(path: file.path.value, expected: file.size, actual: declared)
        }
    }
}

/// The container a bundle file is in, told from its first bytes.
public enum BundleFormat {
    /// Whether the file starts with gzip's magic number (a tar.gz bundle); false when it cannot be read.
    public static func isGzip(_ path: String) -> Bool {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { POSIXIO.close(descriptor) }
        var magic: [UInt8] = [0, 0]
        let got = magic.withUnsafeMutableBytes { POSIXIO.read(descriptor, $0.baseAddress!, 2) }
        return got == 2 && magic == [0x1F, 0x8B]
    }
}

extension BundleError {
    /// Any error met while reading a bundle, as a bundle error (the one mapping every reader shares).
    package static func reading(_ error: any Error) -> BundleError {
        mapping(error) ?? .archive(.corrupt(entry: nil, reason: "\(error)"))
    }

    /// An error of the readers and the rules as a bundle error; nil for anyone else's.
    static func mapping(_ error: any Error) -> BundleError? {
        switch error {
        case let error as BundleError: error
        case let error as DeltaManifestError: .delta(error)
        case let error as ManifestError: .manifest(error)
        case let error as ArchiveError: .archive(error)
        case let error as ZipFormatError: .directory(error)
        case let error as SafePathError: .unsafeEntryName(error)
        default: nil
        }
    }
}
