import Foundation
import SwiftSyntax

/// The Apple type-check's WebKit stand-in compared with the facts read from WebKit's public headers
/// (`integrations/apple-typecheck/webkit-facts.json`), so that neither changes without the other:
/// - every declaration the stand-in makes in a type the facts table covers is listed there (or named as an overlay,
///   a Swift form no header shows);
/// - where a fact is certain, the stand-in agrees with it: main-actor isolation of classes and protocols, `class`
///   members, a property's optionality, and an Objective-C `@optional` requirement modelled as a requirement with a
///   default implementation.
public enum StandInCheck {
    /// One fact of the table, as the check reads it.
    public struct Fact: Sendable {
        public var kind: String
        public var container: String?
        /// The Swift name, without a disambiguating suffix such as ` [refined]`.
        public var swift: String
        public var mainActor: Bool?
        public var optional: Bool
        public var nullable: Bool?
        public var uncertain: Bool
    }

    /// A declaration in the stand-in.
    public struct Declaration: Sendable, Equatable {
        public var container: String?
        public var name: String
        public var kind: String
        public var mainActor: Bool
        public var isClassMember: Bool
        public var optionalType: Bool?
        /// A protocol requirement that an extension of the protocol implements.
        public var hasDefault: Bool
        public var line: Int
        public var file: String
    }

    public struct Report: Sendable {
        public var mismatches: [String]
        public var checked: Int
    }

    /// Reads the table: `symbols` (the facts) and `standInOverlays` (`{container, swift, why}`: declarations that
    /// come from Swift overlays or the importer, which no header shows).
    public static func facts(from data: Data) throws -> (facts: [Fact], overlays: Set<String>) {
        guard let root = try JSONSerialization.jsonObject(with: data) as? [String: Any], let symbols = root["symbols"] as? [[String: Any]] else {
            throw StandInCheckError.malformedTable("expected an object with a `symbols` array")
        }
        var facts: [Fact] = []
        for symbol in symbols {
            guard let kind = symbol["kind"] as? String, let swift = symbol["swift"] as? String else {
                throw StandInCheckError.malformedTable("a symbol without `kind` or `swift`: \(symbol)")
            }
            let mainActor: Bool? =
                switch symbol["mainActor"] {
                case let flag as Bool: flag
                default: nil  // inherited, or explained in words: nothing to compare on the member itself
                }
            let nullable = (symbol["returns"] as? [String: Any])?["nullable"] as? Bool
            // A type's entry may describe it after its name (`WKUserScriptInjectionTime (.atDocumentStart, ...)`).
            let name = ["class", "protocol", "struct", "enum", "optionSet"].contains(kind) ? String(swift.prefix { $0 != " " }) : normalized(swift)
            facts.append(Fact(
                kind: kind, container: symbol["container"] as? String, swift: name, mainActor: mainActor,
                optional: symbol["optional"] as? Bool ?? false, nullable: nullable, uncertain: symbol["uncertain"] != nil))
        }
        var overlays: Set<String> = []
        for overlay in root["standInOverlays"] as? [[String: Any]] ?? [] {
            guard let swift = overlay["swift"] as? String, overlay["why"] is String else {
                throw StandInCheckError.malformedTable("an overlay needs `swift` and `why`: \(overlay)")
            }
            overlays.insert(key(overlay["container"] as? String, normalized(swift)))
        }
        return (facts, overlays)
    }

    /// The declarations of the stand-in's sources.
    public static func declarations(in files: [SourceFile]) -> [Declaration] {
        var found: [Declaration] = []
        var defaults: Set<String> = []
        for file in files {
            let collector = DeclarationCollector(file: file.path, converter: file.converter)
            collector.walk(file.tree)
            found += collector.declarations
            defaults.formUnion(collector.extensionMembers)
        }
        // A protocol's extension holds its default implementations, not declarations of their own.
        let protocols = Set(found.filter { $0.kind == "protocol" }.map(\.name))
        found.removeAll { $0.kind == "member" && $0.container.map(protocols.contains) == true }
        return found.map { declaration in
            var marked = declaration
            marked.hasDefault = declaration.kind == "protocolRequirement" && defaults.contains(key(declaration.container, declaration.name))
            return marked
        }
    }

    /// Compares `declarations` with the table. Types the table does not cover (Foundation's, UIKit's) are left out
    /// unless a fact names one of their members.
    public static func compare(_ declarations: [Declaration], facts: [Fact], overlays: Set<String>) -> Report {
        var byKey: [String: Fact] = [:]
        for fact in facts where fact.kind != "macro" { byKey[key(fact.container, fact.swift)] = fact }
        let coveredTypes = Set(facts.compactMap { $0.container } + facts.filter { ["class", "protocol"].contains($0.kind) }.map(\.swift))
        var mismatches: [String] = []
        var checked = 0
        for declaration in declarations {
            let type = declaration.container ?? declaration.name
            guard coveredTypes.contains(type) || type.hasPrefix("WK") else { continue }
            let where_ = "\(declaration.file):\(declaration.line)"
            let shown = declaration.container.map { "\($0).\(declaration.name)" } ?? declaration.name
            guard let fact = byKey[key(declaration.container, declaration.name)] else {
                if !overlays.contains(key(declaration.container, declaration.name)) {
                    mismatches.append("\(where_): the stand-in declares \(shown), which webkit-facts.json does not list (add the fact from the header, or the overlay with why)")
                }
                continue
            }
            checked += 1
            guard !fact.uncertain else { continue }
            // A type declared as another kind of type than the header's (a class as a struct, say).
            let typeKinds: [String: Set<String>] = ["class": ["class"], "protocol": ["protocol"], "struct": ["struct"], "enum": ["enum", "struct"], "optionSet": ["struct"]]
            if let expected = typeKinds[fact.kind], !expected.contains(declaration.kind) {
                mismatches.append("\(where_): \(shown) is a \(declaration.kind) in the stand-in; the header declares a \(fact.kind)")
            }
            // A member whose own isolation the header states (WKURLSchemeTask's: none) must not claim another.
            if ["member", "protocolRequirement"].contains(declaration.kind), fact.mainActor == false, declaration.mainActor {
                mismatches.append("\(where_): \(shown) is @MainActor in the stand-in; the header gives it no UI-actor annotation")
            }
            switch declaration.kind {
            case "class", "protocol":
                if let mainActor = fact.mainActor, mainActor != declaration.mainActor {
                    mismatches.append("\(where_): \(shown) is \(declaration.mainActor ? "" : "not ")@MainActor in the stand-in; the header says \(mainActor ? "WK_SWIFT_UI_ACTOR" : "no UI-actor annotation")")
                }
            case "member", "protocolRequirement":
                let isClassKind = ["classMethod", "classProperty", "staticProperty"].contains(fact.kind)
                if isClassKind != declaration.isClassMember {
                    mismatches.append("\(where_): \(shown) is \(declaration.isClassMember ? "a class member" : "an instance member") in the stand-in; the facts say \(fact.kind)")
                }
                if let nullable = fact.nullable, let optionalType = declaration.optionalType, ["property", "classProperty"].contains(fact.kind), nullable != optionalType {
                    mismatches.append("\(where_): \(shown) is \(optionalType ? "optional" : "not optional") in the stand-in; the header says \(nullable ? "nullable" : "nonnull")")
                }
                if declaration.kind == "protocolRequirement", fact.optional != declaration.hasDefault {
                    mismatches.append("\(where_): \(shown) is \(fact.optional ? "@optional" : "required") in the header; the stand-in \(declaration.hasDefault ? "gives it a default implementation" : "gives it none")")
                }
            default:
                break
            }
        }
        return Report(mismatches: mismatches, checked: checked)
    }

    /// `name [suffix]` -> `name`; backticks dropped.
    static func normalized(_ swift: String) -> String {
        let name = swift.split(separator: " [", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? swift
        return name.replacingOccurrences(of: "`", with: "")
    }

    static func key(_ container: String?, _ name: String) -> String { (container ?? "") + "." + name }
}

public enum StandInCheckError: Error, CustomStringConvertible {
    case malformedTable(String)
    public var description: String {
        switch self {
        case .malformedTable(let why): "webkit-facts.json: \(why)"
        }
    }
}

/// Top-level types and their members, in Swift's naming (`load(_:)`, `init(frame:configuration:)`, `url`).
private final class DeclarationCollector: SyntaxVisitor {
    let file: String
    let converter: SourceLocationConverter
    var declarations: [StandInCheck.Declaration] = []
    /// `Type.member` implemented in extensions (a protocol's default implementations).
    var extensionMembers: Set<String> = []

    init(file: String, converter: SourceLocationConverter) {
        self.file = file
        self.converter = converter
        super.init(viewMode: .sourceAccurate)
    }

    private func line(_ node: some SyntaxProtocol) -> Int { converter.location(for: node.positionAfterSkippingLeadingTrivia).line }

    private static func hasMainActor(_ attributes: AttributeListSyntax) -> Bool {
        attributes.contains { element in
            element.as(AttributeSyntax.self)?.attributeName.trimmedDescription == "MainActor"
        }
    }

    private static func isClassMember(_ modifiers: DeclModifierListSyntax) -> Bool {
        modifiers.contains { ["class", "static"].contains($0.name.text) }
    }

    private func type(_ name: String, kind: String, attributes: AttributeListSyntax, node: some SyntaxProtocol) {
        declarations.append(.init(
            container: nil, name: name, kind: kind, mainActor: Self.hasMainActor(attributes), isClassMember: false, optionalType: nil,
            hasDefault: false, line: line(node), file: file))
    }

    private func members(_ block: MemberBlockSyntax, of container: String, requirement: Bool) {
        for item in block.members {
            let decl = item.decl
            let kind = requirement ? "protocolRequirement" : "member"
            if let function = decl.as(FunctionDeclSyntax.self) {
                declarations.append(.init(
                    container: container, name: Self.name(function), kind: kind, mainActor: Self.hasMainActor(function.attributes),
                    isClassMember: Self.isClassMember(function.modifiers), optionalType: nil, hasDefault: false, line: line(function), file: file))
            } else if let initializer = decl.as(InitializerDeclSyntax.self) {
                // `override init()`: NSObject's, not the header's.
                if initializer.modifiers.contains(where: { $0.name.text == "override" }) { continue }
                let labels = initializer.signature.parameterClause.parameters.map { $0.firstName.text + ":" }.joined()
                declarations.append(.init(
                    container: container, name: "init(\(labels))", kind: kind, mainActor: false, isClassMember: false, optionalType: nil,
                    hasDefault: false, line: line(initializer), file: file))
            } else if let variable = decl.as(VariableDeclSyntax.self) {
                for binding in variable.bindings {
                    guard let pattern = binding.pattern.as(IdentifierPatternSyntax.self) else { continue }
                    let annotated = binding.typeAnnotation?.type
                    let optional = annotated.map { $0.is(OptionalTypeSyntax.self) || $0.is(ImplicitlyUnwrappedOptionalTypeSyntax.self) }
                    declarations.append(.init(
                        container: container, name: pattern.identifier.text.replacingOccurrences(of: "`", with: ""), kind: kind,
                        mainActor: Self.hasMainActor(variable.attributes), isClassMember: Self.isClassMember(variable.modifiers),
                        optionalType: optional, hasDefault: false, line: line(variable), file: file))
                }
            }
        }
    }

    static func name(_ function: FunctionDeclSyntax) -> String {
        let labels = function.signature.parameterClause.parameters.map { $0.firstName.text + ":" }.joined()
        return function.name.text.replacingOccurrences(of: "`", with: "") + "(\(labels))"
    }

    override func visit(_ node: ClassDeclSyntax) -> SyntaxVisitorContinueKind {
        type(node.name.text, kind: "class", attributes: node.attributes, node: node)
        members(node.memberBlock, of: node.name.text, requirement: false)
        return .skipChildren
    }

    override func visit(_ node: ProtocolDeclSyntax) -> SyntaxVisitorContinueKind {
        type(node.name.text, kind: "protocol", attributes: node.attributes, node: node)
        members(node.memberBlock, of: node.name.text, requirement: true)
        return .skipChildren
    }

    override func visit(_ node: StructDeclSyntax) -> SyntaxVisitorContinueKind {
        type(node.name.text, kind: "struct", attributes: node.attributes, node: node)
        members(node.memberBlock, of: node.name.text, requirement: false)
        return .skipChildren
    }

    override func visit(_ node: EnumDeclSyntax) -> SyntaxVisitorContinueKind {
        type(node.name.text, kind: "enum", attributes: node.attributes, node: node)
        return .skipChildren
    }

    override func visit(_ node: ExtensionDeclSyntax) -> SyntaxVisitorContinueKind {
        let extended = node.extendedType.trimmedDescription
        for item in node.memberBlock.members {
            if let function = item.decl.as(FunctionDeclSyntax.self) { extensionMembers.insert(extended + "." + Self.name(function)) }
        }
        // Members an extension adds to a type the stand-in does not declare (Foundation's) are declarations too.
        members(node.memberBlock, of: extended, requirement: false)
        return .skipChildren
    }
}
