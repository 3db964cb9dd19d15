/// Entity tags and the conditional request rules the engine applies (RFC 9110 §8.8.3, §13).
public enum EntityTag {
    /// A file's strong ETag (docs/formats.md, "ETag"): its SHA-256 in quotes.
    public static func strong(sha256: String) -> String { "\"" + sha256 + "\"" }

    /// `If-None-Match`: true when any listed tag matches `etag` by the weak comparison (`W/` ignored), or the
    /// value is `*`. A match means 304 for GET and HEAD.
    public static func noneMatchHits(_ headerValue: String, etag: String) -> Bool {
        let trimmed = Substring(headerValue).trimmingSpaces
        if trimmed == "*" { return true }
        let target = opaque(Substring(etag))
        return tags(in: headerValue).contains { opaque($0) == target }
    }

    /// Whether an entity tag is weak (`W/"…"`).
    static func isWeak(_ tag: some StringProtocol) -> Bool { tag.hasPrefix("W/") }

    private static func opaque(_ tag: Substring) -> Substring { tag.hasPrefix("W/") ? tag.dropFirst(2) : tag }

    /// The entity tags of a comma-separated list; commas inside quotes do not split.
    static func tags(in value: String) -> [Substring] {
        var result: [Substring] = []
        var start = value.startIndex
        var inQuotes = false
        var index = value.startIndex
        while index < value.endIndex {
            let character = value[index]
            if character == "\"" { inQuotes.toggle() }
            if character == ",", !inQuotes {
                result.append(value[start..<index].trimmingSpaces)
                start = value.index(after: index)
            }
            index = value.index(after: index)
        }
        result.append(value[start...].trimmingSpaces)
        return result.filter { !$0.isEmpty }
    }
}
