/// The app's name and version as every view's user agent carries it (`Shop/2.3.0`, appended to WebKit's own), so
/// pages (`navigator.userAgent`) and origins (`User-Agent`) see the same one. A product token of RFC 9110 §10.1.5:
/// name and version are tokens.
public struct ApplicationName: Sendable, Equatable, CustomStringConvertible {
    public let name: String
    public let version: String

    /// `name/version`.
    public init(parsing text: String) throws(ApplicationNameError) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, Self.isToken(parts[0]), Self.isToken(parts[1]) else { throw .invalid(text) }
        name = parts[0]
        version = parts[1]
    }

    public var description: String { "\(name)/\(version)" }

    /// RFC 9110's `token`: one or more visible ASCII characters other than delimiters.
    static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { byte in
            byte > 0x20 && byte < 0x7F && !#"(),/:;<=>?@[\]{}""#.utf8.contains(byte)
        }
    }
}

public enum ApplicationNameError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalid(String)
    public var description: String {
        switch self {
        case .invalid(let text): "application name \(text.debugDescription) must be name/version, each a token (letters, digits, !#$%&'*+-.^_`|~), like Shop/2.3.0"
        }
    }
}
