import Foundation
import SatchelCore

/// A JSON value crossing the bridge.
public enum BridgeValue: Sendable, Hashable, Codable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral,
    ExpressibleByNilLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([BridgeValue])
    case object([String: BridgeValue])

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(arrayLiteral elements: BridgeValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, BridgeValue)...) { self = .object(Dictionary(elements) { $1 }) }

    /// Parses JSON text (any value at the top, as `JSON.stringify` writes it).
    public init(json: String) throws {
        self = try JSONDecoder().decode(BridgeValue.self, from: Data(json.utf8))
    }

    /// JSON text, keys sorted.
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([BridgeValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: BridgeValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            // Whole numbers as integers, as JavaScript writes them.
            if value.rounded() == value, abs(value) < 9_007_199_254_740_992 { try container.encode(Int64(value)) } else { try container.encode(value) }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    public subscript(key: String) -> BridgeValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var number: Double? {
        if case .number(let value) = self { return value }
        return nil
    }
}

/// What a handler throws to reject a page's call with a message of its own (`error.code` is `handler-error`).
public struct BridgeError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// The native half of the JS bridge (`window.satchel`, from the hook): the app's handlers for the page's calls, and
/// the scripts the adapters run to call the page or send it events. Platform-neutral; the adapters carry messages
/// (WebKitGTK's and Apple's script message handlers with reply) and check, before they run a script in a view, that
/// the view shows one of the app's origins.
///
/// A call's message is `{id, name, params, token}`: `params` is JSON text, `token` the hook's proof (channel
/// `bridge`, bound to `id`, `name` and `params`), which only the app's own pages can make: WebKit does not say which
/// frame posted a script message, and a foreign frame never gets the hook. The reply is JSON text:
/// `{"ok":true,"result":"<JSON text>"}` or `{"ok":false,"code":"no-handler"|"handler-error"|"forbidden"|"bad-message","message":"…"}`.
public final class AppBridge: Sendable {
    public typealias Handler = @Sendable (_ params: BridgeValue) async throws -> BridgeValue

    private let handlers = Locked<[String: Handler]>([:])
    private let proofCheck: BodyProofCheck?

    /// - Parameter proofCheck: the engine's (``ResourceEngine/proofCheck``); nil accepts messages without proofs
    ///   (only for an engine that requires none).
    public init(proofCheck: BodyProofCheck?) {
        self.proofCheck = proofCheck
    }

    /// Answers the page's calls to `name` (replacing an earlier handler).
    public func register(_ name: String, _ handler: @escaping Handler) {
        handlers.withLock { $0[name] = handler }
    }

    public func unregister(_ name: String) {
        handlers.withLock { $0[name] = nil }
    }

    /// A message the page posted; returns the reply's JSON text.
    public func receive(id: String?, name: String?, params: String?, token: String?) async -> String {
        guard let id, let name, let params else { return Self.failure("bad-message", "satchel: a bridge message needs id, name and params") }
        if let proofCheck {
            do {
                try proofCheck.verify(token.map { Substring($0) }, channel: .bridge, binding: "\(id)\n\(name)\n\(params)")
            } catch {
                return Self.failure("forbidden", "satchel: \(error.reason)")
            }
        }
        guard let handler = handlers.withLock({ $0[name] }) else {
            return Self.failure("no-handler", "satchel: no native handler called \(name)")
        }
        let value: BridgeValue
        do { value = try BridgeValue(json: params) } catch { return Self.failure("bad-message", "satchel: params are not JSON") }
        do {
            let result = try await handler(value)
            return BridgeValue.object(["ok": true, "result": .string(result.json)]).json
        } catch let error as BridgeError {
            return Self.failure("handler-error", error.message)
        } catch {
            return Self.failure("handler-error", "\(error)")
        }
    }

    static func failure(_ code: String, _ message: String) -> String {
        BridgeValue.object(["ok": false, "code": .string(code), "message": .string(message)]).json
    }

    /// The script that delivers event `name` with `detail` to the page's `window.satchel.on(name, …)` listeners.
    public static func eventScript(name: String, detail: BridgeValue) -> String {
        "window.__satchelHook && window.__satchelHook.bridgeEvent && window.__satchelHook.bridgeEvent(\(BridgeValue.string(name).json), \(detail.json));"
    }

    /// The body of an async function that calls the page's handler `name` (`window.satchel.handle`) with `params`
    /// and returns its result as JSON text.
    public static func invocationScript(name: String, params: BridgeValue) -> String {
        """
        if (!window.__satchelHook || !window.__satchelHook.bridgeInvoke) throw new Error("satchel: no bridge in this page");
        const result = await window.__satchelHook.bridgeInvoke(\(BridgeValue.string(name).json), \(params.json));
        return JSON.stringify(result === undefined ? null : result);
        """
    }

    /// Whether a view showing `url` may be called: its origin is one of `origins` (the hook's).
    public static func mayCall(url: String?, origins: [String]) -> Bool {
        guard let url, let parsed = RequestURL(url) else { return false }
        let origin = "\(parsed.scheme)://\(parsed.host)" + (parsed.port.map { ":\($0)" } ?? "")
        return origins.contains(origin)
    }
}
