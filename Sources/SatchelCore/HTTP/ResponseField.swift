/// The response fields the request layer and the hosts set or read by name: one spelling each, so no host file
/// carries a header-name literal. (The engine's own headers are written where its rules make them.)
public enum ResponseField: String, CaseIterable, Sendable {
    case contentType = "Content-Type"
    case contentLength = "Content-Length"
    case cacheControl = "Cache-Control"
    case setCookie = "Set-Cookie"
    case location = "Location"
    case etag = "ETag"
    case allow = "Allow"
}

extension HTTPHeaders {
    /// The first value of a response field.
    public subscript(_ field: ResponseField) -> String? { self[field.rawValue] }

    public func contains(_ field: ResponseField) -> Bool { self[field.rawValue] != nil }

    public func values(_ field: ResponseField) -> [String] { values(field.rawValue) }

    public mutating func set(_ field: ResponseField, _ value: String) { set(field.rawValue, value) }

    public mutating func remove(_ field: ResponseField) { remove(field.rawValue) }
}
