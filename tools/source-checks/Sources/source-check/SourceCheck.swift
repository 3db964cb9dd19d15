import ArgumentParser
import Foundation
import SourceChecks

@main
struct SourceCheck: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "source-check",
        abstract: "Scan Swift sources for what an Apple build would compile, without a Mac.",
        subcommands: [Platform.self, Privacy.self, StandIn.self, Blocking.self, Availability.self])
}

/// `-D` conditions, as the compiler takes them: none by default (a release build).
struct Conditions: ParsableArguments {
    @Option(name: .customShort("D"), help: "Treat this custom condition (e.g. DEBUG) as set.")
    var defines: [String] = []

    func apply(to configuration: AppleBuildConfiguration) -> AppleBuildConfiguration {
        var configured = configuration
        configured.customConditions = Set(defines)
        return configured
    }
}

/// Findings go to standard output, one a line; problems that make the scan itself doubtful go to standard
/// error and fail the run (exit 2), so a condition the scanner cannot evaluate is never a silent pass.
private func reportProblems(_ problems: [String]) throws {
    guard !problems.isEmpty else { return }
    for problem in problems { FileHandle.standardError.write(Data((problem + "\n").utf8)) }
    throw ExitCode(2)
}

/// The files to scan; a path that cannot be read is exit status 2, like any other doubt about the scan.
private func load(_ paths: [String]) throws -> [SourceFile] {
    do {
        return try SourceFile.load(under: paths)
    } catch {
        try reportProblems(["source-check: \(error)"])
        return []
    }
}

struct Platform: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Report Linux-only APIs in code that iOS or macOS would compile.")

    @Argument(help: "Directories (or .swift files) to scan.")
    var paths: [String]

    @OptionGroup var conditions: Conditions

    func run() throws {
        let files = try load(paths)
        let report = PlatformScan.scan(files, configurations: AppleBuildConfiguration.all.map(conditions.apply))
        for finding in report.findings { print(finding.description) }
        try reportProblems(report.problems)
        guard report.findings.isEmpty else { throw ExitCode.failure }
        print(report.summary)
        // What the availability check cannot see (it reads what the Linux builds compiled), for a reader to check.
        for branch in DarwinOnlyBranches.list(files) { print(branch.description) }
    }
}

struct Privacy: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a privacy manifest against the required-reason APIs that the iOS build of the code uses.")

    @Argument(help: "The PrivacyInfo.xcprivacy (XML property list) to check.")
    var manifest: String

    @Argument(help: "Directories (or .swift files) to scan.")
    var paths: [String]

    @OptionGroup var conditions: Conditions

    func run() throws {
        let files = try load(paths)
        let (uses, problems) = PrivacyScan.uses(in: files, configuration: conditions.apply(to: .iOS))
        try reportProblems(problems)
        let byCategory = Dictionary(grouping: uses, by: \.category)
        for category in requiredReasonCategories.map(\.key) {
            guard let found = byCategory[category] else { continue }
            print("\(category): \(found.count) use\(found.count == 1 ? "" : "s")")
            for use in found { print("  \(use.path):\(use.line): \(use.symbol)") }
        }
        let parsed: PrivacyManifest
        do { parsed = try PrivacyManifest(contentsOf: manifest) } catch {
            try reportProblems(["\(manifest): cannot read the privacy manifest: \(error)"])
            return
        }
        let manifestProblems = parsed.problems(for: uses)
        guard manifestProblems.isEmpty else {
            for problem in manifestProblems { print("\(manifest): \(problem)") }
            throw ExitCode.failure
        }
        print("\(files.count) files, \(byCategory.count) required-reason categories used, \(manifest) declares exactly these, with valid reasons")
    }
}

struct StandIn: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "standin",
        abstract: "Compare the Apple type-check's stand-ins with the facts read from WebKit's headers (and Apple's documentation).",
        discussion: """
            Every declaration must be a fact of the table or an overlay, and agree with it on main-actor isolation, class \
            members, optionality, settability, @optional requirements, availability and deprecation with versions. An \
            uncertain fact fails unless an override in the table says why. The stand-ins the table lists as unverified \
            (frameworks with no open headers, such as UIKit) are read too, and their declarations reported as unverified.
            """)

    @Argument(help: "The WebKit stand-in's directory (or .swift files).")
    var standIn: String

    @Argument(help: "The facts table (integrations/apple-typecheck/webkit-facts.json).")
    var facts: String

    func run() throws {
        let table: StandInCheck.Table
        do { table = try StandInCheck.table(from: try Data(contentsOf: URL(fileURLWithPath: facts)), named: facts) } catch {
            try reportProblems(["source-check: \(facts): \(error)"])
            return
        }
        // The unverified stand-ins' paths are relative to the table, which lives beside them.
        let tableDirectory = NSString(string: facts).deletingLastPathComponent
        let unverified = table.unverifiedStandIns.map { NSString(string: tableDirectory).appendingPathComponent($0.path) }
        let report = StandInCheck.compare(StandInCheck.declarations(in: try load([standIn] + unverified)), table: table)
        for mismatch in report.mismatches { print(mismatch) }
        for line in report.unverified { print(line) }
        guard report.mismatches.isEmpty else { throw ExitCode.failure }
        let frameworks = table.unverifiedStandIns.map(\.framework).joined(separator: ", ")
        print(
            "stand-in: \(report.checked) declarations agree with \(table.headers.count) WebKit headers (each at the commit the table names; "
                + "\(report.overridden) on uncertain facts an override accepts, \(table.overlays.count) overlays); "
                + "\(report.unverified.count) unverified, compared with Apple's documentation only (no open headers: \(frameworks)'s stand-in and the facts so marked)")
    }
}

struct Blocking: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Report calls that block their thread (sleeps, waits, pipe reads to the end) outside a thread of their own.")

    @Option(help: "The allow-list: `path | within | call | reason` a line.")
    var allow: String

    @Argument(help: "Directories (or .swift files) to scan; paths print and match the allow-list as given.")
    var paths: [String]

    func run() throws {
        let files = try load(paths)
        let text: String
        do { text = try String(contentsOfFile: allow, encoding: .utf8) } catch {
            try reportProblems(["source-check: \(allow): \(error)"])
            return
        }
        let (allowances, problems) = BlockingScan.allowances(from: text, named: allow)
        try reportProblems(problems)
        let report = BlockingScan.scan(files, allowances: allowances)
        for finding in report.findings { print(finding.description) }
        for stale in report.unused {
            print("\(allow):\(stale.line): allows \(stale.call) in \(stale.within) of \(stale.path), which no longer blocks there: remove the line")
        }
        guard report.findings.isEmpty, report.unused.isEmpty else { throw ExitCode.failure }
        print("\(report.fileCount) files: no call blocks a thread of the cooperative pool (\(report.allowed.count) allowed, each with its reason in \(allow))")
    }
}
