import Foundation
import SwiftIfConfig
import SwiftParser
import SwiftSyntax

/// A use of an API newer than the deployment target, with no `#available` or `@available` around it: Xcode
/// refuses to compile it ("is only available in iOS 18.0 or newer"), though Linux compiles it happily.
public struct AvailabilityFinding: Equatable, Sendable, CustomStringConvertible {
    public let path: String
    public let line: Int
    public let column: Int
    public let symbol: String
    public let module: String
    /// Per platform whose floor is too low: what the symbol needs, and what the code may assume there.
    public let shortfalls: [Shortfall]

    public struct Shortfall: Equatable, Sendable {
        public let platform: ApplePlatform
        public let requirement: AppleAvailability.Requirement
        public let assumed: PlatformVersion
    }

    public var description: String {
        let needs = shortfalls.map { shortfall in
            switch shortfall.requirement {
            case .introduced(let version): "\(shortfall.platform) \(version) (code here may assume \(shortfall.platform) \(shortfall.assumed))"
            case .unavailable: "\(shortfall.platform), where it is unavailable"
            }
        }
        return "\(path):\(line):\(column): \(symbol) (\(module)) needs \(needs.joined(separator: " and ")); "
            + "guard it with if #available or mark the declaration @available"
    }
}

public struct AvailabilityReport: Sendable {
    public var findings: [AvailabilityFinding] = []
    /// References checked, and how many resolved to a symbol with Apple availability.
    public var referenceCount = 0
    public var checkedCount = 0
    /// References to swift-corelibs-foundation's own symbols (FileManager, ProcessInfo, URLSession...): it carries
    /// no Apple availability, so these are not checked. Symbol names, with how often each is used.
    public var unseenFoundation: [String: Int] = [:]
    /// Uses of a declaration too new for their site where the compiler has an older one to call instead (a protocol
    /// requirement's default implementation; `next()` for the `next(isolation:)` that `for await` calls).
    public var olderOverloadCount = 0
    /// References in code that no Apple configuration compiles (`#if canImport(Glibc)` branches).
    public var linuxOnlyCount = 0
    /// Files the index named that could not be read or parsed.
    public var problems: [String] = []

    public var summary: String {
        "\(referenceCount) references in the device modules, \(checkedCount) to symbols with Apple availability, "
            + "none newer than the deployment target without a guard"
    }
}

/// The availability check: every symbol a module references (resolved by the compiler, from its index store) whose
/// Apple availability is newer than the package's deployment target, outside `#available` and `@available`.
public enum AvailabilityCheck {
    public static func run(
        references: [SymbolReference], table: AvailabilityTable, targets: DeploymentTargets,
        displayPath: (String) -> String = { $0 }
    ) -> AvailabilityReport {
        var report = AvailabilityReport()
        var trees: [String: ParsedFile?] = [:]
        var seen = Set<String>()
        for reference in references {
            // The same file compiled by two builds (the Linux build, the Apple type-check) is one use.
            guard seen.insert("\(reference.path):\(reference.line):\(reference.column):\(reference.usr)").inserted else { continue }
            report.referenceCount += 1
            guard let availability = table.symbols[reference.usr] else {
                if reference.usr.hasPrefix("s:10Foundation") || reference.usr.hasPrefix("s:e:s:10Foundation") {
                    report.unseenFoundation[reference.name, default: 0] += 1
                }
                continue
            }
            report.checkedCount += 1
            let floors = targets.floors
            guard !shortfalls(availability.requirements, floors: floors, guaranteed: [:]).isEmpty else { continue }
            if trees[reference.path] == nil {
                trees[reference.path] = ParsedFile(path: reference.path)
            }
            guard let file = trees[reference.path]! else {
                report.problems.append("\(reference.path): named by the index store but cannot be read")
                continue
            }
            let position = file.converter.position(ofLine: reference.line, column: reference.column)
            // Only the platforms that compile the line: `#if canImport(UIKit)` code never reaches a macOS build.
            let platforms = file.platformsCompiling(position)
            guard !platforms.isEmpty else {
                report.linuxOnlyCount += 1
                continue
            }
            let guaranteed = AvailabilityScope.guaranteed(at: position, in: file.tree)
            let shortfalls = shortfalls(availability.requirements, floors: floors.filter { platforms.contains($0.key) }, guaranteed: guaranteed)
            guard !shortfalls.isEmpty else { continue }
            // The compiler ranks a declaration too new for the use site below one that is not, so where such an
            // alternative exists (a requirement's default implementation, or for a call it makes itself, an overload)
            // Xcode compiles the use against that one.
            let fallback = table.alternatives(to: reference.usr, implicit: reference.isImplicit).first { alternative in
                table.requirements(of: alternative).map {
                    self.shortfalls($0, floors: floors.filter { platforms.contains($0.key) }, guaranteed: guaranteed).isEmpty
                } ?? false
            }
            if fallback != nil {
                report.olderOverloadCount += 1
                continue
            }
            report.findings.append(AvailabilityFinding(
                path: displayPath(reference.path), line: reference.line, column: reference.column,
                symbol: availability.name, module: availability.module, shortfalls: shortfalls))
        }
        return report
    }

    /// The platforms where `requirements` ask for more than the floor and the guards around the use give.
    static func shortfalls(
        _ requirements: [ApplePlatform: AppleAvailability.Requirement], floors: [ApplePlatform: PlatformVersion],
        guaranteed: [ApplePlatform: PlatformVersion]
    ) -> [AvailabilityFinding.Shortfall] {
        ApplePlatform.allCases.compactMap { platform in
            guard let floor = floors[platform], let requirement = requirements[platform] else { return nil }
            let assumed = max(floor, guaranteed[platform] ?? floor)
            if case .introduced(let version) = requirement, version <= assumed { return nil }
            return .init(platform: platform, requirement: requirement, assumed: assumed)
        }
    }
}

/// A source file the index named, parsed once, with the regions each Apple configuration compiles.
private struct ParsedFile {
    let tree: SourceFileSyntax
    let converter: SourceLocationConverter
    let appleRegions: [(platform: ApplePlatform, regions: ConfiguredRegions)]

    init?(path: String) {
        guard let source = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let tree = Parser.parse(source: source)
        self.tree = tree
        converter = SourceLocationConverter(fileName: path, tree: tree)
        appleRegions = AppleBuildConfiguration.all.map { ($0.platform, tree.configuredRegions(in: $0)) }
    }

    /// The Apple platforms some configuration of which compiles the code at `position`: none for a use inside
    /// `#if canImport(Glibc)`, which never reaches Xcode.
    func platformsCompiling(_ position: AbsolutePosition) -> Set<ApplePlatform> {
        guard let token = tree.token(at: position) else { return Set(ApplePlatform.allCases) }
        return Set(appleRegions.filter { $0.regions.compiles(Syntax(token)) }.map(\.platform))
    }
}
