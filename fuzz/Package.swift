// swift-tools-version: 6.1
import PackageDescription

// libFuzzer targets for Satchel's parsers, built apart from the core package (every target is an executable
// whose main comes from libFuzzer): `tools/fuzz --list`, `tools/fuzz <target> --seconds N`. Built with
// `-sanitize=fuzzer,address` into .build-fuzz; the seed corpora are in fuzz/corpus/<target>/.
let package = Package(
    name: "SatchelFuzz",
    dependencies: [.package(name: "Satchel", path: "..")],
    targets: [
        .target(name: "FuzzDriver", path: "Targets/FuzzDriver"),
        .executableTarget(name: "url-path", dependencies: ["FuzzDriver", .product(name: "SatchelCore", package: "Satchel")], path: "Targets/url-path"),
        .executableTarget(name: "range", dependencies: ["FuzzDriver", .product(name: "SatchelCore", package: "Satchel")], path: "Targets/range"),
        .executableTarget(name: "body-restorer", dependencies: ["FuzzDriver", .product(name: "SatchelCore", package: "Satchel")], path: "Targets/body-restorer"),
        .executableTarget(name: "manifest", dependencies: ["FuzzDriver", .product(name: "SatchelCore", package: "Satchel")], path: "Targets/manifest"),
        .executableTarget(name: "catalog", dependencies: ["FuzzDriver", .product(name: "SatchelCore", package: "Satchel")], path: "Targets/catalog"),
        .executableTarget(name: "trust", dependencies: ["FuzzDriver", .product(name: "SatchelCore", package: "Satchel")], path: "Targets/trust"),
        .executableTarget(
            name: "zip-reader",
            dependencies: ["FuzzDriver", .product(name: "SatchelArchive", package: "Satchel"), .product(name: "SatchelBundle", package: "Satchel")],
            path: "Targets/zip-reader"),
        .executableTarget(
            name: "file-diff",
            dependencies: ["FuzzDriver", .product(name: "SatchelDiff", package: "Satchel"), .product(name: "SatchelPublishing", package: "Satchel")],
            path: "Targets/file-diff"),
        .executableTarget(
            name: "step",
            dependencies: ["FuzzDriver", .product(name: "SatchelBundle", package: "Satchel"), .product(name: "SatchelCore", package: "Satchel")],
            path: "Targets/step"),
        .executableTarget(name: "zip-directory", dependencies: ["FuzzDriver", .product(name: "SatchelArchive", package: "Satchel")], path: "Targets/zip-directory"),
        .executableTarget(
            name: "request-edge",
            dependencies: [
                "FuzzDriver", .product(name: "SatchelServer", package: "Satchel"), .product(name: "SatchelEngine", package: "Satchel"),
                .product(name: "SatchelHTTP", package: "Satchel"),
                .product(name: "SatchelStore", package: "Satchel"), .product(name: "SatchelCore", package: "Satchel"),
                .product(name: "SatchelBundle", package: "Satchel"), .product(name: "SatchelPublishing", package: "Satchel"),
            ],
            path: "Targets/request-edge"),
    ],
    swiftLanguageModes: [.v6]
)
