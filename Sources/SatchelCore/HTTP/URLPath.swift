/// Turns a URL's raw path into a package path, the one way the engine maps URLs to files:
/// percent-decode exactly once, refuse anything that could leave the package (encoded `/` `\` or NUL, bytes
/// that are not UTF-8 such as overlong encodings, `.` and `..` segments), then NFC-normalise through
/// ``SafePath``. Query and fragment are never part of it (``RequestURL`` has already split them off).
public enum URLPath {
    /// Why a URL path cannot name a package file.
    public enum Refusal: Error, Equatable, Sendable {
        case badPercentEncoding
        case encodedSeparator
        case notUTF8
        case unsafe(SafePathError)
    }

    /// Decodes a raw path (which starts with `/`) into segments' text, once.
    public static func decode(_ raw: String) throws(Refusal) -> String {
        if !raw.utf8.contains(UInt8(ascii: "%")) { return raw }
        let bytes: [UInt8]
        do {
            // An encoded separator or NUL is never a legitimate file name byte: refuse rather than decode it
            // into a path that the raw URL did not show.
            bytes = try PercentDecoding.decode(Substring(raw)) { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "\\") || $0 == 0 }
        } catch .badEscape {
            throw .badPercentEncoding
        } catch {
            throw .encodedSeparator
        }
        guard let text = UTF8Text.decode(bytes) else { throw .notUTF8 }
        return text
    }

    /// The package-relative file path for a URL path under `prefix` (which starts and ends with `/`), or nil
    /// when the URL names the package root (the caller serves the entry).
    /// - `dir/` maps to `dir/index.html`.
    public static func filePath(forDecoded decoded: String, under prefix: String) throws(Refusal) -> SafePath? {
        var relative = Substring(decoded)
        if decoded.utf8.starts(with: prefix.utf8) {
            relative = Substring(decoded.utf8.dropFirst(prefix.utf8.count))
        } else if decoded + "/" == prefix {
            return nil
        } else {
            throw .unsafe(SafePathError(path: decoded, reason: .absolute))
        }
        if relative.isEmpty { return nil }
        var path = String(relative)
        if path.utf8.last == UInt8(ascii: "/") { path += "index.html" }
        do { return try SafePath(normalizing: path) } catch { throw .unsafe(error) }
    }
}
