import Foundation
import SourceChecks
import Testing

/// Scans one in-memory file under every configuration and returns the reported lines, each with the
/// configurations that compile it.
private func reported(_ source: String) -> [Int: [String]] {
    let report = PlatformScan.scan([SourceFile(path: "t.swift", source: source)])
    #expect(report.problems.isEmpty, "\(report.problems)")
    var lines: [Int: [String]] = [:]
    for finding in report.findings { lines[finding.line, default: []] += finding.configurations }
    return lines
}

private let all = AppleBuildConfiguration.all.map(\.name)
private let iOS = [AppleBuildConfiguration.iOS.name]
private let macOS = [AppleBuildConfiguration.macOSArm64.name, AppleBuildConfiguration.macOSX86_64.name]

struct ConfigurationCase: CustomTestStringConvertible, Sendable {
    let name: String
    let source: String
    /// Line -> the configurations expected to report it; lines not named must not be reported.
    let expected: [Int: [String]]
    var testDescription: String { name }
}

/// The `#if` evaluation, as a table: each source puts `info.st_mtim` (or another Linux-only API) in some
/// branch, and names the lines a Darwin build compiles.
let configurationCases: [ConfigurationCase] = [
    .init(name: "outside any #if", source: """
        let t = info.st_mtim
        """, expected: [1: all]),
    .init(name: "under #if canImport(Glibc)", source: """
        #if canImport(Glibc)
        let t = info.st_mtim
        #endif
        """, expected: [:]),
    .init(name: "under #else of #if canImport(Darwin)", source: """
        #if canImport(Darwin)
        let t = info.st_mtimespec
        #else
        let t = info.st_mtim
        #endif
        """, expected: [:]),
    .init(name: "the Darwin branch of #if canImport(Darwin) is scanned", source: """
        #if canImport(Darwin)
        let t = info.st_mtim
        #endif
        """, expected: [2: all]),
    .init(name: "#if os(Linux) is skipped", source: """
        #if os(Linux)
        import Glibc
        let fd = epoll_create1(0)
        #endif
        """, expected: [:]),
    .init(name: "#if !canImport(Darwin) is skipped", source: """
        #if !canImport(Darwin)
        let t = info.st_mtim
        #endif
        """, expected: [:]),
    .init(name: "#elseif chain reaching Darwin", source: """
        #if canImport(Glibc)
        import Glibc
        #elseif canImport(Musl)
        import Musl
        #elseif canImport(Darwin)
        let n = sendfile(a, b, c, &d, nil, 0)
        #else
        let t = info.st_atim
        #endif
        """, expected: [6: all]),
    .init(name: "#elseif after an active clause is skipped", source: """
        #if canImport(Darwin)
        import Darwin
        #elseif canImport(Glibc)
        let fd = pipe2(&fds, O_CLOEXEC)
        #endif
        """, expected: [:]),
    .init(name: "nested #if", source: """
        #if canImport(Darwin)
          #if os(Linux)
          let a = info.st_mtim
          #else
          let b = info.st_ctim
          #endif
        #else
          let c = info.st_atim
        #endif
        """, expected: [5: all]),
    .init(name: "os(iOS) and os(macOS)", source: """
        #if os(iOS)
        let a = info.st_mtim
        #elseif os(macOS)
        let b = info.st_ctim
        #endif
        """, expected: [2: iOS, 4: macOS]),
    .init(name: "canImport(UIKit) and canImport(AppKit)", source: """
        #if canImport(UIKit)
        let a = info.st_mtim
        #endif
        #if canImport(AppKit)
        let b = info.st_mtim
        #endif
        """, expected: [2: iOS, 5: macOS]),
    .init(name: "arch(x86_64) is macOS on Intel only", source: """
        #if arch(x86_64)
        let a = info.st_mtim
        #elseif arch(arm64)
        let b = info.st_ctim
        #endif
        """, expected: [2: [AppleBuildConfiguration.macOSX86_64.name], 4: [AppleBuildConfiguration.iOS.name, AppleBuildConfiguration.macOSArm64.name]]),
    .init(name: "targetEnvironment(simulator) is skipped", source: """
        #if targetEnvironment(simulator)
        let a = info.st_mtim
        #endif
        """, expected: [:]),
    .init(name: "a FoundationNetworking import guarded the usual way", source: """
        import Foundation
        #if canImport(FoundationNetworking)
        import FoundationNetworking
        #endif
        """, expected: [:]),
    .init(name: "comments never count", source: """
        // info.st_mtim and Glibc.write are Linux-only
        /* import Glibc; "/proc/self" */
        /// `epoll_wait`
        let x = 1
        """, expected: [:]),
    .init(name: "qualified Glibc, import Glibc, /proc literals", source: """
        import Glibc
        let n = Glibc.write(fd, p, c)
        let path = "/proc/self/fd"
        let note = "see /proc/self"
        """, expected: [1: all, 2: all, 3: all]),
    .init(name: "declarations and labels are not uses; calls are", source: """
        func splice(_ x: Int) {}
        f(splice: 1)
        splice(1)
        """, expected: [3: all]),
    .init(name: "prefixed names", source: """
        var event = epoll_event()
        let w = inotify_add_watch(fd, path, 0)
        let fd = eventfd(0, 0)
        """, expected: [1: all, 2: all, 3: all]),
]

@Test(arguments: configurationCases)
func configurationEvaluation(_ testCase: ConfigurationCase) {
    #expect(reported(testCase.source) == testCase.expected)
}

@Test func findingLineNamesApiReasonAndConfigurations() throws {
    let report = PlatformScan.scan([SourceFile(path: "Sources/A/B.swift", source: "import Glibc\nlet n = Glibc.write(fd, p, c)\n")])
    #expect(report.findings.map(\.description) == [
        "Sources/A/B.swift:1:8: import Glibc is Linux-only (the GNU C library module; Apple platforms import Darwin), compiled for iOS (arm64), macOS (arm64), macOS (x86_64)",
        "Sources/A/B.swift:2:9: Glibc.write is Linux-only (the GNU C library module; Apple platforms import Darwin), compiled for iOS (arm64), macOS (arm64), macOS (x86_64)",
    ])
    #expect(PlatformScan.scan([SourceFile(path: "x.swift", source: "let a = 1")]).summary == "1 files, 3 configurations, no Linux-only API")
}

/// The repository this package lives in: tools/source-checks/Tests/SourceChecksTests/<this file>.
let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

/// Real files: a scratch copy of a few of SatchelCore's files passes; with `let t = info.st_mtim` planted in
/// active code it fails, naming that line.
@Test func realFilesPassAndAPlantedLineFails() throws {
    let core = repositoryRoot.appendingPathComponent("Sources/SatchelCore").path
    let names = try FileManager.default.contentsOfDirectory(atPath: core).filter { $0.hasSuffix(".swift") }.sorted().prefix(4)
    try #require(names.count >= 2, "expected SatchelCore's sources at \(core)")

    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("source-check-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: scratch) }
    for name in names {
        try FileManager.default.copyItem(atPath: core + "/" + name, toPath: scratch.appendingPathComponent(name).path)
    }

    let clean = PlatformScan.scan(try SourceFile.load(under: [scratch.path]))
    #expect(clean.findings.isEmpty, "\(clean.findings.map(\.description))")
    #expect(clean.problems.isEmpty)
    #expect(clean.fileCount == names.count)

    let target = scratch.appendingPathComponent(names.first!).path
    var text = try String(contentsOfFile: target, encoding: .utf8)
    if !text.hasSuffix("\n") { text += "\n" }
    text += "\nfunc plantedForTheScan(_ info: stat) {\n    let t = info.st_mtim\n    _ = t\n}\n"
    try text.write(toFile: target, atomically: true, encoding: .utf8)
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    let plantedLine = try #require(lines.firstIndex { $0.contains("let t = info.st_mtim") }) + 1

    let planted = PlatformScan.scan(try SourceFile.load(under: [scratch.path]))
    #expect(planted.findings.count == 1)
    let finding = try #require(planted.findings.first)
    #expect(finding.path == target)
    #expect(finding.line == plantedLine)
    #expect(finding.api == "st_mtim")
    #expect(finding.configurations == AppleBuildConfiguration.all.map(\.name))
}
