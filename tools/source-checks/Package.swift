// swift-tools-version:6.1
// Its own package so that swift-syntax never enters the core package's build graph.
import PackageDescription

let package = Package(
    name: "source-checks",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "source-check", targets: ["source-check"]),
    ],
    dependencies: [
        .package(url: "https://github.com/swiftlang/swift-syntax", exact: "603.0.1"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // libIndexStore's C interface as function-pointer types (the library is opened at run time).
        .target(name: "CIndexStore"),
        .target(
            name: "SourceChecks",
            dependencies: [
                "CIndexStore",
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftParser", package: "swift-syntax"),
                .product(name: "SwiftIfConfig", package: "swift-syntax"),
                .product(name: "SwiftDiagnostics", package: "swift-syntax"),
            ]
        ),
        .executableTarget(
            name: "source-check",
            dependencies: [
                "SourceChecks",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "SourceChecksTests",
            dependencies: ["SourceChecks"]
        ),
    ]
)
