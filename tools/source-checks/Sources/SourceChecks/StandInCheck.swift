import Foundation
import SwiftSyntax

/// The Apple type-check's stand-ins compared with the facts read from WebKit's public headers
/// (`integrations/apple-typecheck/webkit-facts.json`), so that neither changes without the other (issue 48):
/// - every declaration a stand-in makes is a fact of the table, or an overlay (a Swift form no header shows);
/// - the stand-in agrees with each fact on main-actor isolation (of the type, and of a member that states its own),
///   `class` members, a property's optionality and settability, an Objective-C `@optional` requirement (modelled as a
///   requirement with a default implementation), the versions it is available from (its own `@available`, or its
///   type's) and its deprecation with versions;
/// - a fact marked `uncertain` fails unless an override in the table says why it may be relied on (and which of the
///   comparisons above it skips);
/// - a fact with no header behind it (UIKit's, Foundation's Apple-only API: no open headers) is marked `unverified`
///   and reported as such, never counted as checked against a header.
public enum StandInCheck {
    /// Versions by platform (`ios`, `macos`): "15.0", or "unavailable".
    public typealias Versions = [String: String]

    /// The platforms compared: the ones WebKit's `WK_API_AVAILABLE` and Satchel's apps name.
    static let platforms = ["ios", "macos"]

    /// One fact of the table, as the check reads it.
    public struct Fact: Sendable {
        public var kind: String
        public var container: String?
        /// The Swift name, without a disambiguating suffix such as ` [refined]`.
        public var swift: String
        /// The suffix naming an overload by its first parameter's type (`didReceive(_:) [Data]`), if any.
        public var overload: String?
        public var mainActor: Bool?
        public var optional: Bool
        public var nullable: Bool?
        /// A property: `readonly` in the header or not.
        public var settable: Bool?
        /// Introduced versions, the declaration's own or its type's (empty: the header states none).
        public var availability: Versions
        /// Deprecated in these versions (empty: not deprecated).
        public var deprecated: Versions
        public var header: String?
        public var commit: String?
        public var uncertain: String?
        public var unverified: String?
        /// Where the fact is in the table, for findings about the table itself.
        public var tableLine: Int

        var shown: String { container.map { "\($0).\(swift)" } ?? swift }
        var key: String { StandInCheck.key(container, swift) }
        /// The key with the overload's suffix: what an override names.
        var identity: String { key + (overload.map { " [\($0)]" } ?? "") }
    }

    /// What a fact may be compared on; an override names the comparisons an uncertain fact skips.
    public enum Comparison: String, CaseIterable, Sendable {
        case kind, mainActor, classMember, nullable, optional, settable, availability, deprecation
    }

    /// Why an uncertain fact may still be relied on.
    public struct Override: Sendable {
        public var container: String?
        public var swift: String
        public var skip: Set<Comparison>
        public var why: String
        public var tableLine: Int

        var shown: String { container.map { "\($0).\(swift)" } ?? swift }
        var identity: String { StandInCheck.key(container, StandInCheck.normalized(swift)) + (StandInCheck.overload(swift).map { " [\($0)]" } ?? "") }
    }

    /// A stand-in of a framework with no open headers (UIKit): its declarations are compared with documentation only.
    public struct UnverifiedStandIn: Sendable {
        public var framework: String
        /// Relative to the table's directory.
        public var path: String
        public var why: String
    }

    public struct Table: Sendable {
        /// How findings name the table.
        public var name: String
        public var facts: [Fact]
        /// `Type.member` keys of declarations from Swift overlays or the importer, which no header shows.
        public var overlays: Set<String>
        public var overrides: [Override]
        /// Header path -> the commit it was read at.
        public var headers: [String: String]
        public var unverifiedStandIns: [UnverifiedStandIn]
    }

    /// A declaration in a stand-in.
    public struct Declaration: Sendable, Equatable {
        public var container: String?
        public var name: String
        public var kind: String
        public var mainActor: Bool
        public var isClassMember: Bool
        public var optionalType: Bool?
        /// A variable: whether code outside the stand-in can set it (`var x: T` or `{ get set }`, not `let`, a
        /// getter, `{ get }` or a restricted setter).
        public var settable: Bool?
        /// A protocol requirement that an extension of the protocol implements.
        public var hasDefault: Bool
        /// Its own `@available` versions (a member also has its type's; see `compare`).
        public var availability: Versions
        public var deprecated: Versions
        /// `@available(*, deprecated)` or a platform's `deprecated` without a version.
        public var deprecatedWithoutVersion: Bool
        /// Parameter types as written, to tell overloads of one Swift name apart.
        public var parameterTypes: [String]
        public var line: Int
        public var file: String

        var shown: String { container.map { "\($0).\(name)" } ?? name }
        var location: String { "\(file):\(line)" }
    }

    public struct Report: Sendable {
        /// `file:line: what is wrong`, the table's problems first.
        public var mismatches: [String]
        /// Declarations compared with a fact read from a header.
        public var checked: Int
        /// Of those, how many rest on an uncertain fact that an override accepts.
        public var overridden: Int
        /// `file:line: unverified: ...` for declarations whose facts come from documentation only.
        public var unverified: [String]
    }

    // MARK: Reading the table

    /// Reads the table: `headers`, `symbols` (the facts), `overrides`, `standInOverlays` (`{container, swift, why}`)
    /// and `unverifiedStandIns`. Only a table that cannot be read throws; what is wrong in a readable one is a finding
    /// of `compare`.
    public static func table(from data: Data, named name: String = "webkit-facts.json") throws -> Table {
        guard let root = try JSONSerialization.jsonObject(with: data) as? [String: Any], let symbols = root["symbols"] as? [[String: Any]] else {
            throw StandInCheckError.malformedTable("expected an object with a `symbols` array")
        }
        var lines = TableLines(text: String(decoding: data, as: UTF8.self))
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
            // A type's entry may describe it after its name (`WKUserScriptInjectionTime (.atDocumentStart, ...)`).
            facts.append(Fact(
                kind: kind, container: symbol["container"] as? String, swift: normalized(swift), overload: overload(swift), mainActor: mainActor, optional: symbol["optional"] as? Bool ?? false,
                nullable: (symbol["returns"] as? [String: Any])?["nullable"] as? Bool, settable: symbol["settable"] as? Bool,
                availability: try versions(symbol["availability"], of: swift), deprecated: try versions(symbol["deprecated"], of: swift),
                header: symbol["header"] as? String, commit: symbol["commit"] as? String,
                uncertain: symbol["uncertain"] as? String, unverified: symbol["unverified"] as? String,
                tableLine: lines.next(key: "swift", value: swift)))
        }
        var overrides: [Override] = []
        for entry in root["overrides"] as? [[String: Any]] ?? [] {
            guard let swift = entry["swift"] as? String else { throw StandInCheckError.malformedTable("an override without `swift`: \(entry)") }
            var skip: Set<Comparison> = []
            for name in entry["skip"] as? [String] ?? [] {
                guard let comparison = Comparison(rawValue: name) else {
                    throw StandInCheckError.malformedTable("override of \(swift): no comparison is called `\(name)` (\(Comparison.allCases.map(\.rawValue)))")
                }
                skip.insert(comparison)
            }
            overrides.append(Override(
                container: entry["container"] as? String, swift: swift, skip: skip, why: entry["why"] as? String ?? "",
                tableLine: lines.next(key: "swift", value: swift)))
        }
        var overlays: Set<String> = []
        for overlay in root["standInOverlays"] as? [[String: Any]] ?? [] {
            guard let swift = overlay["swift"] as? String, overlay["why"] is String else {
                throw StandInCheckError.malformedTable("an overlay needs `swift` and `why`: \(overlay)")
            }
            overlays.insert(key(overlay["container"] as? String, normalized(swift)))
        }
        var unverifiedStandIns: [UnverifiedStandIn] = []
        for entry in root["unverifiedStandIns"] as? [[String: Any]] ?? [] {
            guard let framework = entry["framework"] as? String, let path = entry["path"] as? String, let why = entry["why"] as? String else {
                throw StandInCheckError.malformedTable("an unverified stand-in needs `framework`, `path` and `why`: \(entry)")
            }
            unverifiedStandIns.append(UnverifiedStandIn(framework: framework, path: path, why: why))
        }
        return Table(
            name: name, facts: facts, overlays: overlays, overrides: overrides, headers: root["headers"] as? [String: String] ?? [:],
            unverifiedStandIns: unverifiedStandIns)
    }

    /// `{"macos": "10.13", "ios": "11.0"}` (other keys, such as a deprecation's `message`, are not versions).
    private static func versions(_ value: Any?, of swift: String) throws -> Versions {
        guard let value, !(value is NSNull) else { return [:] }
        guard let object = value as? [String: Any] else {
            throw StandInCheckError.malformedTable("\(swift): availability and deprecation are objects of versions by platform, not \(value)")
        }
        var result: Versions = [:]
        for platform in platforms {
            guard let version = object[platform] else { continue }
            guard let text = version as? String, text == "unavailable" || text.allSatisfy({ $0.isNumber || $0 == "." }) else {
                throw StandInCheckError.malformedTable("\(swift): \(platform) must be a version such as \"15.0\" or \"unavailable\", not \(version)")
            }
            result[platform] = text
        }
        return result
    }

    // MARK: Reading the stand-ins

    /// The declarations of the stand-ins' sources.
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

    // MARK: Comparing

    /// Compares `declarations` with the table, and the table with itself.
    public static func compare(_ declarations: [Declaration], table: Table) -> Report {
        var report = Report(mismatches: tableProblems(table), checked: 0, overridden: 0, unverified: [])
        let factsByKey = Dictionary(grouping: table.facts.filter { $0.kind != "macro" }, by: \.key)
        let overrides = Dictionary(table.overrides.map { ($0.identity, $0) }, uniquingKeysWith: { first, _ in first })
        let types = Dictionary(declarations.filter { $0.container == nil }.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for declaration in declarations {
            let declarationKey = key(declaration.container, declaration.name)
            guard let candidates = factsByKey[declarationKey] else {
                if !table.overlays.contains(declarationKey) {
                    report.mismatches.append("\(declaration.location): the stand-in declares \(declaration.shown), which \(table.name) does not list (add the fact from the header, the documentation's as unverified, or the overlay with why)")
                }
                continue
            }
            guard let fact = pick(candidates, for: declaration) else {
                report.mismatches.append("\(declaration.location): \(declaration.shown) matches \(candidates.count) facts (\(candidates.compactMap(\.overload).joined(separator: ", "))) and none by its parameter types \(declaration.parameterTypes)")
                continue
            }
            if let why = fact.unverified {
                report.unverified.append("\(declaration.location): unverified: \(declaration.shown) (\(why))")
            } else {
                report.checked += 1
            }
            let override = fact.uncertain == nil ? nil : overrides[fact.identity]
            if override != nil { report.overridden += 1 }
            let container = declaration.container.flatMap { types[$0] }
            let found = Agreement(fact: fact, declaration: declaration, container: container, skip: override?.skip ?? []).mismatches
            report.mismatches += found.map { "\(declaration.location): \(declaration.shown) \($0)" }
        }
        return report
    }

    /// What is wrong in the table itself: an uncertain fact that no override accepts, an override without a reason or
    /// without an uncertain fact, a fact with no header that is not marked unverified, a commit `headers` disagrees with.
    static func tableProblems(_ table: Table) -> [String] {
        var problems: [String] = []
        let at = { (line: Int) in "\(table.name):\(line)" }
        var overridden: Set<String> = []
        for override in table.overrides {
            let shown = override.shown
            guard let fact = table.facts.first(where: { $0.identity == override.identity }) else {
                problems.append("\(at(override.tableLine)): the override of \(shown) names no fact")
                continue
            }
            if fact.uncertain == nil { problems.append("\(at(override.tableLine)): the override of \(shown) accepts a fact that is not uncertain (remove it)") }
            if override.why.trimmingCharacters(in: .whitespaces).isEmpty { problems.append("\(at(override.tableLine)): the override of \(shown) gives no reason") }
            overridden.insert(override.identity)
        }
        for fact in table.facts {
            let shown = fact.shown + (fact.overload.map { " [\($0)]" } ?? "")
            if let why = fact.uncertain, !overridden.contains(fact.identity) {
                problems.append("\(at(fact.tableLine)): \(shown) is uncertain (\(why)) and no override says why the stand-in may rely on it")
            }
            switch (fact.header, fact.unverified) {
            case (nil, nil):
                problems.append("\(at(fact.tableLine)): \(shown) has no header behind it and is not marked unverified")
            case (let header?, _?):
                problems.append("\(at(fact.tableLine)): \(shown) is read from \(header) and also marked unverified: one or the other")
            case (let header?, nil):
                guard let read = table.headers[header] else {
                    problems.append("\(at(fact.tableLine)): \(shown) is read from \(header), which `headers` does not list with its commit")
                    break
                }
                if fact.commit != read {
                    problems.append("\(at(fact.tableLine)): \(shown) was read at \(fact.commit ?? "no commit"); `headers` says \(header) was read at \(read)")
                }
            case (nil, _?):
                break
            }
        }
        return problems
    }

    /// The fact for a declaration whose Swift name several facts share: the overload whose type is a parameter's.
    private static func pick(_ candidates: [Fact], for declaration: Declaration) -> Fact? {
        guard candidates.count > 1 else { return candidates.first }
        let matching = candidates.filter { fact in
            fact.overload.map { overload in declaration.parameterTypes.contains { $0.contains(overload) } } ?? false
        }
        return matching.count == 1 ? matching[0] : nil
    }

    /// `name [suffix]` -> `name`, and a type's `Name (description)` -> `Name` (no Swift name has a space); backticks
    /// dropped.
    static func normalized(_ swift: String) -> String {
        String(swift.prefix { $0 != " " }).replacingOccurrences(of: "`", with: "")
    }

    /// `didReceive(_:) [Data]` -> `Data`; `[refined]` names no overload.
    static func overload(_ swift: String) -> String? {
        guard let open = swift.range(of: " ["), swift.hasSuffix("]") else { return nil }
        let suffix = String(swift[open.upperBound...].dropLast())
        return suffix == "refined" ? nil : suffix
    }

    static func key(_ container: String?, _ name: String) -> String { (container ?? "") + "." + name }
}

/// One declaration held against its fact: each comparison the fact allows, unless an override skips it.
private struct Agreement {
    let fact: StandInCheck.Fact
    let declaration: StandInCheck.Declaration
    /// The declaration's type, when the stand-in declares it: a member is available where its type is.
    let container: StandInCheck.Declaration?
    let skip: Set<StandInCheck.Comparison>

    var mismatches: [String] {
        var found: [String] = []
        func check(_ comparison: StandInCheck.Comparison, _ problem: String?) {
            if !skip.contains(comparison), let problem { found.append(problem) }
        }
        check(.kind, typeKind)
        check(.mainActor, mainActor)
        if ["member", "protocolRequirement"].contains(declaration.kind) {
            check(.classMember, classMember)
            check(.nullable, nullable)
            check(.optional, optionalRequirement)
            check(.settable, settable)
        }
        check(.availability, availability)
        check(.deprecation, deprecation)
        return found
    }

    /// A type declared as another kind of type than the header's (a class as a struct, say).
    private var typeKind: String? {
        let kinds: [String: Set<String>] = ["class": ["class"], "protocol": ["protocol"], "struct": ["struct"], "enum": ["enum", "struct"], "optionSet": ["struct"]]
        guard let expected = kinds[fact.kind], !expected.contains(declaration.kind) else { return nil }
        return "is a \(declaration.kind) in the stand-in; the header declares a \(fact.kind)"
    }

    private var mainActor: String? {
        switch declaration.kind {
        case "class", "protocol", "struct", "enum":
            guard let mainActor = fact.mainActor, mainActor != declaration.mainActor else { return nil }
            return "is \(declaration.mainActor ? "" : "not ")@MainActor in the stand-in; the header says \(mainActor ? "WK_SWIFT_UI_ACTOR" : "no UI-actor annotation")"
        default:
            // A member whose own isolation the header states (WKURLSchemeTask's: none) must not claim another.
            guard fact.mainActor == false, declaration.mainActor else { return nil }
            return "is @MainActor in the stand-in; the header gives it no UI-actor annotation"
        }
    }

    private var classMember: String? {
        let isClassKind = ["classMethod", "classProperty", "staticProperty"].contains(fact.kind)
        guard isClassKind != declaration.isClassMember else { return nil }
        return "is \(declaration.isClassMember ? "a class member" : "an instance member") in the stand-in; the facts say \(fact.kind)"
    }

    private var nullable: String? {
        guard let nullable = fact.nullable, let optionalType = declaration.optionalType, ["property", "classProperty"].contains(fact.kind),
              nullable != optionalType else { return nil }
        return "is \(optionalType ? "optional" : "not optional") in the stand-in; the header says \(nullable ? "nullable" : "nonnull")"
    }

    private var optionalRequirement: String? {
        guard declaration.kind == "protocolRequirement", fact.optional != declaration.hasDefault else { return nil }
        return "is \(fact.optional ? "@optional" : "required") in the header; the stand-in \(declaration.hasDefault ? "gives it a default implementation" : "gives it none")"
    }

    private var settable: String? {
        guard let settable = fact.settable, let declared = declaration.settable, settable != declared else { return nil }
        return settable
            ? "is read-only in the stand-in; the header declares it settable (no `readonly`)"
            : "is settable in the stand-in; the header declares it `readonly` (`{ get }`)"
    }

    /// The versions it is available from: its own `@available`, else its type's, platform by platform.
    private var availability: String? {
        var effective = container?.availability ?? [:]
        effective.merge(declaration.availability) { _, own in own }
        guard StandInCheck.platforms.contains(where: { !Version.same(fact.availability[$0], effective[$0]) }) else { return nil }
        let standIn = effective.isEmpty ? "states no availability" : "is available from \(Version.list(effective))"
        let header = fact.availability.isEmpty
            ? "states none (no `@available` on it or its type)" : "says \(Version.list(fact.availability)) (`@available(\(Version.list(fact.availability)), *)`)"
        return "\(standIn) in the stand-in (its own `@available` or its type's); the header \(header)"
    }

    private var deprecation: String? {
        let header = fact.deprecated
        if header.isEmpty {
            guard declaration.deprecatedWithoutVersion || !declaration.deprecated.isEmpty else { return nil }
            return "is deprecated in the stand-in; the header does not deprecate it"
        }
        let wanted = Version.list(header)
        if declaration.deprecated.isEmpty {
            return declaration.deprecatedWithoutVersion
                ? "is deprecated without a version in the stand-in; the header deprecates it in \(wanted)"
                : "is not deprecated in the stand-in; the header deprecates it in \(wanted) (`@available(iOS, introduced: ..., deprecated: ...)` for each)"
        }
        let differences = StandInCheck.platforms.compactMap { platform -> String? in
            let standIn = declaration.deprecated[platform]
            guard !Version.same(header[platform], standIn) else { return nil }
            return "\(Version.platform(platform)) \(standIn ?? "not deprecated") in the stand-in, \(header[platform] ?? "not deprecated") in the header"
        }
        guard !differences.isEmpty else { return nil }
        return "is deprecated in \(differences.joined(separator: "; "))"
    }
}

/// Versions as `@available` and the headers write them.
private enum Version {
    /// "15" and "15.0" are the same version.
    static func same(_ a: String?, _ b: String?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (let a?, let b?): components(a) == components(b)
        default: false
        }
    }

    private static func components(_ version: String) -> [String] {
        var parts = version.split(separator: ".").map(String.init)
        while parts.count > 1, parts.last == "0" { parts.removeLast() }
        return parts
    }

    static func platform(_ key: String) -> String { key == "ios" ? "iOS" : "macOS" }

    /// `macOS 10.13, iOS 11.0`, or `none`.
    static func list(_ versions: StandInCheck.Versions) -> String {
        let parts = ["macos", "ios"].compactMap { key in versions[key].map { "\(platform(key)) \($0)" } }
        return parts.isEmpty ? "none" : parts.joined(separator: ", ")
    }
}

/// Line numbers of the table's entries, found in its text in order (JSON parsing keeps none).
private struct TableLines {
    let text: String
    private var from: String.Index

    init(text: String) {
        self.text = text
        from = text.startIndex
    }

    /// The line of the next `"key": "value"` at or after the last one found; 1 if it is not found as written.
    mutating func next(key: String, value: String) -> Int {
        let escaped = value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        for separator in [": ", ":"] {
            if let range = text.range(of: "\"\(key)\"\(separator)\"\(escaped)\"", range: from..<text.endIndex) {
                from = range.upperBound
                return text[..<range.lowerBound].reduce(1) { $1 == "\n" ? $0 + 1 : $0 }
            }
        }
        return 1
    }
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

    /// `private` and `fileprivate` members are the stand-in's own plumbing, not API it declares.
    private static func isPrivate(_ modifiers: DeclModifierListSyntax) -> Bool {
        modifiers.contains { ["private", "fileprivate"].contains($0.name.text) && $0.detail == nil }
    }

    private func declaration(
        _ name: String, in container: String?, kind: String, attributes: AttributeListSyntax, modifiers: DeclModifierListSyntax?,
        node: some SyntaxProtocol, mainActor: Bool? = nil, optionalType: Bool? = nil, settable: Bool? = nil, parameterTypes: [String] = []
    ) -> StandInCheck.Declaration {
        let available = Availability(attributes)
        return StandInCheck.Declaration(
            container: container, name: name, kind: kind, mainActor: mainActor ?? Self.hasMainActor(attributes),
            isClassMember: modifiers.map(Self.isClassMember) ?? false, optionalType: optionalType, settable: settable, hasDefault: false,
            availability: available.introduced, deprecated: available.deprecated, deprecatedWithoutVersion: available.deprecatedWithoutVersion,
            parameterTypes: parameterTypes, line: line(node), file: file)
    }

    private func type(_ name: String, kind: String, attributes: AttributeListSyntax, node: some SyntaxProtocol) {
        declarations.append(declaration(name, in: nil, kind: kind, attributes: attributes, modifiers: nil, node: node))
    }

    private func members(_ block: MemberBlockSyntax, of container: String, requirement: Bool) {
        let kind = requirement ? "protocolRequirement" : "member"
        for item in block.members {
            let decl = item.decl
            if let function = decl.as(FunctionDeclSyntax.self) {
                if Self.isPrivate(function.modifiers) { continue }
                declarations.append(declaration(
                    Self.name(function), in: container, kind: kind, attributes: function.attributes, modifiers: function.modifiers, node: function,
                    parameterTypes: function.signature.parameterClause.parameters.map { $0.type.trimmedDescription }))
            } else if let initializer = decl.as(InitializerDeclSyntax.self) {
                // `override init()`: NSObject's, not the header's.
                if initializer.modifiers.contains(where: { $0.name.text == "override" }) || Self.isPrivate(initializer.modifiers) { continue }
                let parameters = initializer.signature.parameterClause.parameters
                declarations.append(declaration(
                    "init(\(parameters.map { $0.firstName.text + ":" }.joined()))", in: container, kind: kind, attributes: initializer.attributes,
                    modifiers: nil, node: initializer, mainActor: false, parameterTypes: parameters.map { $0.type.trimmedDescription }))
            } else if let variable = decl.as(VariableDeclSyntax.self) {
                if Self.isPrivate(variable.modifiers) { continue }
                for binding in variable.bindings {
                    guard let pattern = binding.pattern.as(IdentifierPatternSyntax.self) else { continue }
                    let annotated = binding.typeAnnotation?.type
                    declarations.append(declaration(
                        pattern.identifier.text.replacingOccurrences(of: "`", with: ""), in: container, kind: kind, attributes: variable.attributes,
                        modifiers: variable.modifiers, node: variable,
                        optionalType: annotated.map { $0.is(OptionalTypeSyntax.self) || $0.is(ImplicitlyUnwrappedOptionalTypeSyntax.self) },
                        settable: Self.settable(variable, binding)))
                }
            }
        }
    }

    /// Settable from outside: a `var` that is stored (observers included) or has a `set` accessor, and whose setter is
    /// not restricted (`private(set)` and the like).
    static func settable(_ variable: VariableDeclSyntax, _ binding: PatternBindingSyntax) -> Bool {
        guard variable.bindingSpecifier.tokenKind == .keyword(.var) else { return false }
        if variable.modifiers.contains(where: { $0.detail?.detail.text == "set" }) { return false }
        switch binding.accessorBlock?.accessors {
        case nil: return true
        case .getter: return false
        case .accessors(let accessors):
            return accessors.contains { ["set", "willSet", "didSet"].contains($0.accessorSpecifier.text) }
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

/// A declaration's `@available` attributes, in the forms the stand-ins use: `@available(macOS 10.13, iOS 11.0, *)`,
/// `@available(iOS, introduced: 8.0, deprecated: 15.0, message: "...")`, `@available(macOS, unavailable)` and
/// `@available(*, deprecated, message: "...")`.
private struct Availability {
    var introduced: StandInCheck.Versions = [:]
    var deprecated: StandInCheck.Versions = [:]
    var deprecatedWithoutVersion = false

    init(_ attributes: AttributeListSyntax) {
        for element in attributes {
            guard let attribute = element.as(AttributeSyntax.self), attribute.attributeName.trimmedDescription == "available",
                  case .availability(let arguments)? = attribute.arguments else { continue }
            let parts = arguments.map { $0.argument.trimmedDescription }
            guard let first = parts.first else { continue }
            if first == "*" {
                if parts.contains("deprecated") { deprecatedWithoutVersion = true }
            } else if let platform = Self.platform(first) {
                // One platform, labelled: `iOS, introduced: 8.0, deprecated: 15.0`.
                for part in parts.dropFirst() {
                    switch part {
                    case "unavailable": introduced[platform] = "unavailable"
                    case "deprecated": deprecatedWithoutVersion = true
                    default:
                        if let version = Self.labelled(part, "introduced") { introduced[platform] = version }
                        if let version = Self.labelled(part, "deprecated") { deprecated[platform] = version }
                    }
                }
            } else {
                // Shorthand: `macOS 10.13, iOS 11.0, *` (platforms not compared, such as visionOS, are passed over).
                for part in parts {
                    let words = part.split(separator: " ")
                    if words.count == 2, let platform = Self.platform(String(words[0])) { introduced[platform] = String(words[1]) }
                }
            }
        }
    }

    private static func platform(_ name: String) -> String? {
        switch name {
        case "iOS": "ios"
        case "macOS", "OSX": "macos"
        default: nil
        }
    }

    /// `deprecated: 15.0` -> `15.0`.
    private static func labelled(_ part: String, _ label: String) -> String? {
        guard part.hasPrefix(label + ":") else { return nil }
        return part.dropFirst(label.count + 1).trimmingCharacters(in: .whitespaces)
    }
}
