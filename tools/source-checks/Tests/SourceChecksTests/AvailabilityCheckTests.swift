import Foundation
import SourceChecks
import SwiftParser
import SwiftSyntax
import Testing

// MARK: Where a use is guarded (syntax only)

/// The versions guaranteed where `marker` (a comment-free identifier) first appears in `source`.
private func guaranteed(at marker: String, in source: String) throws -> [ApplePlatform: PlatformVersion] {
    let tree = Parser.parse(source: source)
    let offset = try #require(source.utf8.firstRange(of: marker.utf8)).lowerBound
    return AvailabilityScope.guaranteed(at: AbsolutePosition(utf8Offset: source.utf8.distance(from: source.utf8.startIndex, to: offset)), in: tree)
}

private let iOS17macOS14: [ApplePlatform: PlatformVersion] = [.iOS: PlatformVersion([17, 0]), .macOS: PlatformVersion([14, 0])]

@Test func theBodyOfIfAvailableIsGuardedAndItsElseIsNot() throws {
    let source = """
        func f() {
            if #available(iOS 17, macOS 14, *) { inBody() } else { inElse() }
        }
        """
    #expect(try guaranteed(at: "inBody", in: source) == iOS17macOS14)
    #expect(try guaranteed(at: "inElse", in: source) == [:])
}

@Test func statementsAfterGuardAvailableAreGuardedAndThoseBeforeAreNot() throws {
    let source = """
        func f() {
            before()
            guard #available(iOS 17.0, macOS 14.0, *) else { inElse(); return }
            after { inClosure() }
        }
        func g() { inAnotherFunction() }
        """
    #expect(try guaranteed(at: "before", in: source) == [:])
    #expect(try guaranteed(at: "inElse", in: source) == [:])
    #expect(try guaranteed(at: "after", in: source) == iOS17macOS14)
    #expect(try guaranteed(at: "inClosure", in: source) == iOS17macOS14)
    #expect(try guaranteed(at: "inAnotherFunction", in: source) == [:])
}

@Test func declarationsMarkedAvailableGuardTheirBodiesInShortAndLongForm() throws {
    let source = """
        @available(iOS 17, macOS 14, *)
        extension S { func m() { inExtension() } }
        struct T {
            @available(iOS, introduced: 18.0)
            @available(macOS, introduced: 15.0)
            var v: Int { inProperty() }
            @available(*, deprecated, message: "old")
            func d() { inDeprecated() }
        }
        """
    #expect(try guaranteed(at: "inExtension", in: source) == iOS17macOS14)
    #expect(try guaranteed(at: "inProperty", in: source) == [.iOS: PlatformVersion([18, 0]), .macOS: PlatformVersion([15, 0])])
    #expect(try guaranteed(at: "inDeprecated", in: source) == [:])
}

@Test func onlyThePlatformsAConditionNamesAreGuarded() throws {
    let source = """
        if #available(iOS 18, *) { onlyIOS() }
        if #unavailable(iOS 18) { unavailableBranch() }
        if #available(iOSApplicationExtension 18, *) { extensionOnly() }
        if #available(iOS 17, macOS 14, *), let u = later() { use(u) }
        """
    #expect(try guaranteed(at: "onlyIOS", in: source) == [.iOS: PlatformVersion([18, 0])])
    #expect(try guaranteed(at: "unavailableBranch", in: source) == [:])
    #expect(try guaranteed(at: "extensionOnly", in: source) == [:])
    #expect(try guaranteed(at: "later", in: source) == iOS17macOS14)
}

@Test func versionsCompareByComponent() {
    #expect(PlatformVersion("16") == PlatformVersion("16.0"))
    #expect(PlatformVersion("16.4")! > PlatformVersion("16")!)
    #expect(PlatformVersion("17.0.1")! > PlatformVersion("17")!)
    #expect(PlatformVersion("10.15")! < PlatformVersion("11")!)
    #expect(PlatformVersion("x") == nil)
    #expect(PlatformVersion("") == nil)
}

@Test func theDeploymentTargetIsReadFromThePackageDescriptionAndItsAbsenceIsAnError() throws {
    let declared = #"{"platforms": [{"platformName": "macos", "version": "13.0"}, {"platformName": "ios", "version": "16.0"}]}"#
    #expect(try DeploymentTargets(packageJSON: Data(declared.utf8)).floors == [.iOS: PlatformVersion([16, 0]), .macOS: PlatformVersion([13, 0])])
    #expect(throws: (any Error).self) {
        try DeploymentTargets(packageJSON: Data(#"{"platforms": [{"platformName": "macos", "version": "13.0"}]}"#.utf8))
    }
}

// MARK: Which platforms compile a use

/// One use of a symbol unavailable on macOS (as `allowsInlineMediaPlayback` is), at the line holding `marker`.
private func findings(for source: String, marker: String) throws -> [AvailabilityFinding] {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("availability-\(UUID().uuidString).swift")
    defer { try? FileManager.default.removeItem(at: file) }
    try source.write(to: file, atomically: true, encoding: .utf8)
    let lines = source.split(separator: "\n", omittingEmptySubsequences: false)
    let line = try #require(lines.firstIndex { $0.contains(marker) })
    let text = String(lines[line])
    let column = try #require(text.utf8.firstRange(of: marker.utf8)).lowerBound.utf16Offset(in: text) + 1
    var table = AvailabilityTable()
    table.set("c:objc(cs)Config(py)inline", AppleAvailability(
        requirements: [.iOS: .introduced(PlatformVersion([10, 0])), .macOS: .unavailable], name: "Config.inline", module: "WebKit"))
    let reference = SymbolReference(
        path: file.path, module: "SatchelWebKit", line: line + 1, column: column, usr: "c:objc(cs)Config(py)inline", name: "inline")
    let targets = DeploymentTargets([.iOS: PlatformVersion([16, 0]), .macOS: PlatformVersion([13, 0])])
    return AvailabilityCheck.run(references: [reference], table: table, targets: targets).findings
}

@Test func aUseOnlyIOSCompilesIsHeldToIOSAlone() throws {
    let guarded = """
        func make(_ c: Config) {
            #if canImport(UIKit)
            c.inline = true
            #endif
        }
        """
    #expect(try findings(for: guarded, marker: "inline").isEmpty)
    let unguarded = """
        func make(_ c: Config) {
            c.inline = true
        }
        """
    let found = try findings(for: unguarded, marker: "inline")
    #expect(found.map(\.line) == [2])
    #expect(found.first?.shortfalls.map(\.platform) == [.macOS])
}

// MARK: The whole check, on a planted package built here

/// A scratch package laid out like the device side (four of its module names, the same platforms line), whose files
/// plant one unguarded use of a newer API from each library the check reads, next to the same calls guarded and a
/// local declaration that shares a library symbol's name. A line ending `// FINDING: name` must be reported with
/// that symbol; no other line may be.
private let plantedPackage = """
    // swift-tools-version:6.1
    import PackageDescription
    let package = Package(
        name: "planted",
        platforms: [.macOS(.v13), .iOS(.v16)],
        targets: [
            .target(name: "SatchelCore"),
            .target(name: "SatchelArchive"),
            .target(name: "SatchelStore"),
            .target(name: "SatchelHTTP"),
        ]
    )
    """

private let plantedFiles: [String: String] = [
    // The standard library.
    "SatchelCore/Text.swift": """
        public func unguarded(_ bytes: [UInt8]) -> String? {
            String(validating: bytes, as: UTF8.self) // FINDING: String.init(validating:as:)
        }
        public func guarded(_ bytes: [UInt8]) -> String? {
            if #available(iOS 18, macOS 15, *) {
                return String(validating: bytes, as: UTF8.self)
            }
            return String(decoding: bytes, as: UTF8.self)
        }
        @available(iOS 18.0, macOS 15.0, *)
        public func declared(_ bytes: [UInt8]) -> String? { String(validating: bytes, as: UTF8.self) }
        @available(iOS 18, macOS 15, *)
        extension Array where Element == UInt8 {
            var text: String? { String(validating: self, as: UTF8.self) }
        }
        public func onlyIOSGuarded(_ bytes: [UInt8]) -> String? {
            if #available(iOS 18, *) { return String(validating: bytes, as: UTF8.self) } // FINDING: String.init(validating:as:)
            return nil
        }
        #if canImport(Glibc)
        public func linuxOnly(_ bytes: [UInt8]) -> String? { String(validating: bytes, as: UTF8.self) }
        #endif
        /// `&*` became a FixedWidthInteger requirement in iOS 18; its default implementation is as old as Swift, and
        /// the compiler calls that one below iOS 18.
        public func hash(_ bytes: [UInt8]) -> UInt64 { bytes.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 } }
        """,
    // Foundation (swift-foundation's FoundationEssentials on this machine).
    "SatchelArchive/Links.swift": """
        import Foundation
        public func unguardedURL() -> URL? {
            URL(string: "a b", encodingInvalidCharacters: false) // FINDING: URL.init(string:encodingInvalidCharacters:)
        }
        public func atTheFloor() -> URL { URL(fileURLWithPath: "/").appending(path: "x") }
        public func guardedURL() -> URL? {
            guard #available(iOS 17, macOS 14, *) else { return nil }
            return URL(string: "a b", encodingInvalidCharacters: false)
        }
        /// A local type that merely shares Synchronization's name: not a use of it.
        struct Mutex<Value> {
            var value: Value
            init(_ value: Value) { self.value = value }
        }
        func lookalike() -> Int { Mutex(1).value }
        """,
    // Synchronization.
    "SatchelStore/Counter.swift": """
        import Synchronization
        public func unguardedMutex() -> Int {
            let counter = Mutex(0) // FINDING: Mutex
            return counter.withLock { $0 } // FINDING: Mutex.withLock(_:)
        }
        @available(iOS 18, macOS 15, *)
        public final class Counter: Sendable {
            let count = Mutex(0)
            public func next() -> Int { count.withLock { $0 += 1; return $0 } }
        }
        """,
    // _Concurrency.
    "SatchelHTTP/Group.swift": """
        public func unguardedGroup() async {
            await withDiscardingTaskGroup { group in } // FINDING: withDiscardingTaskGroup(returning:isolation:body:)
        }
        public func guardedGroup() async {
            if #available(iOS 17, macOS 14, *) {
                await withDiscardingTaskGroup { group in group.addTask {} }
            }
        }
        func withDiscardingTaskGroup(_ label: String) -> String { label }
        public func sameNameLocal() -> String { withDiscardingTaskGroup("mine") }
        public func atTheFloor() async throws { try await Task.sleep(for: .milliseconds(1)) }
        /// `for await` calls `next(isolation:)` (iOS 18) where the floor allows it, else `next()`.
        public func sum(_ numbers: AsyncStream<Int>) async -> Int {
            var total = 0
            for await number in numbers { total += number }
            return total
        }
        """,
]

/// Runs a command to its end (its output in a file, so a full pipe never stalls it) and returns that output.
@discardableResult
private func run(_ arguments: [String], in directory: URL) async throws -> String {
    let log = directory.appendingPathComponent(".log-\(UUID().uuidString)")
    guard FileManager.default.createFile(atPath: log.path, contents: nil) else { throw CommandFailed(description: "cannot create \(log.path)") }
    let handle = try FileHandle(forWritingTo: log)
    defer { try? handle.close() }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    process.currentDirectoryURL = directory
    process.standardOutput = handle
    process.standardError = handle
    let status: Int32 = try await withCheckedThrowingContinuation { continuation in
        process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
        do { try process.run() } catch { continuation.resume(throwing: error) }
    }
    let output = try String(contentsOf: log, encoding: .utf8)
    guard status == 0 else { throw CommandFailed(description: "\(arguments.joined(separator: " ")) exited \(status):\n\(output)") }
    return output
}

private struct CommandFailed: Error, CustomStringConvertible {
    let description: String
}

@Test(.timeLimit(.minutes(10)))
func plantedUsesOfNewerAPIsAreNamedWithFileAndLineAndGuardedOnesAreNot() async throws {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("availability-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: root) }
    try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    try plantedPackage.write(to: root.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
    var expected: Set<String> = []
    for (relative, source) in plantedFiles {
        let file = root.appendingPathComponent("Sources").appendingPathComponent(relative)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try source.write(to: file, atomically: true, encoding: .utf8)
        for (index, line) in source.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            guard let marker = line.range(of: "// FINDING: ") else { continue }
            expected.insert("Sources/\(relative):\(index + 1): \(line[marker.upperBound...])")
        }
    }
    #expect(expected.count == 6)

    try await run(["swift", "build"], in: root)
    let packageJSON = try await run(["swift", "package", "dump-package"], in: root)
    let graphs = root.appendingPathComponent("graphs")
    try FileManager.default.createDirectory(at: graphs, withIntermediateDirectories: true)
    for module in ["Swift", "Synchronization", "FoundationEssentials"] {
        try await run([
            "swift-symbolgraph-extract", "-module-name", module, "-target", "x86_64-unknown-linux-gnu",
            "-minimum-access-level", "public", "-output-dir", graphs.path,
        ], in: root)
    }

    let store = try IndexStore(
        path: root.appendingPathComponent(".build/x86_64-unknown-linux-gnu/debug/index/store").path,
        library: try IndexStore.toolchainLibrary())
    let references = try store.references(inModules: ["SatchelCore", "SatchelArchive", "SatchelStore", "SatchelHTTP"])
    let report = AvailabilityCheck.run(
        references: references, table: try AvailabilityTable(graphsIn: graphs.path),
        targets: try DeploymentTargets(packageJSON: Data(packageJSON.utf8))
    ) { String($0.dropFirst(root.resolvingSymlinksInPath().path.count + 1)) }
    #expect(report.problems.isEmpty, "\(report.problems)")

    // Each planted line is reported, naming its symbol; no other line is (several symbols on one line count once).
    var reported: [String: Set<String>] = [:]
    for finding in report.findings { reported["\(finding.path):\(finding.line)", default: []].insert(finding.symbol) }
    for entry in expected {
        let (location, symbol) = (String(entry.split(separator: " ")[0].dropLast()), String(entry.split(separator: " ")[1]))
        #expect(reported[location]?.contains(symbol) == true, "\(entry) was not reported: \(report.findings)")
    }
    let expectedLocations = Set(expected.map { String($0.split(separator: " ")[0].dropLast()) })
    #expect(Set(reported.keys) == expectedLocations, "\(report.findings.map(\.description).joined(separator: "\n"))")
    // The half-guarded line falls short on macOS only.
    let halfGuardedLine = try #require(plantedFiles["SatchelCore/Text.swift"]!.split(separator: "\n", omittingEmptySubsequences: false)
        .firstIndex { $0.contains("if #available(iOS 18, *)") }) + 1
    let halfGuarded = report.findings.first { $0.path == "Sources/SatchelCore/Text.swift" && $0.line == halfGuardedLine }
    #expect(halfGuarded?.shortfalls.map(\.platform) == [.macOS])
    #expect(report.linuxOnlyCount >= 1)
    // `&*` and `for await`'s `next(isolation:)` resolved, on Linux, to declarations newer than the floor that have
    // older ones the compiler ranks first: counted, not reported.
    #expect(report.olderOverloadCount >= 2)
}
