import Foundation
import SatchelCore
@testable import SatchelEngine
import SatchelHTTP
import SatchelTestSupport
import Testing

@Suite("The engine: resolving URLs and answering with HTTP semantics")
struct EngineTests {
    static let extensions = [
        "html": "text/html; charset=utf-8", "css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8",
        "mjs": "text/javascript; charset=utf-8", "json": "application/json; charset=utf-8", "map": "application/json; charset=utf-8",
        "wasm": "application/wasm", "svg": "image/svg+xml; charset=utf-8", "png": "image/png", "jpg": "image/jpeg", "webp": "image/webp",
        "gif": "image/gif", "ico": "image/x-icon", "woff": "font/woff", "woff2": "font/woff2", "ttf": "font/ttf", "mp4": "video/mp4",
        "webm": "video/webm", "mp3": "audio/mpeg", "m4a": "audio/mp4", "txt": "text/plain; charset=utf-8",
        "xml": "application/xml; charset=utf-8", "webmanifest": "application/manifest+json; charset=utf-8", "pdf": "application/pdf",
    ]

    func engine(_ folder: String, _ packages: [ServedPackage], _ configuration: EngineConfiguration = EngineConfiguration()) throws -> ResourceEngine {
        try ResourceEngine(source: FolderSource(packages), configuration: configuration)
    }

    @Test("Content-Type comes from the manifest, with a charset for text", arguments: extensions.sorted { $0.key < $1.key })
    func mime(_ ext: String, _ type: String) async throws {
        try await withTemporaryFolder { folder async throws in
            let engine = try engine(folder, [makePackage(in: folder, files: ["index.html": text("x"), "file.\(ext)": text("data")])])
            let response = try #require(await engine.get("satchel://m.shop.com/file.\(ext)").response)
            #expect(response.status == 200)
            #expect(response.headers["Content-Type"] == type)
        }
    }

    @Test("URLs map to files: entry, dir/, prefix without slash, query and fragment, encoded names, all schemes")
    func mapping() async throws {
        try await withTemporaryFolder { folder async throws in
            let files: [String: [UInt8]] = [
                "index.html": text("root"), "guide/index.html": text("guide"), "a b/c.html": text("space"), "café.html": text("cafe"),
            ]
            let engine = try engine(folder, [makePackage(in: folder, prefix: "/app/", files: files)])
            func body(_ url: String) async throws -> String? {
                guard let response = await engine.get(url).response, response.status == 200 else { return nil }
                return String(decoding: try await response.body.collect(), as: UTF8.self)
            }
            #expect(try await body("satchel://m.shop.com/app/") == "root")
            #expect(try await body("satchel://m.shop.com/app") == "root")
            #expect(try await body("https://m.shop.com/app/index.html?v=3#top") == "root")
            #expect(try await body("http://M.SHOP.COM:8080/app/guide/") == "guide")
            #expect(try await body("satchel://m.shop.com/app/a%20b/c.html") == "space")
            #expect(try await body("satchel://m.shop.com/app/caf%C3%A9.html") == "cafe")
            #expect(try await body("satchel://m.shop.com/app/cafe%CC%81.html") == "cafe")
            #expect(await engine.get("satchel://m.shop.com/app/%2e%2e/secret").response?.status == 400)
            #expect(await engine.get("satchel://m.shop.com/app/a%2Fb").response?.status == 400)
            #expect(await engine.get("satchel://m.shop.com/app/missing.css").miss?.reason == .notInPackage)
            #expect(await engine.get("satchel://m.shop.com/other/x").miss?.reason == .noPackage)
            #expect(await engine.get("satchel://other.com/app/").miss?.reason == .noPackage)
            #expect(await engine.get("ftp://m.shop.com/app/").miss?.reason == .scheme)
            #expect(await engine.get("satchel://m.shop.com/app/x.js").miss?.upstreamURL == "https://m.shop.com/app/x.js")
        }
    }

    @Test("single-page apps: extension-less misses serve the entry when the manifest says so")
    func spaFallback() async throws {
        try await withTemporaryFolder { folder async throws in
            let spa = try engine(folder, [makePackage(in: folder, files: ["index.html": text("spa"), "app.js": text("js")], spaFallback: true)])
            #expect(try await spa.get("satchel://m.shop.com/products/42").response?.body.collect() == text("spa"))
            #expect(await spa.get("satchel://m.shop.com/missing.js").miss?.reason == .notInPackage)
            let plain = try engine(folder, [makePackage(in: folder, id: "plain", files: ["index.html": text("x")])])
            #expect(await plain.get("satchel://m.shop.com/products/42").miss?.reason == .notInPackage)
        }
    }

    @Test("strategies: offline-only answers 404, network routes and other methods are misses")
    func strategies() async throws {
        try await withTemporaryFolder { folder async throws in
            let engine = try engine(folder, [makePackage(
                in: folder, files: ["index.html": text("x"), "api/cached.json": text("{}")],
                routes: [Route(prefix: "/static/", strategy: .offlineOnly), Route(prefix: "/api/", strategy: .networkFirst, timeoutMs: 1500), Route(prefix: "/live/", strategy: .networkOnly)])])
            #expect(await engine.get("satchel://m.shop.com/static/gone.png").response?.status == 404)
            let api = try #require(await engine.get("satchel://m.shop.com/api/cached.json").miss)
            #expect(api == EngineMiss(
                reason: .networkRoute, strategy: .networkFirst, timeoutMs: 1500, package: "shop@1.0.0", upstreamURL: "https://m.shop.com/api/cached.json",
                request: ResourceRequest(url: "satchel://m.shop.com/api/cached.json")))
            #expect(await engine.get("satchel://m.shop.com/live/x").miss?.strategy == .networkOnly)
            #expect(await engine.get("satchel://m.shop.com/index.html", method: "POST").miss?.reason == .method)
            #expect(await engine.get("satchel://m.shop.com/index.html", method: "DELETE").miss?.reason == .method)
        }
    }

    @Test("ETag, If-None-Match -> 304, Cache-Control for HTML and other files")
    func conditional() async throws {
        try await withTemporaryFolder { folder async throws in
            let engine = try engine(folder, [makePackage(in: folder, files: ["index.html": text("page"), "app.js": text("js")])])
            let page = try #require(await engine.get("satchel://m.shop.com/index.html").response)
            let etag = try #require(page.headers["ETag"])
            #expect(etag == "\"\(Digests.sha256Hex(text("page")))\"")
            #expect(page.headers["Cache-Control"] == "no-cache")
            #expect(page.headers["Accept-Ranges"] == "bytes")
            #expect(page.headers["Content-Length"] == "4")
            #expect(await engine.get("satchel://m.shop.com/app.js").response?.headers["Cache-Control"] == "max-age=600")
            let notModified = try #require(await engine.get("satchel://m.shop.com/index.html", ["If-None-Match": "W/" + etag]).response)
            #expect(notModified.status == 304)
            #expect(notModified.headers["ETag"] == etag)
            #expect(try await notModified.body.collect().isEmpty)
            #expect(await engine.get("satchel://m.shop.com/index.html", ["If-None-Match": "\"other\""]).response?.status == 200)
            #expect(await engine.get("satchel://m.shop.com/index.html", ["If-None-Match": "*"], method: "HEAD").response?.status == 304)
        }
    }

    @Test("Range: 206 with an inclusive Content-Range, suffix and open ranges, clamping, 416, If-Range, several ranges")
    func ranges() async throws {
        try await withTemporaryFolder { folder async throws in
            let data = bytes(200_000)
            let engine = try engine(folder, [makePackage(in: folder, files: ["index.html": text("x"), "media/clip.mp4": data, "small.txt": text("0123456789")])])
            let url = "satchel://m.shop.com/media/clip.mp4"
            func get(_ range: String, _ extra: HTTPHeaders = HTTPHeaders()) async throws -> (Int, String?, String?, [UInt8]) {
                var headers = extra
                headers.add("Range", range)
                let response = try #require(await engine.get(url, headers).response)
                return (response.status, response.headers["Content-Range"], response.headers["Content-Length"], try await response.body.collect())
            }
            var (status, contentRange, length, body) = try await get("bytes=0-499")
            #expect((status, contentRange, length) == (206, "bytes 0-499/200000", "500"))
            #expect(body == Array(data[0...499]))
            (status, contentRange, _, body) = try await get("bytes=-500")
            #expect((status, contentRange) == (206, "bytes 199500-199999/200000"))
            #expect(body == Array(data[199_500...]))
            (status, contentRange, _, body) = try await get("bytes=100000-")
            #expect((status, contentRange) == (206, "bytes 100000-199999/200000"))
            #expect(body == Array(data[100_000...]))
            (status, contentRange, _, body) = try await get("bytes=199990-999999")
            #expect((status, contentRange) == (206, "bytes 199990-199999/200000"))
            #expect(body.count == 10)
            (status, contentRange, length, body) = try await get("bytes=200000-")
            #expect((status, contentRange, length) == (416, "bytes */200000", "0"))
            #expect(body.isEmpty)
            (status, contentRange, _, body) = try await get("bytes=0-0,-1")
            #expect((status, contentRange) == (200, nil))
            #expect(body == data)
            (status, _, _, _) = try await get("bytes=junk")
            #expect(status == 200)
            let etag = try #require(await engine.get(url).response?.headers["ETag"])
            (status, contentRange, _, _) = try await get("bytes=10-19", ["If-Range": etag])
            #expect((status, contentRange) == (206, "bytes 10-19/200000"))
            (status, contentRange, _, _) = try await get("bytes=10-19", ["If-Range": "\"stale\""])
            #expect((status, contentRange) == (200, nil))
            // Cached small files take the same path.
            let small = try #require(await engine.get("satchel://m.shop.com/small.txt", ["Range": "bytes=2-4"]).response)
            #expect(small.status == 206)
            #expect(try await small.body.collect() == text("234"))
        }
    }

    @Test("HEAD has the GET headers and no body; Range is ignored for HEAD")
    func head() async throws {
        try await withTemporaryFolder { folder async throws in
            let engine = try engine(folder, [makePackage(in: folder, files: ["index.html": text("hello")])])
            let response = try #require(await engine.get("satchel://m.shop.com/index.html", ["Range": "bytes=0-1"], method: "HEAD").response)
            #expect(response.status == 200)
            #expect(response.headers["Content-Length"] == "5")
            #expect(response.headers["Content-Type"] == "text/html; charset=utf-8")
            #expect(try await response.body.collect().isEmpty)
        }
    }

    @Test("OPTIONS and CORS follow the configured policy")
    func cors() async throws {
        try await withTemporaryFolder { folder async throws in
            let package = try makePackage(in: folder, files: ["index.html": text("x"), "data.json": text("{}")])
            let closed = try engine(folder, [package])
            #expect(await closed.get("satchel://m.shop.com/data.json", ["Origin": "https://a.example"]).response?.headers["Access-Control-Allow-Origin"] == nil)
            let open = try engine(folder, [package], EngineConfiguration(cors: .anyOrigin))
            #expect(await open.get("satchel://m.shop.com/data.json").response?.headers["Access-Control-Allow-Origin"] == "*")
            let listed = try engine(folder, [package], EngineConfiguration(cors: .origins(["https://a.example"])))
            let allowed = try #require(await listed.get("satchel://m.shop.com/data.json", ["Origin": "https://a.example"]).response)
            #expect(allowed.headers["Access-Control-Allow-Origin"] == "https://a.example")
            #expect(allowed.headers["Vary"] == "Origin")
            #expect(await listed.get("satchel://m.shop.com/data.json", ["Origin": "https://evil.example"]).response?.headers["Access-Control-Allow-Origin"] == nil)
            let preflight = try #require(await listed.get(
                "satchel://m.shop.com/data.json",
                ["Origin": "https://a.example", "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "x-token"],
                method: "OPTIONS").response)
            #expect(preflight.status == 204)
            #expect(preflight.headers["Access-Control-Allow-Methods"] == "GET, HEAD, OPTIONS")
            #expect(preflight.headers["Access-Control-Allow-Headers"] == "x-token")
            let plainOptions = try #require(await closed.get("satchel://m.shop.com/data.json", method: "OPTIONS").response)
            #expect(plainOptions.status == 204)
            #expect(plainOptions.headers["Allow"] == "GET, HEAD, OPTIONS")
        }
    }

    @Test("nested prefixes across packages: the longest prefix answers")
    func nested() async throws {
        try await withTemporaryFolder { folder async throws in
            let engine = try engine(folder, [
                makePackage(in: folder, id: "shop", prefix: "/", files: ["index.html": text("shop"), "admin/index.html": text("shadowed")]),
                makePackage(in: folder, id: "admin", prefix: "/admin/", files: ["index.html": text("admin")]),
                makePackage(in: folder, id: "cdn", hosts: ["*.shop.com"], prefix: "/", files: ["index.html": text("cdn")]),
            ], EngineConfiguration(diagnosticHeader: true))
            #expect(try await engine.get("satchel://m.shop.com/").response?.body.collect() == text("shop"))
            #expect(try await engine.get("satchel://m.shop.com/admin/").response?.body.collect() == text("admin"))
            #expect(await engine.get("satchel://m.shop.com/admin/").response?.headers["X-Satchel-Source"] == "admin@1.0.0 index.html")
            #expect(try await engine.get("satchel://img.shop.com/").response?.body.collect() == text("cdn"))
        }
    }

    @Test("pinned at launch: a new activation waits for the next engine; immediate: the next request sees it")
    func activationModes() async throws {
        try await withTemporaryFolder { folder async throws in
            let v1 = try makePackage(in: folder, version: "1.0.0", files: ["index.html": text("one")])
            let v2 = try makePackage(in: folder, version: "2.0.0", files: ["index.html": text("two")])
            let pinnedSource = FolderSource([v1])
            let pinned = try ResourceEngine(source: pinnedSource)
            let immediateSource = FolderSource([v1])
            let immediate = try ResourceEngine(source: immediateSource, configuration: EngineConfiguration(activation: .immediate))
            let inFlight = try #require(await immediate.get("satchel://m.shop.com/index.html").response)
            pinnedSource.replace([v2])
            immediateSource.replace([v2])
            #expect(try await pinned.get("satchel://m.shop.com/").response?.body.collect() == text("one"))
            #expect(try await immediate.get("satchel://m.shop.com/").response?.body.collect() == text("two"))
            #expect(try await inFlight.body.collect() == text("one"))
            #expect(immediateSource.pins == [["shop@1.0.0"], ["shop@2.0.0"]])
            #expect(pinnedSource.pins == [["shop@1.0.0"]])
        }
    }

    @Test("large files are file regions read in chunks of at most 1 MiB, never whole")
    func fileRegions() async throws {
        try await withTemporaryFolder { folder async throws in
            let data = bytes(3 << 20 | 123)
            let engine = try engine(folder, [makePackage(in: folder, files: ["index.html": text("x"), "big.bin": data])])
            let response = try #require(await engine.get("satchel://m.shop.com/big.bin").response)
            guard case .file(let region) = response.body else { Issue.record("expected a file region"); return }
            #expect(region.length == Int64(data.count))
            var sizes: [Int] = []
            var collected: [UInt8] = []
            for try await chunk in region.chunks() {
                sizes.append(chunk.count)
                collected += chunk
            }
            #expect(sizes.allSatisfy { $0 <= 1 << 20 })
            #expect(sizes.count == 4)
            #expect(collected == data)
        }
    }
}

@Suite("The quick check for Satchel's query parameters")
struct QueryNameTests {
    @Test("a parameter named exactly so, anywhere in the query and not in the fragment", arguments: [
        ("https://h/x?POST_DATA=a", true), ("https://h/x?a=1&SATCHEL_TOKEN=t", true), ("https://h/x?SATCHEL_BODY_ID", true),
        ("https://h/x?XPOST_DATA=a", false), ("https://h/x?a=POST_DATA", false), ("https://h/x#POST_DATA=1", false),
        ("https://h/x?a=1#&POST_DATA=1", false), ("https://h/x", false), ("https://h/x?", false), ("https://h/POST_DATA?b=2", false),
    ])
    func names(url: String, expected: Bool) {
        #expect(ResourceEngine.query(of: url, namesAny: BodyChannels().allParameters) == expected, "\(url)")
    }
}
