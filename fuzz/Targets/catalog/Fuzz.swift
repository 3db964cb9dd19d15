// Catalog decoding: no crash, and an accepted catalog survives its own canonical writer unchanged.
import FuzzDriver
import SatchelCore

@_cdecl("catalog_main")
public func entry(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 { FuzzDriver.run(argc, argv, fuzz) }

public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let catalog = try? Catalog.decode(bytes) {
        let again = try? Catalog.decode(catalog.canonicalBytes)
        require(again == catalog, "a catalog changed through its canonical bytes")
    }
    return 0
}
