import ArgumentParser
import Foundation
import SourceChecks

struct Availability: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Report APIs newer than the package's deployment target used without #available or @available.",
        discussion: """
            Reads what the compiler resolved (its index store: a debug swift build writes one) and the Apple
            availability of every public symbol of the modules whose symbol graphs are given
            (swift-symbolgraph-extract output). Findings go to standard output as file:line:column; exit 1 when
            there are any, 2 when the check itself could not run.
            """)

    @Option(help: "`swift package dump-package` output of the package whose platforms: are the floor.")
    var packageJSON: String

    @Option(help: "A directory of *.symbols.json files (repeat for several).")
    var symbolGraphs: [String]

    @Option(help: "An index store to read (repeat for several builds of the same sources).")
    var indexStore: [String]

    @Option(help: "A module whose sources are checked (repeat).")
    var module: [String]

    @Option(help: "libIndexStore to read the store with (default: the one beside swiftc on PATH).")
    var indexStoreLibrary: String?

    @Option(help: "Print paths relative to this directory.")
    var relativeTo: String?

    func run() throws {
        let report: AvailabilityReport
        do {
            let targets = try DeploymentTargets(packageJSON: Data(contentsOf: URL(fileURLWithPath: packageJSON)))
            let table = try AvailabilityTable(graphsIn: symbolGraphs)
            let library = try indexStoreLibrary ?? IndexStore.toolchainLibrary()
            var references: [SymbolReference] = []
            for path in indexStore {
                let found = try IndexStore(path: path, library: library).references(inModules: Set(module))
                guard !found.isEmpty else {
                    throw AvailabilityInputError("\(path) holds no reference from \(module.joined(separator: ", ")): build them first")
                }
                references += found
            }
            let root = relativeTo.map { URL(fileURLWithPath: $0).resolvingSymlinksInPath().path + "/" }
            report = AvailabilityCheck.run(references: references, table: table, targets: targets) { path in
                guard let root, path.hasPrefix(root) else { return path }
                return String(path.dropFirst(root.count))
            }
            let floors = ApplePlatform.allCases.compactMap { platform in targets.floors[platform].map { "\(platform) \($0)" } }
            print("deployment target (Package.swift): \(floors.joined(separator: ", "))")
        } catch {
            FileHandle.standardError.write(Data("source-check availability: \(error)\n".utf8))
            throw ExitCode(2)
        }
        for finding in report.findings { print(finding.description) }
        if !report.unseenFoundation.isEmpty {
            let names = report.unseenFoundation.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.prefix(12).map(\.key)
            print("not checked: \(report.unseenFoundation.values.reduce(0, +)) references to "
                + "\(report.unseenFoundation.count) symbols of swift-corelibs-foundation, which carries no Apple "
                + "availability (most used: \(names.joined(separator: ", ")))")
        }
        print("not checked: Darwin-only branches (#if canImport(Darwin), os(iOS)), which neither build compiles; "
            + "source-check platform lists each with the APIs it calls")
        if report.olderOverloadCount > 0 {
            print("resolved to an older declaration on Apple: \(report.olderOverloadCount) use(s) of a declaration newer than "
                + "the floor that has an older one the compiler ranks first (a requirement's default implementation; "
                + "next() for the next(isolation:) of for await)")
        }
        if report.linuxOnlyCount > 0 {
            print("skipped: \(report.linuxOnlyCount) reference(s) in code no Apple configuration compiles")
        }
        for problem in report.problems { FileHandle.standardError.write(Data((problem + "\n").utf8)) }
        if !report.problems.isEmpty { throw ExitCode(2) }
        guard report.findings.isEmpty else { throw ExitCode.failure }
        print(report.summary)
    }
}
