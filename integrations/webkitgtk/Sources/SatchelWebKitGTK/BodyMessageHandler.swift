import CSatchelGLib
import CWebKitGTK
import SatchelCore
import SatchelEngine

/// The hook's body-store channel in a WebKitGTK web view: `window.webkit.messageHandlers.satchelBody.postMessage({id,
/// base64, contentType, method})` stores the body and the promise resolves once it is stored, so the page sends the
/// request only when its body is waiting for it (the iOS handler's contract).
public final class BodyMessageHandler: @unchecked Sendable {
    public let store: BodyStore
    public let name: String

    public init(store: BodyStore, name: String = HookScript.Configuration.defaultMessageHandler) {
        self.store = store
        self.name = name
    }

    /// Registers the handler (with reply) on `manager` (a `WebKitUserContentManager*`) in the page's world.
    public func register(on manager: OpaquePointer) {
        webkit_user_content_manager_register_script_message_handler_with_reply(manager, name, nil)
        let callback: @convention(c) (OpaquePointer?, OpaquePointer?, OpaquePointer?, gpointer?) -> gboolean = { _, value, reply, data in
            guard let value, let reply, let data else { return 0 }
            Unmanaged<BodyMessageHandler>.fromOpaque(data).takeUnretainedValue().receive(value, reply: reply)
            return 1
        }
        _ = satchel_signal_connect(
            UnsafeMutableRawPointer(manager), "script-message-with-reply-received::" + name, unsafeBitCast(callback, to: GCallback.self),
            Unmanaged.passRetained(self).toOpaque())
    }

    /// Stores the body described by `value` and answers `reply` (true, or an error message the page's promise rejects with).
    func receive(_ value: OpaquePointer, reply: OpaquePointer) {
        func string(_ name: String) -> String? {
            guard let property = jsc_value_object_get_property(value, name) else { return nil }
            defer { g_object_unref(UnsafeMutableRawPointer(property)) }
            guard jsc_value_is_string(property) != 0, let text = jsc_value_to_string(property) else { return nil }
            defer { g_free(text) }
            return String(cString: text)
        }
        guard jsc_value_is_object(value) != 0, let id = string("id"), let encoded = string("base64"), let bytes = Base64.decode(encoded) else {
            webkit_script_message_reply_return_error_message(reply, "\(name): expected {id, base64, contentType, method}")
            return
        }
        do {
            try store.put(id, StoredBody(bytes: bytes, contentType: string("contentType"), method: string("method")))
            let context = jsc_value_get_context(value)
            let yes = jsc_value_new_boolean(context, 1)
            webkit_script_message_reply_return_value(reply, yes)
            g_object_unref(UnsafeMutableRawPointer(yes))
        } catch {
            webkit_script_message_reply_return_error_message(reply, "\(name): \(error.description)")
        }
    }
}

/// Standard base64 (RFC 4648), strict: what `btoa` produces.
enum Base64 {
    static func decode(_ text: String) -> [UInt8]? {
        var length: gsize = 0
        guard text.utf8.allSatisfy({ ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2B || $0 == 0x2F || $0 == 0x3D }),
            text.utf8.count % 4 == 0, let decoded = g_base64_decode(text, &length)
        else { return text.isEmpty ? [] : nil }
        defer { g_free(decoded) }
        return Array(UnsafeBufferPointer(start: decoded, count: Int(length)))
    }
}
