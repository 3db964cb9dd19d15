// The zip central directory parser that built-in bundles are served through: whatever the bytes, no crash, and
// every accepted entry's data lies inside the archive, before the directory, overlapping no other entry.
import FuzzDriver
import SatchelArchive

@_cdecl("zip_directory_main")
public func entry(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 { FuzzDriver.run(argc, argv, fuzz) }

public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let directory = try? ZipDirectory.parse(bytes) else { return 0 }
    var spans: [(Int64, Int64)] = []
    for entry in directory.entries {
        require(entry.localHeaderOffset >= 0 && entry.dataOffset >= entry.localHeaderOffset, "\(entry.name): offsets out of order")
        require(entry.dataOffset + entry.compressedSize <= directory.centralDirectoryOffset, "\(entry.name): data runs into the directory")
        spans.append((entry.localHeaderOffset, entry.dataOffset + entry.compressedSize))
    }
    spans.sort { $0.0 < $1.0 }
    for (a, b) in zip(spans, spans.dropFirst()) { require(a.1 <= b.0, "entries overlap: \(a) and \(b)") }
    return 0
}
