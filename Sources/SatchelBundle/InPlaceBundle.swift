import Crypto
import Dispatch
import Foundation
import SatchelArchive
import SatchelCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A zip bundle read where it lies, never extracted: what built-in packages are (read-only bundles shipped inside
/// an app). Opening it reads the zip's central directory (``ZipDirectory``), the manifest and the signature, and
/// checks the bundle's layout against the Formats: `satchel.json` first, `satchel.sig` second when signed, then
/// exactly the manifest's files in manifest order with the listed sizes; a delta is refused (it is not complete on
/// its own). ``verifyFiles()`` then hashes every file exactly as it will be served, through the same directory
/// offsets and the same inflater, so a zip whose directory and local entries tell different stories cannot pass
/// verification with one and be served with the other.
///
/// As a ``PackageArchive`` it tells the engine where each file's bytes are: a stored entry is a plain region of
/// the archive (sendfile and Range work unchanged); a deflated one is inflated on demand.
///
/// tar.gz bundles cannot be read this way (a gzip stream has no random access): they are refused by name.
public final class InPlaceBundle: PackageArchive {
    public let path: String
    public let manifest: Manifest
    /// The exact bytes of `satchel.json`, which the signature covers.
    public let manifestBytes: [UInt8]
    public let signatureBytes: [UInt8]?
    /// Whether a trusted key verified the signature.
    public let signatureVerified: Bool
    /// SHA-256 over every entry's name, method, CRC, sizes and offsets: changes whenever the directory does.
    public let directoryDigest: String
    /// The zip entry of each manifest file.
    private let entries: [String: ZipEntry]

    /// - Parameters:
    ///   - trustedKeys: when not empty, the bundle must be signed by one of them.
    public init(path: String, trustedKeys: [VerifyingKey] = [], limits: ArchiveLimits = .default) throws(BundleError) {
        self.path = path
        let directory: ZipDirectory
        do { directory = try ZipDirectory.read(path: path, limits: limits) } catch {
            if BundleFormat.isGzip(path) { throw .cannotServeInPlace(reason: "it is a tar.gz; only a zip can be served without extracting it") }
            throw .directory(error)
        }
        var queue = directory.entries[...]
        guard let first = queue.popFirst() else { throw .manifestNotFirst(found: nil) }
        guard first.name == Manifest.fileName else { throw .manifestNotFirst(found: first.name) }
        let manifestBytes = try Self.readSmall(path, first, limit: Manifest.maxBytes)
        do { manifest = try Manifest.decode(manifestBytes) } catch { throw .manifest(error) }
        self.manifestBytes = manifestBytes
        var signature: Signature?
        var signatureBytes: [UInt8]?
        if let next = queue.first, next.name == Manifest.signatureFileName {
            queue.removeFirst()
            let raw = try Self.readSmall(path, next, limit: DocumentLimits.legacySignature)
            guard let parsed = try? Signature(base64: String(decoding: raw, as: UTF8.self)) else { throw .signatureMalformed }
            signature = parsed
            signatureBytes = raw
        }
        self.signatureBytes = signatureBytes
        if let next = queue.first, next.name == DeltaManifest.fileName {
            throw .cannotServeInPlace(reason: "it is a delta, which holds only the files that changed")
        }
        // Exactly the manifest's files, in its order, with its sizes.
        var entries: [String: ZipEntry] = [:]
        entries.reserveCapacity(manifest.files.count)
        for file in manifest.files {
            guard let entry = queue.popFirst() else { throw .missingFile(file.path.value) }
            let name: SafePath
            do { name = try SafePath(validating: entry.name) } catch { throw .unsafeEntryName(error) }
            guard name == file.path else {
                if manifest.file(at: name) == nil { throw .unexpectedEntry(entry.name) }
                if name < file.path { throw .outOfOrder(entry: entry.name, expected: file.path.value) }
                throw .missingFile(file.path.value)
            }
            guard entry.size == file.size else { throw .sizeMismatch(path: file.path.value, expected: file.size, actual: entry.size) }
            entries[file.path.value] = entry
        }
        if let extra = queue.first { throw .unexpectedEntry(extra.name) }
        self.entries = entries

        signatureVerified = try BundleError.checkingSignature(of: manifestBytes, signature, trustedKeys: trustedKeys)
        var hasher = SHA256()
        for entry in directory.entries {
            hasher.update(data: Array("\(entry.name)\u{0}\(entry.method == .stored ? 0 : 8) \(entry.crc32) \(entry.compressedSize) \(entry.size) \(entry.dataOffset)\n".utf8))
        }
        directoryDigest = Digests.hex(hasher.finalize())
    }

    /// The zip entry holding `file`, when the bundle has it.
    public func entry(for file: FileRecord) -> ZipEntry? { entries[file.path.value] }

    /// Reads `file` from its first byte (decoded when deflated).
    public func reader(for file: FileRecord) throws(BundleError) -> ZipEntryReader {
        guard let entry = entries[file.path.value] else { throw .missingFile(file.path.value) }
        do { return try ZipEntryReader(path: path, entry: entry) } catch { throw .archive(error) }
    }

    /// Hashes every file as it would be served, on every core, and throws for the first (in manifest order) whose
    /// bytes are not the manifest's.
    public func verifyFiles() throws(BundleError) {
        try verify(manifest.files)
    }

    /// Hashes the given files (a subset of the manifest's); the first mismatch in their order is thrown.
    public func verify(_ files: [FileRecord]) throws(BundleError) {
        let failures = Locked([Int: BundleError]())
        let next = Locked(0)
        let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, files.count))
        DispatchQueue.concurrentPerform(iterations: workers) { _ in
            while true {
                let index = next.withLock { value -> Int in
                    defer { value += 1 }
                    return value
                }
                guard index < files.count else { return }
                // Once anything failed, files after it need no hashing: only the first failure is reported.
                if let first = failures.withLock({ $0.keys.min() }), first < index { return }
                do throws(BundleError) {
                    try check(files[index])
                } catch {
                    failures.withLock { $0[index] = error }
                }
            }
        }
        if let first = failures.withLock({ $0.min { $0.key < $1.key } }) { throw first.value }
    }

    private func check(_ file: FileRecord) throws(BundleError) {
        let reader = try reader(for: file)
        var hasher = SHA256()
        do {
            while !reader.isAtEnd { hasher.update(data: try reader.read(upTo: 256 << 10)) }
            _ = try reader.read(upTo: 1)
        } catch { throw .archive(error) }
        let digest = Digests.hex(hasher.finalize())
        guard digest == file.sha256 else { throw .hashMismatch(path: file.path.value, expected: file.sha256, actual: digest) }
    }

    // MARK: PackageArchive

    public func location(of file: FileRecord) -> FileLocation? {
        guard let entry = entries[file.path.value] else { return nil }
        switch entry.method {
        case .stored: return .region(path: path, offset: entry.dataOffset)
        case .deflated: return .encoded(DeflatedEntry(path: path, entry: entry))
        }
    }

    // MARK: Helpers

    private static func readSmall(_ path: String, _ entry: ZipEntry, limit: Int) throws(BundleError) -> [UInt8] {
        guard entry.size <= Int64(limit) else { throw .archive(.entryTooLarge(entry: entry.name, limit: Int64(limit))) }
        do { return try ZipEntryReader(path: path, entry: entry).readAll() } catch { throw .archive(error) }
    }
}

/// A deflated entry of an in-place bundle, inflated when it is served.
struct DeflatedEntry: EncodedFile {
    let path: String
    let entry: ZipEntry

    func decodeAll() throws -> [UInt8] { try ZipEntryReader(path: path, entry: entry).readAll() }

    func decode(range: ClosedRange<Int64>, chunkSize: Int) -> AsyncThrowingStream<[UInt8], any Error> {
        let cursor = Cursor(path: path, entry: entry, range: range, chunkSize: max(1, chunkSize))
        return AsyncThrowingStream(unfolding: { try cursor.next() })
    }

    /// The reader behind one response body: opened at the first pull, so a response never read costs nothing.
    final class Cursor: Sendable {
        private struct State {
            var reader: ZipEntryReader?
            var remaining: Int64
        }
        private let state: Locked<State>
        let path: String
        let entry: ZipEntry
        let start: Int64
        let chunkSize: Int

        init(path: String, entry: ZipEntry, range: ClosedRange<Int64>, chunkSize: Int) {
            self.path = path
            self.entry = entry
            start = range.lowerBound
            self.chunkSize = chunkSize
            state = Locked(State(reader: nil, remaining: range.upperBound - range.lowerBound + 1))
        }

        func next() throws -> [UInt8]? {
            try state.withLock { state in
                guard state.remaining > 0 else {
                    state.reader = nil
                    return nil
                }
                if state.reader == nil {
                    let reader = try ZipEntryReader(path: path, entry: entry)
                    try reader.skip(start)
                    state.reader = reader
                }
                let chunk = try state.reader!.read(upTo: Int(min(Int64(chunkSize), state.remaining)))
                guard !chunk.isEmpty else { throw ArchiveError.corrupt(entry: entry.name, reason: "ends before its declared size") }
                state.remaining -= Int64(chunk.count)
                if state.remaining == 0 { state.reader = nil }
                return chunk
            }
        }
    }
}
