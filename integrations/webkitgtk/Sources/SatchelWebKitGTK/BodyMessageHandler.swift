import CSatchelGLib
import CWebKitGTK
import SatchelCore
import SatchelEngine
import SatchelHost

/// The hook's body-store channel in a WebKitGTK web view: `window.webkit.messageHandlers.satchelBody.postMessage({id,
/// base64, contentType, method})` stores the body and the promise resolves once it is stored, so the page sends the
/// request only when its body is waiting for it (the iOS handler's contract).
public final class BodyMessageHandler: @unchecked Sendable {
    /// Stores what the page sends (``RequestLayer/storeBody(message:)``: the same rules as the Apple adapter's handler).
    public let layer: RequestLayer
    public let name: String

    public init(layer: RequestLayer) {
        self.layer = layer
        name = layer.pageSetup?.bodyHandlerName ?? HookScript.Configuration.defaultMessageHandler
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
        let received = jsc_value_is_object(value) != 0
            ? BodyMessage(id: string("id"), base64: string("base64"), contentType: string("contentType"), method: string("method"))
            : BodyMessage(id: nil, base64: nil, contentType: nil, method: nil)
        do {
            try layer.storeBody(message: received)
            let context = jsc_value_get_context(value)
            let yes = jsc_value_new_boolean(context, 1)
            webkit_script_message_reply_return_value(reply, yes)
            g_object_unref(UnsafeMutableRawPointer(yes))
        } catch {
            webkit_script_message_reply_return_error_message(reply, error.description)
        }
    }
}
