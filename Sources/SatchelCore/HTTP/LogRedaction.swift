/// What a log or a status page may show of a request-target: the path as it was, and a query whose secret values
/// are replaced. One rule for the access log, the status page and `status.json`.
///
/// Redacted: the body channels' parameters (`POST_DATA` carries a form's fields, passwords included; the body
/// id and token prove where a body came from), any parameter named like a credential (`password`, `token`,
/// `session`, `key`, `code`…, compared case-insensitively after percent-decoding), and user information in an
/// absolute URL. Names stay, so a log still says what kind of request it was.
public enum LogRedaction {
    public static let placeholder = "[redacted]"

    /// Parts of parameter names that mark a credential (lower-case).
    static let credentialWords = [
        "pass", "pwd", "secret", "token", "auth", "key", "session", "sessid", "sid", "cred", "otp", "code", "sig", "jwt",
        "bearer", "cookie", "ticket",
    ]

    /// - Parameters:
    ///   - target: an origin-form target (`/path?query`) or an absolute URL.
    ///   - secretParameters: parameter names whose values are always redacted (the body channels').
    public static func redacting(_ target: String, secretParameters: [String]) -> String {
        // Most targets have neither a query nor user information: nothing to look at (this runs per request).
        guard target.utf8.contains(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "@") }) else { return target }
        var text = target
        // user:password@ in an absolute URL.
        if let scheme = text.range(of: "://") {
            let authorityStart = scheme.upperBound
            let authorityEnd = text[authorityStart...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? text.endIndex
            if let at = text[authorityStart..<authorityEnd].lastIndex(of: "@") {
                text.replaceSubrange(authorityStart..<text.index(after: at), with: placeholder + "@")
            }
        }
        guard let question = text.firstIndex(of: "?") else { return text }
        let fragmentStart = text[question...].firstIndex(of: "#") ?? text.endIndex
        let pairs = text[text.index(after: question)..<fragmentStart].split(separator: "&", omittingEmptySubsequences: false)
        let redacted = pairs.map { pair -> String in
            guard let equals = pair.firstIndex(of: "="), pair.index(after: equals) < pair.endIndex else { return String(pair) }
            let name = pair[..<equals]
            return isSecret(name, secretParameters: secretParameters) ? name + "=" + placeholder : String(pair)
        }
        return String(text[...question]) + redacted.joined(separator: "&") + String(text[fragmentStart...])
    }

    static func isSecret(_ rawName: Substring, secretParameters: [String]) -> Bool {
        if secretParameters.contains(where: { $0 == rawName }) { return true }
        let decoded = (try? PercentDecoding.decode(rawName)).map { String(decoding: $0, as: UTF8.self) } ?? String(rawName)
        let lower = decoded.lowercased()
        if secretParameters.contains(where: { $0.lowercased() == lower }) { return true }
        return credentialWords.contains { lower.contains($0) }
    }
}
