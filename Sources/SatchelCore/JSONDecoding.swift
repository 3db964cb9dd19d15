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

/// The errors every schema-versioned document (``ManifestError``, ``CatalogError``) reports for the steps they
/// share; each format's enum cases witness these.
protocol VersionedDocumentError: Error {
    static func tooLarge(_ size: Int) -> Self
    static func malformed(_ why: String) -> Self
    static func missingField(_ field: String) -> Self
    static func invalidField(_ error: FieldError) -> Self
    static func unsupportedSchema(_ schema: Int) -> Self
}

/// A document's wire shape, with the `schema` every versioned Satchel document carries.
protocol VersionedWire: Decodable {
    var schema: Int { get }
}

enum VersionedDocument {
    /// The start of decoding a manifest or catalog: the size bound, then the wire shape with its field errors, then
    /// the schema. A document of another schema that does not decode as this one is reported as that schema, not as
    /// a missing or mistyped field, since its fields are not this reader's to judge.
    static func decode<Wire: VersionedWire, Failure: VersionedDocumentError>(
        _: Wire.Type, from bytes: [UInt8], maxBytes: Int, schema expected: Int, as _: Failure.Type
    ) throws(Failure) -> Wire {
        guard bytes.count <= maxBytes else { throw .tooLarge(bytes.count) }
        let wire: Wire
        do { wire = try JSONProblem.decode(Wire.self, from: bytes) } catch {
            if let schema = declaredSchema(bytes), schema != expected { throw .unsupportedSchema(schema) }
            switch error {
            case .malformed(let why): throw .malformed(why)
            case .missingField(let field): throw .missingField(field)
            case .invalidField(let field): throw .invalidField(field)
            }
        }
        guard wire.schema == expected else { throw .unsupportedSchema(wire.schema) }
        return wire
    }

    /// The `schema` a document says it has, read on its own (only on the failure path: a second parse).
    private static func declaredSchema(_ bytes: [UInt8]) -> Int? {
        struct Probe: Decodable { let schema: Int }
        return try? JSONDecoder().decode(Probe.self, from: Data(bytes)).schema
    }
}

extension VersionedDocument {
    /// The first field (as a path such as `routes[0].cache`) that `bytes` holds and its canonical re-encoding
    /// lacks: a field this reader does not know, which is why a strict document's bytes are not canonical. Nil
    /// when every field is known (the bytes differ in some other way: order, spacing, escapes). A field whose value
    /// is `null` is not reported: optional fields are omitted, and that is a canonical-form problem.
    static func unknownField(in bytes: [UInt8], canonical: [UInt8]) -> String? {
        guard let given = try? JSONSerialization.jsonObject(with: Data(bytes)),
            let known = try? JSONSerialization.jsonObject(with: Data(canonical))
        else { return nil }
        return firstExtra(given, known, path: "")
    }

    private static func firstExtra(_ given: Any, _ known: Any, path: String) -> String? {
        if let object = given as? [String: Any], let knownObject = known as? [String: Any] {
            for key in object.keys.sorted() {
                let field = path.isEmpty ? key : path + "." + key
                guard let knownValue = knownObject[key] else {
                    if object[key] is NSNull { continue }
                    return field
                }
                if let extra = firstExtra(object[key]!, knownValue, path: field) { return extra }
            }
        } else if let array = given as? [Any], let knownArray = known as? [Any], array.count == knownArray.count {
            for (index, element) in array.enumerated() {
                if let extra = firstExtra(element, knownArray[index], path: "\(path)[\(index)]") { return extra }
            }
        }
        return nil
    }
}
