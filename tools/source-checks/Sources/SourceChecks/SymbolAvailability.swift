import Foundation

/// The Apple platforms the package declares (Package.swift's `platforms:`), as availability names them.
public enum ApplePlatform: String, CaseIterable, Sendable, Comparable {
    case iOS
    case macOS

    /// The name `swift package dump-package` gives the platform.
    var packageName: String { self == .iOS ? "ios" : "macos" }

    /// How `@available`, `#available` and a symbol graph's domain spell it. The app-extension names
    /// (`iOSApplicationExtension`) are not the platform: what an extension may not call, an app may.
    static func named(_ spelling: String) -> ApplePlatform? {
        switch spelling {
        case "iOS": .iOS
        case "macOS", "OSX": .macOS
        default: nil
        }
    }

    public static func < (a: ApplePlatform, b: ApplePlatform) -> Bool { a.rawValue < b.rawValue }
}

/// A version such as 16.0 or 17.4.1.
public struct PlatformVersion: Comparable, Hashable, Sendable, CustomStringConvertible {
    public let components: [Int]

    public init(_ components: [Int]) {
        var trimmed = components
        while trimmed.count > 2, trimmed.last == 0 { trimmed.removeLast() }
        while trimmed.count < 2 { trimmed.append(0) }
        self.components = trimmed
    }

    /// "16", "16.0", "17.4.1"; nil for anything else.
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map { Int($0) }
        guard !parts.isEmpty, parts.count <= 3, parts.allSatisfy({ $0 != nil && $0! >= 0 }) else { return nil }
        self.init(parts.map { $0! })
    }

    public static func < (a: PlatformVersion, b: PlatformVersion) -> Bool {
        for index in 0..<max(a.components.count, b.components.count) {
            let left = index < a.components.count ? a.components[index] : 0
            let right = index < b.components.count ? b.components[index] : 0
            if left != right { return left < right }
        }
        return false
    }

    public var description: String { components.map(String.init).joined(separator: ".") }
}

/// What a symbol needs on each Apple platform: the version it was introduced in, or that it is unavailable there.
public struct AppleAvailability: Equatable, Sendable {
    public enum Requirement: Equatable, Sendable {
        case introduced(PlatformVersion)
        case unavailable
    }

    public var requirements: [ApplePlatform: Requirement] = [:]
    /// How a finding names the symbol: `String.init(validating:as:)`.
    public var name: String
    /// The symbol graph's module: `Swift`, `Synchronization`, `FoundationEssentials`.
    public var module: String

    public init(requirements: [ApplePlatform: Requirement] = [:], name: String, module: String) {
        self.requirements = requirements
        self.name = name
        self.module = module
    }
}

/// Apple availability of every public symbol of the modules whose symbol graphs (`swift-symbolgraph-extract`
/// output, `*.symbols.json`) are loaded, keyed by USR (the symbol graph's precise identifier, which is the USR the
/// index store records).
public struct AvailabilityTable: Sendable {
    public private(set) var symbols: [String: AppleAvailability] = [:]
    /// For a protocol requirement, its default implementations (`defaultImplementationOf`): where the requirement is
    /// newer than the code's floor, the compiler ranks it below an implementation the floor allows and calls that.
    public private(set) var defaultImplementations: [String: [String]] = [:]
    /// Members by their type (or protocol) and base name (`next` for `next()` and `next(isolation:)`): the overloads
    /// the compiler chooses among when it makes a call itself (`for await` calls `next(isolation:)` where the floor
    /// allows, else `next()`).
    public private(set) var overloads: [String: [String]] = [:]
    private var baseNames: [String: String] = [:]
    /// Every symbol the graphs list, with Apple availability or without.
    private var known = Set<String>()
    /// Modules whose graphs were loaded, with how many of their symbols carry Apple availability.
    public private(set) var modules: [String: (symbols: Int, withAvailability: Int)] = [:]

    public init() {}

    public init(graphsIn directories: [String]) throws {
        for directory in directories {
            let files = try FileManager.default.contentsOfDirectory(atPath: directory)
                .filter { $0.hasSuffix(".symbols.json") }.sorted()
            guard !files.isEmpty else { throw AvailabilityInputError("no *.symbols.json in \(directory)") }
            for file in files {
                let data = try Data(contentsOf: URL(fileURLWithPath: directory).appendingPathComponent(file))
                do {
                    add(try JSONDecoder().decode(SymbolGraph.self, from: data), file: file)
                } catch let error as DecodingError {
                    throw AvailabilityInputError("\(directory)/\(file) is not a symbol graph: \(error)")
                }
            }
        }
    }

    public init(graphsIn directory: String) throws { try self.init(graphsIn: [directory]) }

    /// Adds one graph. A member that carries no availability of its own for a platform takes its parent's
    /// (a `memberOf` relationship), as the compiler does for members of an `@available` type.
    mutating func add(_ graph: SymbolGraph, file: String) {
        // `Foundation@Swift.symbols.json` extends Swift's types from Foundation: its symbols belong to Foundation.
        let module = file.hasSuffix(".symbols.json") ? String(file.dropLast(".symbols.json".count).split(separator: "@")[0]) : graph.module.name
        var parents: [String: String] = [:]
        var implemented: [String: String] = [:]
        for relationship in graph.relationships ?? [] {
            switch relationship.kind {
            case "memberOf", "requirementOf", "optionalRequirementOf": parents[relationship.source] = relationship.target
            case "defaultImplementationOf":
                defaultImplementations[relationship.target, default: []].append(relationship.source)
                implemented[relationship.source] = relationship.target
            default: continue
            }
        }
        // A default implementation (a member of a protocol extension) belongs with the requirement it implements.
        for (implementation, requirement) in implemented where parents[implementation] == nil {
            if let parent = parents[requirement] { parents[implementation] = parent }
        }
        for symbol in graph.symbols {
            known.insert(symbol.identifier.precise)
            guard let parent = parents[symbol.identifier.precise], let last = symbol.pathComponents.last else { continue }
            let base = String(last.prefix { $0 != "(" })
            overloads["\(parent) \(base)", default: []].append(symbol.identifier.precise)
            baseNames[symbol.identifier.precise] = "\(parent) \(base)"
        }
        var own: [String: AppleAvailability] = [:]
        for symbol in graph.symbols {
            var availability = AppleAvailability(
                name: symbol.pathComponents.joined(separator: "."), module: module)
            for entry in symbol.availability ?? [] {
                guard let domain = entry.domain, let platform = ApplePlatform.named(domain) else { continue }
                if entry.isUnconditionallyUnavailable == true {
                    availability.requirements[platform] = .unavailable
                } else if let introduced = entry.introduced, availability.requirements[platform] == nil {
                    availability.requirements[platform] = .introduced(introduced.version)
                }
            }
            own[symbol.identifier.precise] = availability
        }
        var counted = modules[module] ?? (0, 0)
        for (usr, var availability) in own {
            var parent = parents[usr]
            var hops = 0
            while let next = parent, hops < 16 {
                let inherited = own[next]?.requirements ?? symbols[next]?.requirements ?? [:]
                for (platform, requirement) in inherited where availability.requirements[platform] == nil {
                    availability.requirements[platform] = requirement
                }
                parent = parents[next]
                hops += 1
            }
            counted.symbols += 1
            if !availability.requirements.isEmpty {
                counted.withAvailability += 1
                symbols[usr] = availability
            }
        }
        modules[module] = counted
    }

    /// Records availability for a symbol directly (tests, and tables other than symbol graphs).
    public mutating func set(_ usr: String, _ availability: AppleAvailability) { symbols[usr] = availability }

    /// The other declarations the compiler may pick instead of `usr` where `usr` is too new: its default
    /// implementations always; for a call the compiler made itself (`implicit`), also its overloads of the same base
    /// name in the same type.
    func alternatives(to usr: String, implicit: Bool) -> [String] {
        var found = defaultImplementations[usr] ?? []
        if implicit, let key = baseNames[usr] { found += (overloads[key] ?? []).filter { $0 != usr } }
        return found
    }

    /// What `usr` needs, with no entry for a symbol the graphs list without Apple availability (`[:]`), and nil for
    /// one they do not list at all.
    func requirements(of usr: String) -> [ApplePlatform: AppleAvailability.Requirement]? {
        if let availability = symbols[usr] { return availability.requirements }
        return known.contains(usr) ? [:] : nil
    }
}

/// The parts of a symbol graph file the check reads; everything else in it is skipped.
struct SymbolGraph: Decodable {
    struct Module: Decodable { let name: String }
    struct Identifier: Decodable { let precise: String }
    struct Version: Decodable {
        let major: Int
        let minor: Int?
        let patch: Int?
        var version: PlatformVersion { PlatformVersion([major, minor ?? 0, patch ?? 0]) }
    }
    struct Availability: Decodable {
        let domain: String?
        let introduced: Version?
        let isUnconditionallyUnavailable: Bool?
    }
    struct Symbol: Decodable {
        let identifier: Identifier
        let pathComponents: [String]
        let availability: [Availability]?
    }
    struct Relationship: Decodable {
        let kind: String
        let source: String
        let target: String
    }

    let module: Module
    let symbols: [Symbol]
    let relationships: [Relationship]?
}

/// The deployment targets a package declares, read from `swift package dump-package` (so Package.swift stays the
/// one place they are written).
public struct DeploymentTargets: Sendable, Equatable {
    public var floors: [ApplePlatform: PlatformVersion]

    public init(_ floors: [ApplePlatform: PlatformVersion]) { self.floors = floors }

    public init(packageJSON data: Data) throws {
        guard let package = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw AvailabilityInputError("the package description is not a JSON object")
        }
        let declared = package["platforms"] as? [[String: Any]] ?? []
        var floors: [ApplePlatform: PlatformVersion] = [:]
        for platform in ApplePlatform.allCases {
            guard let entry = declared.first(where: { $0["platformName"] as? String == platform.packageName }) else {
                throw AvailabilityInputError("the package declares no \(platform) deployment target (platforms: in Package.swift)")
            }
            guard let text = entry["version"] as? String, let version = PlatformVersion(text) else {
                throw AvailabilityInputError("the package's \(platform) deployment target is not a version: \(entry["version"] ?? "none")")
            }
            floors[platform] = version
        }
        self.floors = floors
    }
}
