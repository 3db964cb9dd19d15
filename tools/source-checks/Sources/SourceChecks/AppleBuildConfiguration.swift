import SwiftIfConfig
import SwiftSyntax

/// An Apple target as `#if` sees it, so that the code a Mac build would compile can be found on Linux.
///
/// It answers only the questions `#if` asks (os, arch, canImport, ...); it knows nothing of types or
/// declarations, so "active" means "the compiler would parse and type-check this", not "this compiles".
public struct AppleBuildConfiguration: BuildConfiguration, Sendable {
    /// The name a finding is reported under, e.g. "iOS (arm64)".
    public let name: String
    let operatingSystems: Set<String>
    let architecture: String
    let platformModules: Set<String>

    /// iPhone hardware (not the simulator): the configuration an App Store build compiles.
    public static let iOS = AppleBuildConfiguration(
        name: "iOS (arm64)", operatingSystems: ["iOS"], architecture: "arm64", platformModules: ["UIKit"])
    /// macOS is built for both architectures (a universal binary), and `#if arch(...)` may pick different
    /// code for each, so each is its own configuration.
    public static let macOSArm64 = AppleBuildConfiguration(
        name: "macOS (arm64)", operatingSystems: ["macOS", "OSX"], architecture: "arm64", platformModules: ["AppKit"])
    public static let macOSX86_64 = AppleBuildConfiguration(
        name: "macOS (x86_64)", operatingSystems: ["macOS", "OSX"], architecture: "x86_64", platformModules: ["AppKit"])

    /// The platform whose deployment target and availability apply to what this configuration compiles.
    public var platform: ApplePlatform { operatingSystems.contains("iOS") ? .iOS : .macOS }

    /// Every configuration the platform scan evaluates.
    public static let all: [AppleBuildConfiguration] = [.iOS, .macOSArm64, .macOSX86_64]

    /// Custom `-D` conditions (`#if DEBUG`): none are set, as in a release build.
    public var customConditions: Set<String> = []

    /// The oldest compiler the core package supports (`swift-tools-version` 6.1), so `#if swift(>=6.2)` code
    /// that a 6.1 compiler skips is skipped here too.
    public var swiftVersion = VersionTuple(6, 1)

    // MARK: canImport, in one place

    /// Modules that exist on every Apple platform this scan models.
    static let appleModules: Set<String> = [
        "Darwin", "Foundation", "Dispatch", "WebKit", "Security", "CryptoKit", "os", "ObjectiveC",
        "CoreFoundation", "Network", "Combine", "System", "Synchronization", "UniformTypeIdentifiers",
        "XCTest", "Testing",
    ]
    /// Modules that exist only on Linux, Android, Windows or WASI (or, for FoundationEssentials/FoundationXML,
    /// only where swift-corelibs-foundation is the Foundation): `canImport` of these is false on Apple targets.
    static let nonAppleModules: Set<String> = [
        "Glibc", "SwiftGlibc", "Musl", "FoundationNetworking", "FoundationXML", "FoundationEssentials",
        "Android", "Bionic", "WinSDK", "ucrt", "CRT", "WASILibc", "wasi_pthread",
    ]
    /// Every platform UI framework: only the one in `platformModules` is importable.
    static let uiModules: Set<String> = ["UIKit", "AppKit", "WatchKit"]

    /// canImport as an Apple SDK answers it. Anything not named above (the package's own modules, module
    /// maps such as CZlib and CArchive, dependencies) is assumed importable: the package builds them for
    /// every platform.
    public func canImport(module: String) -> Bool {
        if Self.nonAppleModules.contains(module) { return false }
        if Self.uiModules.contains(module) { return platformModules.contains(module) }
        return true
    }

    // MARK: BuildConfiguration

    public func canImport(importPath: [(TokenSyntax, String)], version: CanImportVersion) throws -> Bool {
        // `canImport(Darwin.C)` asks about the top-level module.
        guard let top = importPath.first?.1 else { return false }
        return canImport(module: top)
    }

    public func isCustomConditionSet(name: String) throws -> Bool { customConditions.contains(name) }

    /// A compiler recent enough for the package has the features and attributes its code tests for; code
    /// behind `hasFeature` is therefore scanned rather than silently skipped.
    public func hasFeature(name: String) throws -> Bool { true }
    public func hasAttribute(name: String) throws -> Bool { true }

    public func isActiveTargetOS(name: String) throws -> Bool { operatingSystems.contains(name) }
    public func isActiveTargetArchitecture(name: String) throws -> Bool { name == architecture }
    /// A device build: not `simulator`, not `macCatalyst`.
    public func isActiveTargetEnvironment(name: String) throws -> Bool { false }
    /// Apple platforms have the Objective-C runtime.
    public func isActiveTargetRuntime(name: String) throws -> Bool { name == "_ObjC" }
    /// arm64e is not what App Store apps build for.
    public func isActiveTargetPointerAuthentication(name: String) throws -> Bool { false }
    public func isActiveTargetObjectFormat(name: String) throws -> Bool { name == "MachO" }

    public var targetPointerBitWidth: Int { 64 }
    public var targetAtomicBitWidths: [Int] { architecture == "arm64" ? [8, 16, 32, 64, 128] : [8, 16, 32, 64] }
    public var endianness: Endianness { .little }
    public var languageVersion: VersionTuple { swiftVersion }
    public var compilerVersion: VersionTuple { swiftVersion }
}
