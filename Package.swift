// swift-tools-version: 6.1
import PackageDescription

// Layers, bottom to top (each imports only those below it). Device side (what an app links: no system library but
// zlib, checked by tools/test): SatchelPlatform, SatchelCore, SatchelArchive, SatchelBundle, SatchelStore, SatchelHTTP,
// SatchelCache, SatchelEngine, SatchelHost, SatchelWebKit, SatchelUpdate, SatchelDiff. Publishing side (CI and servers): SatchelPublishing
// (libarchive), SatchelNetwork, SatchelServer, SatchelOptions, SatchelReportPage, satchel.
//   SatchelPlatform the one home of platform calls (file times, read/write loops, flushing, syncfs, flock, the app's
//                   code-signature seal) and the privacy manifest Apple asks of an SDK that makes them
//   SatchelCore     pure model and rules, no I/O
//   SatchelArchive  zip read and written with Satchel's own code on zlib, gzip (above Core: its calendar)
//   SatchelBundle   the bundle format as a device reads it: the streaming verifier, in-place bundles, the assembled delta
//   SatchelDiff     a per-file binary diff applied on the device (bounded memory, typed refusals; zlib only); its
//                   encoder is SatchelPublishing's FileDiffEncoder
//   SatchelPublishing  libarchive behind Swift types; pack (zip, tar.gz), diff, the release folder's objects and patches
//   SatchelStore    installed packages on disk: install, activate, trial, rollback, gc
//   SatchelHTTP     HTTP messages and bodies, and the one network seam: NetworkFetcher, its timeouts, errors and
//                   policy (above Core only)
//   SatchelEngine   URL -> package file -> HTTP response, strategies, the network fallback (above HTTP and Core;
//                   the store plugs in as a PackageSource)
//   SatchelNetwork  a NetworkFetcher: a small HTTP/1.1 client on SwiftNIO (above HTTP)
//   SatchelServer   satchel serve: the request layer over HTTP/1.1 (above SatchelHost and the network module)
//   SatchelCache    the HTTP cache (RFC 9111) on disk, a NetworkFetcher around another (above HTTP)
//   SatchelHost     the request layer every host shares (RequestLayer, HostConfiguration: endpoints, the hook, cookies,
//                   redirects as pages) and the container parts both WebKit adapters use: recovery, the trial judge
//                   (above the engine)
//   SatchelWebKit   the Apple adapter and URLSessionFetcher (above SatchelHost, which it re-exports)
//   SatchelUpdate   catalog, resumable downloads, delta install: above the store and the HTTP seam
//   SatchelOptions  command-line options shared by every engine host (the CLI, the WebKitGTK viewer)
//   SatchelReportPage  the rollout report page (`satchel rollout report`): HTML and SVG from rollout status (above Core)
//   satchel         the CLI
let package = Package(
    name: "Satchel",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .library(name: "SatchelCore", targets: ["SatchelCore"]),
        .library(name: "SatchelArchive", targets: ["SatchelArchive"]),
        .library(name: "SatchelBundle", targets: ["SatchelBundle"]),
        .library(name: "SatchelDiff", targets: ["SatchelDiff"]),
        .library(name: "SatchelPublishing", targets: ["SatchelPublishing"]),
        .library(name: "SatchelStore", targets: ["SatchelStore"]),
        .library(name: "SatchelHTTP", targets: ["SatchelHTTP"]),
        .library(name: "SatchelCache", targets: ["SatchelCache"]),
        .library(name: "SatchelEngine", targets: ["SatchelEngine"]),
        .library(name: "SatchelHost", targets: ["SatchelHost"]),
        .library(name: "SatchelWebKit", targets: ["SatchelWebKit"]),
        .library(name: "SatchelUpdate", targets: ["SatchelUpdate"]),
        .library(name: "SatchelNetwork", targets: ["SatchelNetwork"]),
        .library(name: "SatchelServer", targets: ["SatchelServer"]),
        .library(name: "SatchelOptions", targets: ["SatchelOptions"]),
        .executable(name: "satchel", targets: ["satchel"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-http-structured-headers", from: "1.7.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CArchive",
            pkgConfig: "libarchive",
            providers: [.apt(["libarchive-dev"]), .brew(["libarchive"])]
        ),
        // zlib is in every Apple SDK and on every Linux: the module map links "z" and nothing is looked up with
        // pkg-config (which runs for the build Mac, not the target, and could leak its paths into an iOS build).
        .systemLibrary(name: "CZlib"),
        // The platform calls and the privacy manifest; no dependencies.
        .target(name: "SatchelPlatform", resources: [.copy("PrivacyInfo.xcprivacy")]),
        .target(
            name: "SatchelCore",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers"),
            ]
        ),
        .target(
            name: "SatchelArchive",
            dependencies: ["CZlib", "SatchelCore", "SatchelPlatform"]
        ),
        .target(
            name: "SatchelBundle",
            dependencies: [
                "SatchelCore", "SatchelArchive", "SatchelPlatform",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // A per-file binary diff as a device applies it: copies from the file it replaces and from itself, literals,
        // streams inflated with zlib; memory bounded before any work (docs/formats.md#diffs).
        .target(name: "SatchelDiff", dependencies: ["CZlib"]),
        // The publishing side's archives: libarchive (tar.gz, and the packer's zip), packing, deltas, the release folder,
        // and the file diffs' encoder (deflate through zlib).
        .target(
            name: "SatchelPublishing",
            dependencies: [
                "CArchive", "CZlib", "SatchelBundle", "SatchelArchive", "SatchelCore", "SatchelPlatform", "SatchelDiff",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "SatchelStore",
            dependencies: ["SatchelCore", "SatchelArchive", "SatchelBundle", "SatchelPlatform"]
        ),
        // HTTP messages and the network seam, shared by the engine, every fetcher and the updater.
        .target(name: "SatchelHTTP", dependencies: ["SatchelCore"]),
        // The HTTP cache (RFC 9111) on disk: a NetworkFetcher that wraps another; its rules are SatchelCore's.
        .target(name: "SatchelCache", dependencies: ["SatchelHTTP", "SatchelCore", "SatchelPlatform"]),
        // Above SatchelHTTP and SatchelCore only: it reads packages through SatchelCore's PackageSource, which the
        // store implements, and fetches through SatchelHTTP's NetworkFetcher, which SatchelNetwork implements.
        .target(name: "SatchelEngine", dependencies: ["SatchelHTTP", "SatchelCore"], resources: [.copy("Hook")]),
        // The request layer between the loader and every host (the server, both WebKit adapters), and the
        // platform-neutral container parts: the scheme-task driver, the cookie jar, the bridge, white-screen recovery.
        .target(name: "SatchelHost", dependencies: ["SatchelEngine", "SatchelHTTP", "SatchelCore"]),
        // The WKURLSchemeHandler and the web views on Apple platforms, and URLSessionFetcher (their HTTP stack; tested
        // on Linux through FoundationNetworking).
        .target(name: "SatchelWebKit", dependencies: ["SatchelHost", "SatchelEngine", "SatchelHTTP", "SatchelCore", "SatchelPlatform"]),
        // The updater: catalog, resumable downloads, delta install through the store. It downloads through the
        // NetworkFetcher seam, so an app gives the updater and the engine one HTTP stack.
        .target(name: "SatchelUpdate", dependencies: ["SatchelStore", "SatchelBundle", "SatchelArchive", "SatchelDiff", "SatchelHTTP", "SatchelCore", "SatchelPlatform"]),
        // The network fallback on SwiftNIO: a NetworkFetcher with its own pooled HTTP/1.1 client (NIOSSL for https)
        // that shares the server's event loops, keeps header fields as sent, and reads the upstream only as fast as
        // the consumer takes it.
        .target(
            name: "SatchelNetwork",
            dependencies: [
                "SatchelHTTP", "SatchelCore",
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ]
        ),
        // The local server: the engine over HTTP/1.1 on SwiftNIO (origin and forward-proxy modes).
        .target(
            name: "SatchelServer",
            dependencies: [
                "SatchelHost", "SatchelEngine", "SatchelHTTP", "SatchelCache", "SatchelCore", "SatchelStore", "SatchelNetwork", "SatchelPlatform",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The command-line options every engine host shares (`satchel` and the WebKitGTK viewer in integrations/):
        // a store, its keys and trial limit, the upstream allow-list and overrides.
        .target(
            name: "SatchelOptions",
            dependencies: [
                "SatchelCore", "SatchelStore", "SatchelEngine", "SatchelHTTP", "SatchelCache",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The rollout report page (`satchel rollout report`): a pure value -> HTML renderer over SatchelCore's rollout
        // counts, apart from the CLI so the page is tested without running it.
        .target(name: "SatchelReportPage", dependencies: ["SatchelCore"]),
        // Device reports read as a stream for `satchel rollout`: files plain or gzip (zlib, any number of members) and
        // the state kept between runs, so an hourly run reads only what is new.
        .target(name: "SatchelReports", dependencies: ["SatchelCore", "CZlib"]),
        .executableTarget(
            name: "satchel",
            dependencies: [
                "SatchelCore", "SatchelBundle", "SatchelPublishing", "SatchelStore", "SatchelEngine", "SatchelHTTP", "SatchelCache",
                "SatchelServer", "SatchelUpdate", "SatchelOptions", "SatchelNetwork", "SatchelPlatform", "SatchelReportPage", "SatchelReports",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Scratch folders and process helpers shared by the test targets.
        .target(name: "SatchelTestSupport", path: "Tests/SatchelTestSupport", exclude: ["origin.py"]),
        // Benchmarks that must link the library in a release build (tools/bench-engine, tools/bench-diff).
        .executableTarget(name: "satchel-bench", dependencies: ["SatchelEngine", "SatchelHTTP", "SatchelCore", "SatchelDiff", "SatchelPublishing"]),
        .executableTarget(
            name: "satchel-fleet",
            dependencies: [
                "SatchelUpdate", "SatchelStore", "SatchelNetwork", "SatchelOptions", "SatchelCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        .executableTarget(
            name: "nio-floor-proxy",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]),
        .testTarget(name: "SatchelCoreTests", dependencies: ["SatchelCore", "SatchelTestSupport"]),
        .testTarget(name: "SatchelReportPageTests", dependencies: ["SatchelReportPage", "SatchelCore"]),
        .testTarget(name: "SatchelDiffTests", dependencies: ["SatchelDiff", "SatchelPublishing", "SatchelTestSupport"]),
        .testTarget(name: "SatchelArchiveTests", dependencies: ["SatchelArchive", "SatchelPublishing", "SatchelPlatform", "SatchelTestSupport"]),
        .testTarget(
            name: "SatchelPublishingTests",
            dependencies: ["SatchelPublishing", "SatchelBundle", "SatchelArchive", "SatchelCore", "SatchelTestSupport"]),
        .testTarget(
            name: "SatchelBundleTests",
            dependencies: ["SatchelBundle", "SatchelPublishing", "SatchelCore", "SatchelArchive", "SatchelTestSupport"]),
        .testTarget(
            name: "SatchelStoreTests",
            dependencies: ["SatchelStore", "SatchelBundle", "SatchelPublishing", "SatchelCore", "SatchelArchive", "SatchelTestSupport"]),
        // A child process for the engine's memory test (peak RSS must be measured in a fresh process).
        .executableTarget(name: "SatchelEngineProbe", dependencies: ["SatchelEngine", "SatchelHTTP", "SatchelCore"], path: "Tests/SatchelEngineProbe"),
        .testTarget(
            name: "SatchelEngineTests",
            // SatchelWebKit for URLSessionFetcher: the loader's fallback is tested through a real HTTP stack.
            dependencies: [
                "SatchelEngine", "SatchelHTTP", "SatchelCore", "SatchelStore", "SatchelBundle", "SatchelPublishing", "SatchelTestSupport",
                "SatchelEngineProbe", "SatchelWebKit", "SatchelPlatform",
            ],
            exclude: ["Resources"]),
        .testTarget(name: "SatchelHTTPTests", dependencies: ["SatchelHTTP", "SatchelCore"]),
        .testTarget(name: "SatchelCacheTests", dependencies: ["SatchelCache", "SatchelHTTP", "SatchelNetwork", "SatchelCore", "SatchelTestSupport"]),
        .testTarget(name: "SatchelHostTests", dependencies: ["SatchelHost", "SatchelWebKit", "SatchelEngine", "SatchelHTTP", "SatchelCore", "SatchelTestSupport"]),
        .testTarget(name: "SatchelWebKitTests", dependencies: ["SatchelWebKit", "SatchelEngine", "SatchelHTTP", "SatchelCore", "SatchelTestSupport"]),
        // A child process for the network fallback's memory test (peak RSS must be measured in a fresh process).
        .executableTarget(name: "SatchelNetworkProbe", dependencies: ["SatchelNetwork", "SatchelEngine", "SatchelHTTP", "SatchelCore"], path: "Tests/SatchelNetworkProbe"),
        .testTarget(
            name: "SatchelNetworkTests",
            dependencies: [
                "SatchelNetwork", "SatchelHTTP", "SatchelCore", "SatchelTestSupport", "SatchelNetworkProbe",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]),
        .testTarget(
            name: "SatchelServerTests",
            dependencies: [
                "SatchelServer", "SatchelEngine", "SatchelHTTP", "SatchelCache", "SatchelStore", "SatchelBundle", "SatchelPublishing", "SatchelCore",
                "SatchelTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "SatchelUpdateTests",
            // SatchelHost and SatchelEngine for the launch that shows pages: an app process that updates and one that shows pages.
            dependencies: [
                "SatchelUpdate", "SatchelStore", "SatchelBundle", "SatchelPublishing", "SatchelDiff", "SatchelArchive", "SatchelHTTP", "SatchelCore",
                "SatchelTestSupport", "SatchelHost", "SatchelEngine",
            ]),
        // The documentation as tests: links resolve, the README's example compiles, the formats spec names every field.
        .testTarget(
            name: "DocumentationTests",
            dependencies: ["SatchelCore", "SatchelStore", "SatchelEngine", "SatchelHTTP", "SatchelCache", "SatchelNetwork", "SatchelUpdate"]),
        // Runs the built `satchel` binary; depending on the target makes `swift test` build it first.
        .testTarget(name: "SatchelCLITests", dependencies: ["satchel", "SatchelTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
