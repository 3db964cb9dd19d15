// swift-tools-version: 6.1
import PackageDescription

// The WebKitGTK adapter and viewer, kept out of the core package's build graph: a plain `swift build` of Satchel
// never needs GTK (about 700 MB of system packages). This package depends on the core by path.
//
//   CWebKitGTK         webkitgtk-6.0 (GTK 4, GLib, libsoup 3) as a system library
//   CSatchelGLib       what Swift cannot write against GObject: a GInputStream subclass fed from Swift, signal
//                      connection (g_signal_connect is a macro), type casts
//   SatchelWebKitGTK   the adapter: WebKitURISchemeRequest -> SchemeTaskDriver -> streaming response
//   satchel-webview    a WebKit window on a store, for people and for tools/webkit-test
let package = Package(
    name: "SatchelWebKitGTK",
    products: [
        .library(name: "SatchelWebKitGTK", targets: ["SatchelWebKitGTK"]),
        .executable(name: "satchel-webview", targets: ["satchel-webview"]),
    ],
    dependencies: [
        .package(name: "Satchel", path: "../.."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(name: "CWebKitGTK", pkgConfig: "webkitgtk-6.0", providers: [.apt(["libwebkitgtk-6.0-dev"])]),
        .target(name: "CSatchelGLib", dependencies: ["CWebKitGTK"]),
        .target(
            name: "SatchelWebKitGTK",
            dependencies: [
                "CWebKitGTK", "CSatchelGLib",
                .product(name: "SatchelWebKit", package: "Satchel"),
                .product(name: "SatchelHost", package: "Satchel"),
                .product(name: "SatchelEngine", package: "Satchel"),
                .product(name: "SatchelHTTP", package: "Satchel"),
                .product(name: "SatchelCache", package: "Satchel"),
                .product(name: "SatchelCore", package: "Satchel"),
            ]),
        .executableTarget(
            name: "satchel-webview",
            dependencies: [
                "SatchelWebKitGTK", "CWebKitGTK", "CSatchelGLib",
                .product(name: "SatchelWebKit", package: "Satchel"),
                .product(name: "SatchelHost", package: "Satchel"),
                .product(name: "SatchelEngine", package: "Satchel"),
                .product(name: "SatchelHTTP", package: "Satchel"),
                .product(name: "SatchelCore", package: "Satchel"),
                .product(name: "SatchelStore", package: "Satchel"),
                .product(name: "SatchelOptions", package: "Satchel"),
                .product(name: "SatchelNetwork", package: "Satchel"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        .testTarget(
            name: "SatchelWebKitGTKTests",
            dependencies: [
                "SatchelWebKitGTK", "CWebKitGTK", "CSatchelGLib",
                .product(name: "SatchelWebKit", package: "Satchel"),
                .product(name: "SatchelHost", package: "Satchel"),
                .product(name: "SatchelEngine", package: "Satchel"),
                .product(name: "SatchelHTTP", package: "Satchel"),
                .product(name: "SatchelCore", package: "Satchel"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
