import Foundation
import SatchelArchive
import SatchelBundle
import SatchelCore
@testable import SatchelEngine
import SatchelHTTP
import SatchelStore
import SatchelTestSupport
import Testing
import SatchelPublishing

@Suite("The engine serving a built-in bundle straight from its archive")
struct BuiltInServingTests {
    /// A built-in with a small deflated file, a large deflated file and a large stored media file.
    struct Fixture {
        let bundle: String
        let engine: ResourceEngine
        let files: [String: [UInt8]]
    }

    static func fixture(_ folder: String) throws -> Fixture {
        var generator = SystemRandomNumberGenerator()
        let files: [String: [UInt8]] = [
            "index.html": Array("<!doctype html><h1>built in</h1>".utf8),
            "js/vendor.js": Array((0..<30_000).map { "var v\($0) = \($0 * 7);\n" }.joined().utf8),
            "media/promo.mp4": (0..<(3 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) },
        ]
        let source = folder + "/src"
        for (path, bytes) in files {
            try FileManager.default.createDirectory(atPath: source + "/" + (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: source + "/" + path))
        }
        let options = PackOptions(id: try PackageID("shop"), version: try SemanticVersion("1.0.0"), scope: try Scope(hosts: [HostPattern("m.shop.com")]))
        let bundle = try Packer.pack(source: source, options: options, outputFolder: folder + "/out").bundle
        let store = try PackageStore(root: folder + "/store", configuration: StoreConfiguration(builtIns: [bundle]))
        return Fixture(bundle: bundle, engine: try ResourceEngine(source: store), files: files)
    }

    @Test("every file byte-exact, with its headers; small deflated files from memory, stored ones as archive regions")
    func byteExact() async throws {
        try await withTemporaryFolder { folder async throws in
            let fixture = try Self.fixture(folder)
            for (path, expected) in fixture.files {
                let response = try #require(await fixture.engine.get("https://m.shop.com/\(path)").response)
                #expect(response.status == 200)
                #expect(response.headers["Content-Length"] == String(expected.count))
                #expect(response.headers["ETag"] == "\"\(Digests.sha256Hex(expected))\"")
                #expect(try await response.body.collect() == expected, "\(path)")
                switch (path, response.body) {
                case ("index.html", .bytes): break
                case ("js/vendor.js", .stream): break
                case ("media/promo.mp4", .file(let region)):
                    // The archive itself: sendfile and Range work on it unchanged.
                    #expect(region.path == fixture.bundle)
                default: Issue.record("\(path) came as \(response.body)")
                }
            }
        }
    }

    @Test("Range on a stored entry: 206 with the exact bytes, a region of the archive at the entry's offset")
    func rangeOnStored() async throws {
        try await withTemporaryFolder { folder async throws in
            let fixture = try Self.fixture(folder)
            let expected = try #require(fixture.files["media/promo.mp4"])
            let entry = try #require(try ZipDirectory.read(path: fixture.bundle).entries.first { $0.name == "media/promo.mp4" })
            #expect(entry.method == .stored)
            for (header, range) in [("bytes=0-99", 0...99), ("bytes=1000000-1999999", 1_000_000...1_999_999), ("bytes=-500", (expected.count - 500)...(expected.count - 1))] {
                let response = try #require(await fixture.engine.get("https://m.shop.com/media/promo.mp4", ["Range": header]).response)
                #expect(response.status == 206)
                #expect(response.headers["Content-Range"] == "bytes \(range.lowerBound)-\(range.upperBound)/\(expected.count)")
                guard case .file(let region) = response.body else { Issue.record("not a region"); continue }
                #expect(region.offset == entry.dataOffset + Int64(range.lowerBound))
                #expect(try region.readAll() == Array(expected[range]))
            }
            let unsatisfiable = try #require(await fixture.engine.get("https://m.shop.com/media/promo.mp4", ["Range": "bytes=\(expected.count)-"]).response)
            #expect(unsatisfiable.status == 416)
        }
    }

    @Test("Range inside a large deflated file: decoded on demand, exact bytes, in bounded chunks")
    func rangeOnDeflated() async throws {
        try await withTemporaryFolder { folder async throws in
            let fixture = try Self.fixture(folder)
            let expected = try #require(fixture.files["js/vendor.js"])
            let response = try #require(await fixture.engine.get("https://m.shop.com/js/vendor.js", ["Range": "bytes=400000-400099"]).response)
            #expect(response.status == 206)
            guard case .stream(let stream) = response.body else { Issue.record("expected a stream"); return }
            var chunks: [[UInt8]] = []
            for try await chunk in stream { chunks.append(chunk) }
            #expect(chunks.flatMap { $0 } == Array(expected[400_000...400_099]))
            let whole = try #require(await fixture.engine.get("https://m.shop.com/js/vendor.js").response)
            guard case .stream(let all) = whole.body else { Issue.record("expected a stream"); return }
            var largest = 0
            var received: [UInt8] = []
            for try await chunk in all {
                largest = max(largest, chunk.count)
                received += chunk
            }
            #expect(received == expected)
            #expect(largest <= FileRegion.maxChunk)
            // HEAD: headers only.
            let head = try #require(await fixture.engine.get("https://m.shop.com/js/vendor.js", method: "HEAD").response)
            #expect(head.headers["Content-Length"] == String(expected.count))
            #expect(head.body.knownLength == 0)
        }
    }
}
