import Foundation
import RawStructuredFieldValues

/// A release channel's name: it becomes a path segment (`channels/<name>/catalog.json`), so it is kept to a small,
/// safe alphabet. `production` is the default catalog's.
public struct ReleaseChannel: Hashable, Sendable, CustomStringConvertible {
    public static let production = ReleaseChannel(unchecked: "production")
    public let name: String

    public init(_ name: String) throws(FieldError) {
        let bytes = Array(name.utf8)
        guard (1...64).contains(bytes.count), bytes.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D || $0 == 0x2E || $0 == 0x5F }),
            bytes[0] != 0x2E
        else { throw FieldError(field: "channel", value: name, reason: "must be 1-64 of a-z, 0-9, '-', '_' and '.', not starting with '.'") }
        self.name = name
    }

    private init(unchecked name: String) { self.name = name }

    public var description: String { name }

    /// Where this channel's catalog is, relative to the default (production) catalog's URL.
    public var relativeCatalogPath: String { self == .production ? Catalog.fileName : "channels/\(name)/\(Catalog.fileName)" }
}

/// What a device tells the release side at each catalog check (docs/formats.md, "Device reports"): per package, the
/// release offered to it with its cohort, its active version and state, and the versions that failed on it and why,
/// each under the device's per-release token. No install id, no personal data.
public struct DeviceReport: Hashable, Sendable {
    public enum Role: String, Hashable, Sendable, Codable { case offered, active, failed }

    public struct Item: Hashable, Sendable {
        public var id: PackageID
        public var role: Role
        public var version: SemanticVersion
        /// 16 lower-case hex digits: ``ReleaseCohort/token(_:_:)`` for this id and version.
        public var token: String
        /// With `offered`: the device's cohort (0-999) for that release.
        public var cohort: Int?
        /// With `active`: `trial`, `confirmed` or `built-in`.
        public var state: String?
        /// With `failed`: `trial` (launches ran out or the app rolled back), `revoked`, `verification` or
        /// `install-<kind>` (a refused install, by kind of error).
        public var why: String?

        public init(id: PackageID, role: Role, version: SemanticVersion, token: String, cohort: Int? = nil, state: String? = nil, why: String? = nil) {
            self.id = id
            self.role = role
            self.version = version
            self.token = token
            self.cohort = cohort
            self.state = state
            self.why = why
        }
    }

    public static let channelHeader = "Satchel-Channel"
    public static let reportHeader = "Satchel-Report"
    /// Bounds, so a report always fits a request header (about 100 bytes an item).
    public static let maxItems = 24
    public static let maxHeaderBytes = 4096

    public var channel: ReleaseChannel
    public var items: [Item]

    public init(channel: ReleaseChannel, items: [Item]) {
        self.channel = channel
        self.items = Array(items.prefix(Self.maxItems))
    }

    // MARK: Headers (RFC 9651 structured fields)

    /// `Satchel-Channel: "beta"` and `Satchel-Report: "shop";role=active;version="1.1.0";state=trial;token="…", …`.
    public var headerFields: [(name: String, value: String)] {
        var channelSerializer = StructuredFieldValueSerializer()
        var listSerializer = StructuredFieldValueSerializer()
        let channelValue = (try? channelSerializer.writeItemFieldValue(RawStructuredFieldValues.Item(bareItem: RFC9651BareItem.string(channel.name), parameters: OrderedMap<String, RFC9651BareItem>()))) ?? []
        let list: [ItemOrInnerList] = items.map { item in
            var parameters = OrderedMap<String, RFC9651BareItem>()
            parameters["role"] = .token(item.role.rawValue)
            parameters["version"] = .string(item.version.description)
            parameters["token"] = .string(item.token)
            if let cohort = item.cohort { parameters["cohort"] = .integer(Int64(cohort)) }
            if let state = item.state { parameters["state"] = .token(state) }
            if let why = item.why { parameters["why"] = .token(why) }
            return .item(RawStructuredFieldValues.Item(bareItem: .string(item.id.value), parameters: parameters))
        }
        let listValue = (try? listSerializer.writeListFieldValue(list)) ?? []
        return [(Self.channelHeader, String(decoding: channelValue, as: UTF8.self)), (Self.reportHeader, String(decoding: listValue, as: UTF8.self))]
    }

    /// Reads the two headers as a device sent them (or as an access log recorded them).
    public static func parse(channel: String?, report: String) throws(DeviceReportError) -> DeviceReport {
        guard report.utf8.count <= maxHeaderBytes else { throw .malformed("\(reportHeader) is \(report.utf8.count) bytes, more than \(maxHeaderBytes)") }
        var name = ReleaseChannel.production
        if let channel, !channel.isEmpty {
            var parser = StructuredFieldValueParser(Array(channel.utf8))
            guard let item = try? parser.parseItemFieldValue(), case .string(let text) = item.rfc9651BareItem else {
                throw .malformed("\(channelHeader) is not a structured-field string")
            }
            do { name = try ReleaseChannel(text) } catch { throw .malformed("\(error)") }
        }
        var parser = StructuredFieldValueParser(Array(report.utf8))
        let list: [ItemOrInnerList]
        do { list = try parser.parseListFieldValue() } catch { throw .malformed("\(reportHeader) is not a structured-field list: \(error)") }
        guard list.count <= maxItems else { throw .malformed("\(list.count) items, more than \(maxItems)") }
        var items: [Item] = []
        for member in list {
            guard case .item(let raw) = member, case .string(let id) = raw.rfc9651BareItem else { throw .malformed("an item is not a package id string") }
            let parameters = raw.rfc9651Parameters
            func string(_ key: String) -> String? {
                switch parameters[key] {
                case .string(let text)?, .token(let text)?: text
                default: nil
                }
            }
            var cohort: Int?
            if case .integer(let value)? = parameters["cohort"] { cohort = Int(value) }
            guard let roleText = string("role"), let role = Role(rawValue: roleText), let versionText = string("version"), let token = string("token") else {
                throw .malformed("item \(id.debugDescription) lacks role, version or token")
            }
            do {
                items.append(try Item(id: PackageID(id), role: role, version: SemanticVersion(versionText), token: token, cohort: cohort, state: string("state"), why: string("why")))
            } catch { throw .malformed("item \(id.debugDescription): \(error)") }
        }
        let report = DeviceReport(channel: name, items: items)
        try report.check()
        return report
    }

    // MARK: JSON (the POST body and each line of a reports file)

    public var canonicalJSON: CanonicalJSON {
        .object([
            "channel": .string(channel.name),
            "items": .array(items.map { item in
                var fields: [String: CanonicalJSON] = [
                    "id": .string(item.id.value), "role": .string(item.role.rawValue), "version": .string(item.version.description),
                    "token": .string(item.token),
                ]
                if let cohort = item.cohort { fields["cohort"] = .integer(Int64(cohort)) }
                if let state = item.state { fields["state"] = .string(state) }
                if let why = item.why { fields["why"] = .string(why) }
                return .object(fields)
            }),
        ])
    }

    private struct Wire: Decodable {
        struct WireItem: Decodable {
            let id: PackageID
            let role: Role
            let version: SemanticVersion
            let token: String
            let cohort: Int?
            let state: String?
            let why: String?
        }
        let channel: String
        let items: [WireItem]
    }

    public static func decode(_ bytes: [UInt8]) throws(DeviceReportError) -> DeviceReport {
        guard bytes.count <= 16 << 10 else { throw .malformed("\(bytes.count) bytes, more than 16 KiB") }
        let wire: Wire
        do { wire = try JSONDecoder().decode(Wire.self, from: Data(bytes)) } catch { throw .malformed("\(error)") }
        guard wire.items.count <= maxItems else { throw .malformed("\(wire.items.count) items, more than \(maxItems)") }
        let channel: ReleaseChannel
        do { channel = try ReleaseChannel(wire.channel) } catch { throw .malformed("\(error)") }
        let report = DeviceReport(channel: channel, items: wire.items.map {
            Item(id: $0.id, role: $0.role, version: $0.version, token: $0.token, cohort: $0.cohort, state: $0.state, why: $0.why)
        })
        try report.check()
        return report
    }

    func check() throws(DeviceReportError) {
        for item in items {
            guard item.token.utf8.count == 16, item.token.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
                throw .malformed("token \(item.token.debugDescription) of \(item.id) is not 16 hex digits")
            }
            if let cohort = item.cohort, !(0..<1000).contains(cohort) { throw .malformed("cohort \(cohort) is not 0-999") }
            for word in [item.state, item.why].compactMap({ $0 }) {
                let bytes = Array(word.utf8)
                guard (1...40).contains(bytes.count), (0x61...0x7A).contains(bytes[0]),
                    bytes.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D })
                else { throw .malformed("\(word.debugDescription) is not a lower-case word") }
            }
        }
    }
}

public enum DeviceReportError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformed(String)

    public var description: String {
        switch self {
        case .malformed(let why): "device report is malformed: \(why)"
        }
    }
}
