import Foundation

/// Reading the trust formats, which are new and therefore strict (docs/formats.md, "Trust documents"): the size is
/// checked before a byte is parsed, the value tree is walked with a typed error naming the path of the first field
/// that is missing, unknown or of the wrong type, and the bytes must be the canonical encoding of what was read.
enum StrictJSON {
    /// The value tree of `bytes`, refused above `maxBytes` before parsing.
    static func parse(_ bytes: [UInt8], maxBytes: Int) throws(TrustError) -> CanonicalJSON {
        guard bytes.count <= maxBytes else { throw .tooLarge(bytes.count, limit: maxBytes) }
        do { return try JSONDecoder().decode(CanonicalJSON.self, from: Data(bytes)) } catch {
            throw .malformed("not JSON that canonical JSON can hold (no null, integers only)")
        }
    }

    /// The members of an object that must hold exactly `fields` (each present, nothing else).
    static func object(_ value: CanonicalJSON?, at path: String, fields: Set<String>) throws(TrustError) -> [String: CanonicalJSON] {
        let members = try anyObject(value, at: path)
        for key in members.keys.sorted() where !fields.contains(key) { throw .unknownField(join(path, key)) }
        for key in fields.sorted() where members[key] == nil { throw .missingField(join(path, key)) }
        return members
    }

    static func anyObject(_ value: CanonicalJSON?, at path: String) throws(TrustError) -> [String: CanonicalJSON] {
        guard let value else { throw .missingField(path) }
        guard case .object(let members) = value else { throw .malformed("\(path) must be an object") }
        return members
    }

    static func array(_ value: CanonicalJSON?, at path: String) throws(TrustError) -> [CanonicalJSON] {
        guard let value else { throw .missingField(path) }
        guard case .array(let elements) = value else { throw .malformed("\(path) must be an array") }
        return elements
    }

    static func string(_ value: CanonicalJSON?, at path: String) throws(TrustError) -> String {
        guard let value else { throw .missingField(path) }
        guard case .string(let text) = value else { throw .malformed("\(path) must be a string") }
        return text
    }

    static func integer(_ value: CanonicalJSON?, at path: String) throws(TrustError) -> Int64 {
        guard let value else { throw .missingField(path) }
        guard case .integer(let number) = value else { throw .malformed("\(path) must be an integer") }
        return number
    }

    /// The last check: every rule held, so the only way the bytes can differ from the model's encoding is spelling
    /// (spaces, key order, escapes, `1.0`, a repeated key, padding bits of base64).
    static func requireCanonical(_ bytes: [UInt8], _ canonical: [UInt8]) throws(TrustError) {
        guard bytes == canonical else { throw .notCanonical }
    }

    static func join(_ path: String, _ key: String) -> String { path.isEmpty ? key : path + "." + key }
}
