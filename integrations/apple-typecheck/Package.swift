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
        .target(name: "UIKit"),
        // docs/apple.md's background refresh (AppleGuide.swift): BackgroundTasks as Apple documents it.
        .target(name: "BackgroundTasks"),
        .target(name: "WebKit", dependencies: ["UIKit"]),
        // The whole device side, from the repository's own sources: what an iOS app links.
        .systemLibrary(name: "CZlib"),
        .target(name: "SatchelPlatform", resources: [.copy("PrivacyInfo.xcprivacy")]),
        .target(name: "SatchelCore", dependencies: [
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers"),
        ]),
        .target(name: "SatchelArchive", dependencies: ["CZlib", "SatchelCore", "SatchelPlatform"]),
        .target(name: "SatchelDiff", dependencies: ["CZlib"]),
        .target(name: "SatchelBundle", dependencies: [
            "SatchelCore", "SatchelArchive", "SatchelPlatform", .product(name: "Crypto", package: "swift-crypto"),
        ]),
        .target(name: "SatchelStore", dependencies: ["SatchelCore", "SatchelArchive", "SatchelBundle", "SatchelPlatform"]),
        .target(name: "SatchelHTTP", dependencies: ["SatchelCore"]),
        .target(name: "SatchelCache", dependencies: ["SatchelHTTP", "SatchelCore", "SatchelPlatform"]),
        .target(name: "SatchelUpdate", dependencies: [
            "SatchelStore", "SatchelBundle", "SatchelArchive", "SatchelDiff", "SatchelHTTP", "SatchelCore", "SatchelPlatform",
        ]),
        .target(name: "SatchelEngine", dependencies: ["SatchelHTTP", "SatchelCore"], resources: [.copy("Hook")]),
        .target(name: "SatchelHost", dependencies: ["SatchelEngine", "SatchelHTTP", "SatchelCore"]),
        .target(name: "SatchelWebKit", dependencies: ["SatchelHost", "SatchelEngine", "SatchelHTTP", "SatchelCore", "SatchelPlatform", "WebKit"]),
        // integrations/apple-device-tests: the XCTest file an app team runs on a device, compiled here only.
        .target(name: "SatchelDeviceTests", dependencies: ["SatchelWebKit", "SatchelHost", "WebKit"]),
        .executableTarget(name: "apple-typecheck", dependencies: [
            "SatchelWebKit", "SatchelHost", "WebKit", "SatchelUpdate", "SatchelStore", "SatchelCache", "SatchelBundle", "SatchelArchive",
            "SatchelDiff", "BackgroundTasks",
        ]),
    ]
)
