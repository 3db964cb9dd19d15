import SwiftIfConfig
import SwiftSyntax

/// Linux as this machine's two builds of the device side see `#if`: the package build, and
/// integrations/apple-typecheck, where stand-ins make `canImport(WebKit)` and `canImport(UIKit)` true.
public struct LinuxBuildConfiguration: BuildConfiguration, Sendable {
    public let name: String
    /// Modules a stand-in provides in this build.
    let standIns: Set<String>

    public static let package = LinuxBuildConfiguration(name: "Linux", standIns: [])
    public static let appleTypeCheck = LinuxBuildConfiguration(name: "Linux (apple-typecheck)", standIns: ["WebKit", "UIKit"])
    public static let both: [LinuxBuildConfiguration] = [.package, .appleTypeCheck]

    /// Apple-only modules; anything else (Glibc, Foundation, the package's own modules) is importable.
    static let appleOnlyModules: Set<String> = [
        "Darwin", "WebKit", "UIKit", "AppKit", "WatchKit", "Security", "CryptoKit", "os", "ObjectiveC",
        "CoreFoundation", "Network", "Combine", "System", "UniformTypeIdentifiers", "BackgroundTasks",
    ]

    public func canImport(importPath: [(TokenSyntax, String)], version: CanImportVersion) throws -> Bool {
        guard let top = importPath.first?.1 else { return false }
        return standIns.contains(top) || !Self.appleOnlyModules.contains(top)
    }

    public func isCustomConditionSet(name: String) throws -> Bool { false }
    public func hasFeature(name: String) throws -> Bool { true }
    public func hasAttribute(name: String) throws -> Bool { true }
    public func isActiveTargetOS(name: String) throws -> Bool { name == "Linux" }
    public func isActiveTargetArchitecture(name: String) throws -> Bool { name == "x86_64" }
    public func isActiveTargetEnvironment(name: String) throws -> Bool { false }
    public func isActiveTargetRuntime(name: String) throws -> Bool { name == "_Native" }
    public func isActiveTargetPointerAuthentication(name: String) throws -> Bool { false }
    public func isActiveTargetObjectFormat(name: String) throws -> Bool { name == "ELF" }
    public var targetPointerBitWidth: Int { 64 }
    public var targetAtomicBitWidths: [Int] { [8, 16, 32, 64] }
    public var endianness: Endianness { .little }
    public var languageVersion: VersionTuple { VersionTuple(6, 1) }
    public var compilerVersion: VersionTuple { VersionTuple(6, 1) }
}

/// A `#if` clause that an Apple configuration compiles and neither Linux build does: the availability check, which
/// reads what the Linux builds compiled, cannot see inside it, so it is listed with what it calls for a reader.
public struct DarwinOnlyBranch: Equatable, Sendable, CustomStringConvertible {
    public let path: String
    public let line: Int
    /// The clause as written: `#if canImport(Darwin)`, `#elseif os(iOS)` (shown as `#if`), `#else`.
    public let condition: String
    /// Functions, methods and types it names, in order of first use, once each.
    public let calls: [String]

    public var description: String {
        "\(path):\(line): \(condition): Darwin-only, not seen by the availability check; uses "
            + (calls.isEmpty ? "no API" : calls.joined(separator: ", "))
    }
}

public enum DarwinOnlyBranches {
    public static func list(
        _ files: [SourceFile], apple: [AppleBuildConfiguration] = AppleBuildConfiguration.all,
        linux: [LinuxBuildConfiguration] = LinuxBuildConfiguration.both
    ) -> [DarwinOnlyBranch] {
        var branches: [DarwinOnlyBranch] = []
        for file in files {
            let appleRegions = apple.map { file.tree.configuredRegions(in: $0) }
            let linuxRegions = linux.map { file.tree.configuredRegions(in: $0) }
            let finder = ClauseFinder(viewMode: .sourceAccurate)
            finder.walk(file.tree)
            for clause in finder.clauses {
                // A clause that only imports (`import Darwin`) uses nothing by itself.
                guard let elements = clause.elements, !onlyImports(elements),
                      appleRegions.contains(where: { $0.compiles(Syntax(clause)) }),
                      !linuxRegions.contains(where: { $0.compiles(Syntax(clause)) }) else { continue }
                // Reported at the outermost Darwin-only clause: a clause nested in one is part of it.
                if let outer = clause.parent?.ancestorClause, !linuxRegions.contains(where: { $0.compiles(Syntax(outer)) }) {
                    continue
                }
                let at = file.location(of: clause.poundKeyword)
                branches.append(DarwinOnlyBranch(
                    path: file.path, line: at.line,
                    condition: clause.condition.map { "#if \($0.trimmedDescription)" } ?? "#else",
                    calls: usedNames(in: Syntax(elements))))
            }
        }
        return branches
    }

    private static func onlyImports(_ elements: IfConfigClauseSyntax.Elements) -> Bool {
        guard case .statements(let items) = elements else { return false }
        return items.allSatisfy { $0.item.is(ImportDeclSyntax.self) }
    }

    /// The names a region uses as functions, members or types, once each, in order.
    static func usedNames(in node: Syntax) -> [String] {
        var names: [String] = []
        var seen = Set<String>()
        for token in node.tokens(viewMode: .sourceAccurate) {
            // An attribute's name (`@usableFromInline`) is not an API the branch calls.
            guard token.isReference, let name = token.identifierName, token.parent?.parent?.is(AttributeSyntax.self) != true else {
                continue
            }
            let isCall = token.isCalledWithArguments || token.parent?.parent?.is(FunctionCallExprSyntax.self) == true
            let isType = token.parent?.is(IdentifierTypeSyntax.self) == true || token.parent?.is(MemberTypeSyntax.self) == true
            let isMember = token.parent.flatMap { reference in
                reference.parent?.as(MemberAccessExprSyntax.self).map { $0.declName.id == reference.id }
            } ?? false
            guard isCall || isType || isMember, seen.insert(name).inserted else { continue }
            names.append(name)
        }
        return names
    }
}

private final class ClauseFinder: SyntaxVisitor {
    var clauses: [IfConfigClauseSyntax] = []
    override func visit(_ node: IfConfigClauseSyntax) -> SyntaxVisitorContinueKind {
        clauses.append(node)
        return .visitChildren
    }
}

extension Syntax {
    /// The nearest `#if` clause around this node (itself included).
    var ancestorClause: IfConfigClauseSyntax? {
        var node: Syntax? = self
        while let current = node {
            if let clause = current.as(IfConfigClauseSyntax.self) { return clause }
            node = current.parent
        }
        return nil
    }
}

extension ConfiguredRegions {
    /// True when the configuration compiles `node`: every `#if` clause around it is its `#if`'s active clause.
    /// (Asked by clause, not by position: a node's position includes its leading trivia, which may lie in the
    /// clause before.)
    func compiles(_ node: Syntax) -> Bool {
        var clause = node.ancestorClause
        while let current = clause {
            guard let declaration = current.parent?.parent?.as(IfConfigDeclSyntax.self),
                  activeClause(for: declaration)?.id == current.id else { return false }
            clause = declaration.parent?.ancestorClause
        }
        return true
    }
}
