/// A `Cache-Control` field, parsed (RFC 9111 §5.2): every line of it, directives in order, names lower-cased,
/// arguments in token or quoted-string form unquoted. The first of a repeated directive is the one that counts
/// (§4.2.1).
public struct CacheControl: Sendable, Equatable {
    public struct Directive: Sendable, Equatable {
        public let name: String
        public let argument: String?
    }

    public let directives: [Directive]

    public init(_ headers: HTTPHeaders) {
        // The lines read where they are (no array of values first).
        var directives: [Directive] = []
        for field in headers where HTTPHeaders.equalNames(field.name, "Cache-Control") { Self.parse(field.value, into: &directives) }
        self.directives = directives
    }

    public init(values: [String]) {
        var directives: [Directive] = []
        for value in values { Self.parse(value, into: &directives) }
        self.directives = directives
    }

    init(directives: [Directive]) { self.directives = directives }

    /// The directives of a response as a cache in `mode` reads them: a shared cache honours `CDN-Cache-Control`
    /// (RFC 9213) when the response has a valid one, and then ignores `Cache-Control` and `Expires`
    /// (`targeted`); everyone else reads `Cache-Control`.
    public static func ofResponse(_ headers: HTTPHeaders, mode: CacheMode) -> (control: CacheControl, targeted: Bool) {
        // Only the directives: every miss asks this before anything else, and most answers end here (no-store).
        if mode.shared, let targeted = targeted(headers) { return (targeted, true) }
        return (CacheControl(headers), false)
    }

    /// A valid `CDN-Cache-Control` (RFC 9213), or nil.
    static func targeted(_ headers: HTTPHeaders) -> CacheControl? {
        let cdn = headers.values("CDN-Cache-Control")
        return cdn.isEmpty ? nil : TargetedCacheControl.parse(cdn.joined(separator: ", "))
    }

    public var isEmpty: Bool { directives.isEmpty }

    public func has(_ name: String) -> Bool { directives.contains { $0.name == name } }

    /// The argument of the first `name` directive; nil when absent or given without one.
    public func argument(_ name: String) -> String? { directives.first { $0.name == name }?.argument }

    /// A delta-seconds argument (§1.2.2).
    public enum Seconds: Equatable, Sendable {
        case value(Int64)
        /// Present, but not a non-negative integer (`max-age=1.5`, `max-age=-1`, `max-age` alone).
        case invalid
    }

    /// The first `name` directive's delta-seconds; nil when absent. Values past 2^31 are 2^31 (§1.2.2).
    public func seconds(_ name: String) -> Seconds? {
        guard let directive = directives.first(where: { $0.name == name }) else { return nil }
        guard let argument = directive.argument, !argument.isEmpty, argument.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return .invalid }
        let digits = argument.drop { $0 == "0" }
        if digits.utf8.count > 10 { return .value(Self.maxDelta) }
        return .value(min(Int64(digits) ?? 0, Self.maxDelta))
    }

    /// The greatest delta-seconds a cache needs to represent (RFC 9111 §1.2.2).
    public static let maxDelta: Int64 = 2_147_483_648

    /// The field names a qualified directive lists (`no-cache="Set-Cookie, X-A"`), lower-cased; nil when the
    /// directive is absent, empty when it is unqualified.
    public func fieldNames(_ name: String) -> [String]? {
        guard let directive = directives.first(where: { $0.name == name }) else { return nil }
        guard let argument = directive.argument else { return [] }
        return argument.split(separator: ",").map { $0.trimmingSpaces.lowercased() }.filter { !$0.isEmpty }
    }

    /// `bytes[range]` without the spaces and tabs at either end.
    private static func trimmed(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Range<Int> {
        var (lower, upper) = (range.lowerBound, range.upperBound)
        while lower < upper, bytes[lower] == 0x20 || bytes[lower] == 0x09 { lower += 1 }
        while upper > lower, bytes[upper - 1] == 0x20 || bytes[upper - 1] == 0x09 { upper -= 1 }
        return lower..<upper
    }

    private static func string(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    /// Splits one field line into directives: commas outside quotes separate them; `name`, `name=token`,
    /// `name="quoted"` (with `\` escapes). Read in place from the value's UTF-8 (every miss through the cache
    /// parses the response's field): only the names and arguments become strings.
    private static func parse(_ value: String, into directives: inout [Directive]) {
        var value = value
        value.withUTF8 { bytes in
            var index = 0
            while index < bytes.count {
                let nameStart = index
                while index < bytes.count, bytes[index] != 0x2C, bytes[index] != 0x3D { index += 1 }
                let nameRange = trimmed(bytes, nameStart..<index)
                let hasUpper = bytes[nameRange].contains { $0 >= 0x41 && $0 <= 0x5A }
                let name = hasUpper ? string(bytes, nameRange).lowercased() : string(bytes, nameRange)
                var argument: String?
                if index < bytes.count, bytes[index] == 0x3D {
                    index += 1
                    while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
                    if index < bytes.count, bytes[index] == 0x22 {
                        index += 1
                        var quoted: [UInt8] = []
                        while index < bytes.count, bytes[index] != 0x22 {
                            if bytes[index] == 0x5C, index + 1 < bytes.count { index += 1 }
                            quoted.append(bytes[index])
                            index += 1
                        }
                        index += 1
                        argument = String(decoding: quoted, as: UTF8.self)
                        while index < bytes.count, bytes[index] != 0x2C { index += 1 }
                    } else {
                        let tokenStart = index
                        while index < bytes.count, bytes[index] != 0x2C { index += 1 }
                        argument = string(bytes, trimmed(bytes, tokenStart..<index))
                    }
                }
                if !name.isEmpty { directives.append(Directive(name: name, argument: argument)) }
                index += 1  // the comma
            }
        }
    }
}

/// A targeted cache-control field (RFC 9213): a Structured Field Dictionary (RFC 8941 §3.2), strictly parsed; a
/// value that is not one makes the whole field void, so the cache falls back to `Cache-Control`.
enum TargetedCacheControl {
    static let secondsDirectives: Set<String> = ["max-age", "s-maxage", "stale-while-revalidate", "stale-if-error"]

    static func parse(_ text: String) -> CacheControl? {
        var bytes = Array(text.utf8)[...]
        var directives: [CacheControl.Directive] = []
        func skip(_ set: Set<UInt8>) { while let first = bytes.first, set.contains(first) { bytes = bytes.dropFirst() } }
        func key() -> String? {
            guard let first = bytes.first, (first >= 0x61 && first <= 0x7A) || first == 0x2A else { return nil }
            var name: [UInt8] = []
            while let byte = bytes.first, (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || "_-.*".utf8.contains(byte) {
                name.append(byte)
                bytes = bytes.dropFirst()
            }
            return String(decoding: name, as: UTF8.self)
        }
        /// A bare item: its argument (integers and tokens as written, strings unquoted), or nil for a boolean true.
        func bareItem() -> (argument: String?, valid: Bool) {
            guard let first = bytes.first else { return (nil, false) }
            if first == 0x22 {
                bytes = bytes.dropFirst()
                var value: [UInt8] = []
                while let byte = bytes.first {
                    bytes = bytes.dropFirst()
                    if byte == 0x22 { return (String(decoding: value, as: UTF8.self), true) }
                    if byte == 0x5C {
                        guard let escaped = bytes.first, escaped == 0x22 || escaped == 0x5C else { return (nil, false) }
                        bytes = bytes.dropFirst()
                        value.append(escaped)
                    } else {
                        guard byte >= 0x20, byte < 0x7F else { return (nil, false) }
                        value.append(byte)
                    }
                }
                return (nil, false)
            }
            if first == 0x2D || (first >= 0x30 && first <= 0x39) {
                var number: [UInt8] = []
                while let byte = bytes.first, byte == 0x2D || byte == 0x2E || (byte >= 0x30 && byte <= 0x39) {
                    number.append(byte)
                    bytes = bytes.dropFirst()
                }
                let digits = number.filter { $0 >= 0x30 && $0 <= 0x39 }.count
                guard digits > 0, digits <= 15, number.dropFirst().allSatisfy({ $0 != 0x2D }) else { return (nil, false) }
                return (String(decoding: number, as: UTF8.self), true)
            }
            if first == 0x3F {
                bytes = bytes.dropFirst()
                guard let value = bytes.first, value == 0x30 || value == 0x31 else { return (nil, false) }
                bytes = bytes.dropFirst()
                return (value == 0x31 ? nil : "?0", true)
            }
            if (first >= 0x41 && first <= 0x5A) || (first >= 0x61 && first <= 0x7A) || first == 0x2A {
                var token: [UInt8] = []
                while let byte = bytes.first, byte > 0x20, byte < 0x7F, !",;=\"()<>@[]{}\\".utf8.contains(byte) || byte == 0x3A || byte == 0x2F {
                    token.append(byte)
                    bytes = bytes.dropFirst()
                }
                return (String(decoding: token, as: UTF8.self), true)
            }
            return (nil, false)
        }
        func parameters() -> Bool {
            while bytes.first == 0x3B {
                bytes = bytes.dropFirst()
                skip([0x20])
                guard key() != nil else { return false }
                if bytes.first == 0x3D {
                    bytes = bytes.dropFirst()
                    guard bareItem().valid else { return false }
                }
            }
            return true
        }
        skip([0x20, 0x09])
        while !bytes.isEmpty {
            guard let name = key() else { return nil }
            var argument: String?
            if bytes.first == 0x3D {
                bytes = bytes.dropFirst()
                let quoted = bytes.first == 0x22
                let item = bareItem()
                guard item.valid else { return nil }
                // A number of seconds must be an Integer: a String there is the wrong type, an invalid directive.
                argument = quoted && Self.secondsDirectives.contains(name) ? "\"" : item.argument
            }
            guard parameters() else { return nil }
            // A later member of the same name replaces an earlier one (RFC 8941 §4.2.2).
            directives.removeAll { $0.name == name }
            directives.append(CacheControl.Directive(name: name, argument: argument))
            skip([0x20, 0x09])
            guard let separator = bytes.first else { break }
            guard separator == 0x2C else { return nil }
            bytes = bytes.dropFirst()
            skip([0x20, 0x09])
            if bytes.isEmpty { return nil }
        }
        return CacheControl(directives: directives)
    }
}

