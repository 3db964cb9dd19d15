// The whole device-side reader a phone installs bundles with: the zip's directory, every entry inflated with its
// size and CRC-32 checked (ZipReader), and the bundle's own checks on top (BundleReader: manifest, signature, files
// in manifest order, sizes and SHA-256). Whatever the bytes: no crash, no entry that yields other than its declared
// size, and nothing accepted that the bundle rules refuse.
import FuzzDriver
import Glibc
import SatchelArchive
import SatchelBundle

@_cdecl("zip_reader_main")
public func entry(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 { FuzzDriver.run(argc, argv, fuzz) }

/// One scratch file per process, rewritten for each input (the readers take a path, as on a device).
private let scratch: String = {
    let folder = (getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp")
    return folder + "/satchel-fuzz-zip-reader-\(getpid()).zip"
}()

public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let descriptor = open(scratch, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    require(descriptor >= 0, "cannot create \(scratch)")
    var written = 0
    while written < size {
        let count = write(descriptor, data + written, size - written)
        require(count > 0, "cannot write \(scratch)")
        written += count
    }
    close(descriptor)

    // Raw entries: each one yields exactly its declared size, in chunks no larger than the reader's buffer.
    if let reader = try? ZipReader(path: scratch, limits: ArchiveLimits(maxEntries: 1000, maxEntryBytes: 8 << 20, maxTotalBytes: 32 << 20)) {
        while let entry = try? reader.nextEntry() {
            var total: Int64 = 0
            do {
                let count = try reader.readData { chunk in
                    require(chunk.count <= 256 << 10, "a chunk larger than the buffer")
                    total += Int64(chunk.count)
                }
                require(count == total, "readData's count differs from the bytes delivered")
                require(count == entry.declaredSize, "\(entry.path): \(count) bytes read, \(entry.declaredSize ?? -1) declared")
            } catch {
                break
            }
        }
    }

    // As a bundle: anything accepted holds exactly the manifest's files (the reader checked each hash).
    if let bundle = try? BundleReader(path: scratch, limits: ArchiveLimits(maxEntries: 1000, maxEntryBytes: 8 << 20, maxTotalBytes: 32 << 20)) {
        var sink = DiscardingSink()
        if let read = try? bundle.readFiles(into: &sink) {
            if bundle.delta == nil {
                require(read == bundle.manifest.files.map(\.path), "a full bundle accepted without exactly the manifest's files")
            } else {
                require(Set(read).isSubset(of: Set(bundle.manifest.files.map(\.path))), "a delta accepted with a file the manifest lacks")
            }
        }
    }
    return 0
}
