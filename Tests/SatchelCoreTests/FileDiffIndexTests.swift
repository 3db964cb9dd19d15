import Foundation
import Testing
@testable import SatchelCore

private func sha(_ character: Character) -> String { String(repeating: character, count: 64) }
private func file(_ path: String, _ content: Character, size: Int64 = 100) -> FileRecord {
    FileRecord(path: try! SafePath(validating: path), size: size, sha256: sha(content), mime: "text/javascript")
}

@Suite("Per-file diffs: the index, the pairing, the route")
struct FileDiffIndexTests {
    @Test("the index round-trips in canonical form, sorted and without duplicates; other forms are refused")
    func canonical() throws {
        let index = FileDiffIndex(id: try PackageID("shop"), version: try SemanticVersion("1.2.0"), diffs: [
            .init(from: sha("b"), to: sha("c"), size: 10, sha256: sha("d")),
            .init(from: sha("a"), to: sha("c"), size: 12, sha256: sha("e")),
            .init(from: sha("b"), to: sha("c"), size: 10, sha256: sha("d")),
        ])
        #expect(index.diffs.map(\.from) == [sha("a"), sha("b")])
        #expect(try FileDiffIndex.decode(index.canonicalBytes) == index)
        #expect(index.diffs[0].path == "cc/\(sha("a"))-\(sha("c"))")
        // An unknown field, a field out of order (not canonical), a bad hash, a diff to itself: refused.
        let text = String(decoding: index.canonicalBytes, as: UTF8.self)
        for bad in [
            text.replacingOccurrences(of: "\"id\":", with: "\"extra\":1,\"id\":"),
            text.replacingOccurrences(of: "{\"diffs\"", with: "{ \"diffs\""),
            text.replacingOccurrences(of: sha("d"), with: "xyz"),
            text.replacingOccurrences(of: sha("a"), with: sha("c")),
            text.replacingOccurrences(of: "\"size\":10", with: "\"size\":0"),
        ] {
            #expect(throws: FileDiffIndexError.self) { try FileDiffIndex.decode(Array(bad.utf8)) }
        }
    }

    @Test("the route: the smallest diff from a held content, only when smaller than the object")
    func routes() throws {
        let index = FileDiffIndex(id: try PackageID("shop"), version: try SemanticVersion("2.0.0"), diffs: [
            .init(from: sha("a"), to: sha("x"), size: 30, sha256: sha("1")),
            .init(from: sha("b"), to: sha("x"), size: 20, sha256: sha("2")),
            .init(from: sha("c"), to: sha("x"), size: 5, sha256: sha("3")),   // not held
            .init(from: sha("a"), to: sha("y"), size: 90, sha256: sha("4")),  // no smaller than the object
            .init(from: sha("a"), to: sha("z"), size: 1, sha256: sha("5")),   // not needed
        ])
        let held: Set<String> = [sha("a"), sha("b")]
        let routes = index.routes(for: [sha("x"): 100, sha("y"): 90, sha("w"): 50], from: held.contains)
        #expect(routes.count == 1)
        #expect(routes[sha("x")]?.from == sha("b"))
    }

    @Test("pairing: by path, then by the name without its content hash, the nearest size among several")
    func pairing() {
        let base = [
            file("index.html", "1"), file("js/main.3f2a1b9c.js", "2"), file("js/123.aa11bb22.js", "3"),
            file("assets/index-B7x_k2Qa.js", "4"), file("assets/app-4KQZ6F2M.css", "5"),
            file("js/vendor.0a1b2c3d.js", "6", size: 1000), file("js/vendor.9f8e7d6c.js", "7", size: 5000),
            file("same.js", "8"), file("empty.js", "9", size: 0),
        ]
        let target = [
            file("index.html", "a"),                        // same path, new content
            file("js/main.77aa88bb.js", "b"),               // webpack [name].[contenthash]
            file("js/123.cc33dd44.js", "c"),                // webpack [id].[contenthash]
            file("assets/index-Qm9_Zt3x.js", "d"),          // Rollup/Vite [name]-[hash]
            file("assets/app-Z7YQ2MNA.css", "e"),           // esbuild [name]-[hash]
            file("js/vendor.11223344aa.js", "f", size: 4800), // two candidates: the nearer in size
            file("same.js", "8"),                           // content the base holds: nothing to diff
            file("new/feature.js", "g"),                    // no predecessor
            file("empty.js", "h"),                          // an empty predecessor is no help
        ]
        let pairs = Dictionary(uniqueKeysWithValues: ContentPairing.predecessors(of: target, in: base).map { ($0.target.path.value, $0.base.path.value) })
        #expect(pairs == [
            "index.html": "index.html", "js/main.77aa88bb.js": "js/main.3f2a1b9c.js", "js/123.cc33dd44.js": "js/123.aa11bb22.js",
            "assets/index-Qm9_Zt3x.js": "assets/index-B7x_k2Qa.js", "assets/app-Z7YQ2MNA.css": "assets/app-4KQZ6F2M.css",
            "js/vendor.11223344aa.js": "js/vendor.9f8e7d6c.js",
        ])
        #expect(ContentPairing.strippedPath("js/chunk-vendors.js") == nil)
        #expect(ContentPairing.strippedPath("js/polyfill.12345678.js") == nil, "a number is a chunk id, not a hash")
        #expect(ContentPairing.strippedPath("a/b/page.0f0f0f0f.chunk.js") == "a/b/page.*.chunk.js")
        // A name that is only a hash says nothing of the file: left to the content rule, not grouped with every other.
        #expect(ContentPairing.strippedPath("static/js/3f2a1b9c4d5e6f708192.js") == nil)
        #expect(ContentPairing.strippedPath("assets/4f355ba1c2d3e4f5a6b7") == nil)
        #expect(ContentPairing.strippedPath("static/js/3f2a1b9c4d5e6f708192.js.map") == nil)
    }

    @Test("a catalog entry's content.diffs round-trips and is checked")
    func catalogField() throws {
        let diffs = CatalogDiffs(base: "diffs/", url: "patches/shop/1.1.0/diffs.json.gz", size: 40, sha256: sha("a"))
        let entry = CatalogEntry(
            id: try PackageID("shop"), version: try SemanticVersion("1.1.0"), url: "shop-1.1.0.zip", size: 10, sha256: sha("b"),
            content: CatalogContent(manifest: sha("c"), objects: "objects/", patches: [], diffs: diffs))
        let catalog = try Catalog(expires: Timestamp(secondsSinceEpoch: 1_900_000_000), packages: [entry])
        #expect(try Catalog.decode(catalog.canonicalBytes).packages[0].content?.diffs == diffs)
        var bad = entry
        bad.content?.diffs?.base = "diffs"
        #expect(throws: CatalogError.self) { try Catalog(expires: Timestamp(secondsSinceEpoch: 1_900_000_000), packages: [bad]) }
    }
}
