// swift-tools-version:6.0
// Type-checks the Apple adapter on Linux. No Mac is at hand, so `WebKit` here is a stand-in: declarations of the parts
// of WebKit's (and Foundation's Apple-only) public API the adapter uses, as Apple documents them, with bodies that
// are never run. SatchelWebKit and the modules below it are the repository's own sources (symbolic links), compiled
// with that stand-in in reach, so `#if canImport(WebKit)` is true and every Apple-only file is type-checked.
// `swift build --package-path integrations/apple-typecheck` is the check (tools/test runs it); the executable names
// every Apple-only type, so the check fails if those files were left out. What it proves and
// what it cannot: docs/testing.md#apple-type-check.
import PackageDescription

let package = Package(
    name: "SatchelAppleTypeCheck",
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-http-structured-headers", from: "1.7.0"),
    ],
    targets: [
        .target(name: "WebKit"),
        .target(name: "SatchelCore", dependencies: [
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers"),
        ]),
        .target(name: "SatchelHTTP", dependencies: ["SatchelCore"]),
        .target(name: "SatchelEngine", dependencies: ["SatchelHTTP", "SatchelCore"]),
        .target(name: "SatchelWebKit", dependencies: ["SatchelEngine", "SatchelHTTP", "SatchelCore", "WebKit"]),
        .executableTarget(name: "apple-typecheck", dependencies: ["SatchelWebKit", "WebKit"]),
    ]
)
