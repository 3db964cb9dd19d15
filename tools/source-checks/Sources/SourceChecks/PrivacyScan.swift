import Foundation
import SwiftSyntax

/// One use of a required-reason API in code the iOS build compiles.
public struct RequiredReasonUse: Equatable, Sendable {
    public let category: String
    public let symbol: String
    public let path: String
    public let line: Int
}

public enum PrivacyScan {
    /// The uses of every category's symbols in the active code of `files` under `configuration` (iOS: the
    /// privacy manifest is an App Store requirement), in file and line order. Also returns the `#if`
    /// conditions that could not be evaluated.
    public static func uses(in files: [SourceFile], configuration: AppleBuildConfiguration = .iOS) -> (uses: [RequiredReasonUse], problems: [String]) {
        var symbols: [String: (category: String, use: RequiredReasonCategory.Symbol.Use)] = [:]
        for category in requiredReasonCategories {
            for symbol in category.symbols { symbols[symbol.name] = (category.key, symbol.use) }
        }
        var uses: [RequiredReasonUse] = []
        var problems: [String] = []
        for file in files {
            let (tokens, fileProblems) = file.activeTokens(under: configuration)
            problems += fileProblems
            for token in tokens {
                guard let name = token.identifierName, let symbol = symbols[name], token.isReference else { continue }
                if symbol.use == .callWithArguments, !token.isCalledWithArguments { continue }
                uses.append(RequiredReasonUse(
                    category: symbol.category, symbol: name, path: file.path, line: file.location(of: token).line))
            }
        }
        return (uses, problems)
    }
}

/// The parts of a privacy manifest (`PrivacyInfo.xcprivacy`, an XML property list) this check reads.
public struct PrivacyManifest {
    public var tracking: Bool?
    public var hasCollectedDataTypes: Bool
    /// Each `NSPrivacyAccessedAPITypes` entry: its category and reasons, in file order.
    public var accessedAPITypes: [(category: String, reasons: [String])]
    /// Entries or keys of the wrong shape.
    public var malformed: [String]

    public init(contentsOf path: String) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        try self.init(data: data)
    }

    public init(data: Data) throws {
        guard let root = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] else {
            throw ScanError("the privacy manifest is not a dictionary property list")
        }
        tracking = root["NSPrivacyTracking"] as? Bool
        hasCollectedDataTypes = root["NSPrivacyCollectedDataTypes"] is [Any]
        accessedAPITypes = []
        malformed = []
        if root["NSPrivacyTracking"] != nil, tracking == nil { malformed.append("NSPrivacyTracking is not a boolean") }
        guard let types = root["NSPrivacyAccessedAPITypes"] else { return }
        guard let entries = types as? [Any] else {
            malformed.append("NSPrivacyAccessedAPITypes is not an array")
            return
        }
        for (index, entry) in entries.enumerated() {
            guard let entry = entry as? [String: Any], let category = entry["NSPrivacyAccessedAPIType"] as? String else {
                malformed.append("NSPrivacyAccessedAPITypes[\(index)] has no NSPrivacyAccessedAPIType string")
                continue
            }
            accessedAPITypes.append((category, entry["NSPrivacyAccessedAPITypeReasons"] as? [String] ?? []))
        }
    }

    /// What is wrong with this manifest for code whose required-reason uses are `uses`: a category used but
    /// not declared (missing), declared but not used (unused), a category without a reason or with a code
    /// Apple does not define for it, tracking not false, collected data types absent. Empty when it fits.
    public func problems(for uses: [RequiredReasonUse]) -> [String] {
        var problems = malformed
        switch tracking {
        case nil: problems.append("NSPrivacyTracking is missing (expected false)")
        case true?: problems.append("NSPrivacyTracking is true (expected false)")
        case false?: break
        }
        if !hasCollectedDataTypes {
            problems.append("NSPrivacyCollectedDataTypes is missing (an empty array is fine)")
        }
        let known = Dictionary(uniqueKeysWithValues: requiredReasonCategories.map { ($0.key, $0) })
        let used = Dictionary(grouping: uses, by: \.category)
        var declared = Set<String>()
        for (category, reasons) in accessedAPITypes {
            guard let definition = known[category] else {
                problems.append("unknown: \(category) is not one of Apple's required-reason categories")
                continue
            }
            if !declared.insert(category).inserted { problems.append("duplicate: \(category) is declared twice") }
            if used[category] == nil {
                problems.append("unused: \(category) is declared, but no scanned code uses it")
            }
            if reasons.isEmpty { problems.append("\(category) has no NSPrivacyAccessedAPITypeReasons") }
            let valid = definition.reasons.map(\.code)
            for reason in reasons where !valid.contains(reason) {
                problems.append("\(category): \(reason) is not one of Apple's reasons for it (\(valid.joined(separator: ", ")))")
            }
        }
        for category in requiredReasonCategories.map(\.key) where used[category] != nil && !declared.contains(category) {
            let first = used[category]![0]
            problems.append("missing: \(category) is used (\(used[category]!.count) uses, first \(first.path):\(first.line) \(first.symbol)) but not declared")
        }
        return problems
    }
}
