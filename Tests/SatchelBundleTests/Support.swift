import Foundation
import SatchelTestSupport
import SatchelArchive
import SatchelBundle
import SatchelCore
import SatchelPublishing
#if canImport(Glibc)
import Glibc
#endif

/// A small web app with the kinds of file a real one has.
let sampleApp: [String: String] = [
    "index.html": "<!doctype html><title>Shop</title><script type=module src=js/app.mjs></script>",
    "js/app.mjs": "import { cart } from './cart.mjs'; console.log(cart)",
    "js/cart.mjs": "export const cart = []",
    "css/app.css": "body { font-family: system-ui }",
    "img/logo.svg": "<svg xmlns='http://www.w3.org/2000/svg'/>",
    "img/photo.png": "\u{89}PNG fake but stored",
    "offline.html": "<h1>offline</h1>",
    "guide/café.html": "<h1>café</h1>",
    "offline packages/index.html": "<h1>spaces</h1>",
    "empty.txt": "",
]

func options(
    format: ArchiveFormat = .zip, key: SigningKey? = nil, epoch: Int64? = nil, offlinePage: String? = "offline.html",
    excludes: [String] = [], entry: String = "index.html"
) throws -> PackOptions {
    PackOptions(
        id: try PackageID("shop"), version: try SemanticVersion("1.0.0"),
        scope: try Scope(hosts: [HostPattern("m.shop.example")]), entry: try SafePath(validating: entry),
        spaFallback: true, offlinePage: try offlinePage.map { try SafePath(validating: $0) },
        routes: [try Route(parsing: "/api/=network-first:3000")], excludes: ExcludeRules(adding: excludes),
        format: format, signingKey: key, sourceDateEpoch: epoch)
}

/// Every entry of an archive, in order, with its bytes.
func entries(of path: String) throws -> [(name: String, bytes: [UInt8])] {
    let reader = try ArchiveReader(path: path)
    var result: [(String, [UInt8])] = []
    while let entry = try reader.nextEntry() { result.append((entry.path, try reader.readAll(maxBytes: 64 << 20))) }
    return result
}

/// Writes an archive by hand: for bundles that a conforming packer would never produce.
func writeArchive(_ path: String, _ entries: [(name: String, bytes: [UInt8])], format: ArchiveFormat = .zip) throws {
    let writer = try ArchiveWriter(creating: path, format: format)
    for entry in entries {
        try writer.add(ArchiveEntryHeader(path: entry.name, size: Int64(entry.bytes.count), modificationTime: 315_532_800, compress: true), bytes: entry.bytes)
    }
    try writer.finish()
}
