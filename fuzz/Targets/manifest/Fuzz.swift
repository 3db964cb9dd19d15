// Manifest decoding: no crash, and a manifest that decodes is canonical (it encodes back to the same bytes),
// because the signature covers exactly those bytes.
import FuzzDriver
import SatchelCore

@_cdecl("manifest_main")
public func entry(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 { FuzzDriver.run(argc, argv, fuzz) }

public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let manifest = try? Manifest.decode(bytes) {
        require(manifest.canonicalBytes == bytes, "a manifest decoded from bytes that are not its canonical form")
    }
    _ = try? Manifest.decode(bytes, requireCanonical: false)
    return 0
}
