/// A Semantic Versioning 2.0.0 version (https://semver.org), compared by its precedence rules.
///
/// Equality is textual (`1.0.0+a` and `1.0.0+b` are different versions that a store keeps apart);
/// ordering follows precedence, which ignores build metadata.
public struct SemanticVersion: Hashable, Sendable, Comparable, CustomStringConvertible, Codable {
    public let major: UInt64
    public let minor: UInt64
    public let patch: UInt64
    public let prerelease: [String]
    public let build: [String]

    public init(_ raw: String) throws(FieldError) {
        guard let parsed = Self.parse(raw) else {
            throw FieldError(field: "version", value: raw, reason: "must be a Semantic Versioning 2.0 version such as 1.4.0 or 2.0.0-beta.1")
        }
        self = parsed
    }

    private init(major: UInt64, minor: UInt64, patch: UInt64, prerelease: [String], build: [String]) {
        self.major = major
        self.minor = minor
        self.patch = patch
        self.prerelease = prerelease
        self.build = build
    }

    public init(from decoder: any Decoder) throws {
        let raw = try decoder.singleValueContainer().decode(String.self)
        try self.init(raw)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    public var description: String {
        var text = "\(major).\(minor).\(patch)"
        if !prerelease.isEmpty { text += "-" + prerelease.joined(separator: ".") }
        if !build.isEmpty { text += "+" + build.joined(separator: ".") }
        return text
    }

    public static func < (lhs: SemanticVersion, rhs: SemanticVersion) -> Bool {
        if lhs.major != rhs.major { return lhs.major < rhs.major }
        if lhs.minor != rhs.minor { return lhs.minor < rhs.minor }
        if lhs.patch != rhs.patch { return lhs.patch < rhs.patch }
        // A version without pre-release identifiers has higher precedence than one with them.
        switch (lhs.prerelease.isEmpty, rhs.prerelease.isEmpty) {
        case (true, true): return false
        case (true, false): return false
        case (false, true): return true
        case (false, false): break
        }
        for (a, b) in zip(lhs.prerelease, rhs.prerelease) where a != b {
            switch (UInt64(a), UInt64(b)) {
            case let (x?, y?): return x < y
            case (.some, nil): return true  // numeric identifiers sort before alphanumeric ones
            case (nil, .some): return false
            case (nil, nil): return a.utf8.lexicographicallyPrecedes(b.utf8)
            }
        }
        return lhs.prerelease.count < rhs.prerelease.count
    }

    /// True when both have the same precedence (build metadata ignored).
    public func hasSamePrecedence(as other: SemanticVersion) -> Bool { !(self < other) && !(other < self) }

    private static func parse(_ raw: String) -> SemanticVersion? {
        var rest = Substring(raw)
        var build: [String] = []
        if let plus = rest.firstIndex(of: "+") {
            let identifiers = rest[rest.index(after: plus)...].split(separator: ".", omittingEmptySubsequences: false)
            guard identifiers.allSatisfy({ !$0.isEmpty && $0.allSatisfy(isIdentifierCharacter) }) else { return nil }
            build = identifiers.map(String.init)
            rest = rest[..<plus]
        }
        var prerelease: [String] = []
        if let dash = rest.firstIndex(of: "-") {
            let identifiers = rest[rest.index(after: dash)...].split(separator: ".", omittingEmptySubsequences: false)
            for identifier in identifiers {
                guard !identifier.isEmpty, identifier.allSatisfy(isIdentifierCharacter) else { return nil }
                if identifier.allSatisfy(\.isASCIIDigit), identifier.count > 1, identifier.first == "0" { return nil }
            }
            prerelease = identifiers.map(String.init)
            rest = rest[..<dash]
        }
        let core = rest.split(separator: ".", omittingEmptySubsequences: false)
        guard core.count == 3 else { return nil }
        var numbers: [UInt64] = []
        for part in core {
            guard !part.isEmpty, part.allSatisfy(\.isASCIIDigit), part.count == 1 || part.first != "0",
                let number = UInt64(part)
            else { return nil }
            numbers.append(number)
        }
        return SemanticVersion(major: numbers[0], minor: numbers[1], patch: numbers[2], prerelease: prerelease, build: build)
    }

    private static func isIdentifierCharacter(_ c: Character) -> Bool {
        c.isASCIIDigit || ("a"..."z").contains(c) || ("A"..."Z").contains(c) || c == "-"
    }
}

extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
