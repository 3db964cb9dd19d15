import Foundation
import SwiftDiagnostics
import SwiftIfConfig
import SwiftParser
import SwiftSyntax

/// One parsed Swift file.
public struct SourceFile {
    /// The path as it is printed in findings (as found under the directory the user named).
    public let path: String
    public let tree: SourceFileSyntax
    let converter: SourceLocationConverter

    public init(path: String, source: String) {
        self.path = path
        self.tree = Parser.parse(source: source)
        self.converter = SourceLocationConverter(fileName: path, tree: tree)
    }

    public init(path: String) throws {
        self.init(path: path, source: try String(contentsOfFile: path, encoding: .utf8))
    }

    /// Every `.swift` file under the given directories (or the files themselves), sorted, skipping
    /// hidden folders and build folders.
    public static func load(under roots: [String]) throws -> [SourceFile] {
        var paths: [String] = []
        for root in roots {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory) else {
                throw ScanError("no such file or directory: \(root)")
            }
            guard isDirectory.boolValue else {
                paths.append(root)
                continue
            }
            let base = root.hasSuffix("/") ? String(root.dropLast()) : root
            for relative in FileManager.default.subpaths(atPath: base) ?? [] where relative.hasSuffix(".swift") {
                let parts = relative.split(separator: "/")
                if parts.contains(where: { $0.hasPrefix(".") }) { continue }
                paths.append(base + "/" + relative)
            }
        }
        return try Set(paths).sorted().map { try SourceFile(path: $0) }
    }

    public func location(of token: TokenSyntax) -> SourceLocation {
        converter.location(for: token.positionAfterSkippingLeadingTrivia)
    }

    /// The tokens the compiler would see under `configuration`: everything outside `#if`, plus the active
    /// clause of each `#if` (recursively). The `#if` conditions themselves are not included, so
    /// `#if canImport(Glibc)` never counts as a use of Glibc. Comments are trivia, never tokens.
    public func activeTokens(under configuration: some BuildConfiguration) -> (tokens: [TokenSyntax], problems: [String]) {
        let collector = ActiveTokenCollector(configuration: configuration)
        collector.walk(tree)
        let problems = collector.diagnostics.map { diagnostic in
            let at = diagnostic.location(converter: converter)
            return "\(path):\(at.line):\(at.column): cannot evaluate #if: \(diagnostic.message)"
        }
        return (collector.tokens, problems)
    }
}

private final class ActiveTokenCollector: ActiveSyntaxVisitor {
    var tokens: [TokenSyntax] = []

    init(configuration: some BuildConfiguration) {
        super.init(viewMode: .sourceAccurate, configuration: configuration)
    }

    override func visit(_ token: TokenSyntax) -> SyntaxVisitorContinueKind {
        tokens.append(token)
        return .visitChildren
    }
}

public struct ScanError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

// MARK: What a token is

extension TokenSyntax {
    /// The identifier this token spells, without backticks; nil for keywords, punctuation and literals.
    var identifierName: String? {
        guard case .identifier(let text) = tokenKind else { return nil }
        return text.hasPrefix("`") ? String(text.dropFirst().dropLast()) : text
    }

    /// True when the token names something that is used here: a value or function (`stat(...)`,
    /// `info.st_mtim`, `.modificationDate`, `\.st_mtim`) or a type (`UserDefaults`, `Glibc.stat`). False for
    /// declarations (`func splice()`), argument labels, and everything that is not an identifier.
    var isReference: Bool {
        guard identifierName != nil, let parent else { return false }
        if let reference = parent.as(DeclReferenceExprSyntax.self) { return reference.baseName.id == id }
        if let type = parent.as(IdentifierTypeSyntax.self) { return type.name.id == id }
        if let type = parent.as(MemberTypeSyntax.self) { return type.name.id == id }
        return false
    }

    /// True when the token is a module name in an `import` declaration.
    var isImportedModule: Bool {
        parent?.is(ImportPathComponentSyntax.self) == true && parent?.parent?.parent?.is(ImportDeclSyntax.self) == true
    }

    /// True when the token is the function called in a call with at least one argument: `stat(path, &info)`
    /// or `Darwin.stat(path, &info)`, but not `stat()` (the struct's zero initialiser) nor `stat` as a type.
    var isCalledWithArguments: Bool {
        guard let reference = parent?.as(DeclReferenceExprSyntax.self), reference.baseName.id == id else { return false }
        var callee = ExprSyntax(reference)
        if let member = reference.parent?.as(MemberAccessExprSyntax.self), member.declName.id == reference.id {
            callee = ExprSyntax(member)
        }
        guard let call = callee.parent?.as(FunctionCallExprSyntax.self), call.calledExpression.id == callee.id else {
            return false
        }
        return !call.arguments.isEmpty || call.trailingClosure != nil
    }

    /// For `Glibc.write`, the member after the dot ("write"); nil if the token is not followed by one.
    var memberAfterDot: String? {
        guard let dot = nextToken(viewMode: .sourceAccurate), dot.tokenKind == .period,
              let member = dot.nextToken(viewMode: .sourceAccurate) else { return nil }
        return member.identifierName
    }

    /// For the first text segment of a string literal, its text; nil otherwise.
    var leadingStringSegment: String? {
        guard case .stringSegment(let text) = tokenKind,
              let segment = parent?.as(StringSegmentSyntax.self),
              let segments = segment.parent?.as(StringLiteralSegmentListSyntax.self),
              segments.first?.id == segment.id else { return nil }
        return text
    }
}
