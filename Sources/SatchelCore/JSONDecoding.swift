import Foundation

/// What went wrong decoding one of Satchel's JSON files, with the field path, so that each format's own error
/// (``ManifestError``, ``CatalogError``) can name the field at fault.
enum JSONProblem: Error {
    case malformed(String)
    case missingField(String)
    case invalidField(FieldError)

    /// Decodes `bytes`, turning `DecodingError`s (and the ``FieldError``s our types throw from `init(from:)`)
    /// into a problem that names the field path, such as `files[3].sha256`.
    static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws(JSONProblem) -> T {
        do {
            return try JSONDecoder().decode(type, from: Data(bytes))
        } catch let error as FieldError {
            throw .invalidField(error)
        } catch let DecodingError.dataCorrupted(context) {
            if let field = context.underlyingError as? FieldError { throw .invalidField(field) }
            throw .malformed(context.codingPath.isEmpty ? "not valid JSON" : "bad value at \(path(context.codingPath))")
        } catch let DecodingError.keyNotFound(key, context) {
            throw .missingField(path(context.codingPath + [key]))
        } catch let DecodingError.typeMismatch(_, context) {
            throw .malformed("wrong type at \(path(context.codingPath))")
        } catch let DecodingError.valueNotFound(_, context) {
            throw .missingField(path(context.codingPath))
        } catch {
            throw .malformed("\(error)")
        }
    }

    private static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }
}
