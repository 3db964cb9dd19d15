import CSatchelGLib
import CWebKitGTK
import SatchelWebKit

/// The JS bridge's messages in a WebKitGTK web view: `window.webkit.messageHandlers.satchelBridge.postMessage({id, name,
/// params, token})` (the hook's `window.satchel.call`) goes to ``AppBridge``, whose reply (JSON text) resolves the
/// page's promise. The handler answers on the main context's thread when the app's handler is done, however long
/// that takes, and many calls can be in flight at once.
final class BridgeMessageHandler: @unchecked Sendable {
    let bridge: AppBridge
    let name: String
    let executor: GLibMainContextExecutor

    init(bridge: AppBridge, name: String, executor: GLibMainContextExecutor) {
        self.bridge = bridge
        self.name = name
        self.executor = executor
    }

    /// Registers the handler (with reply) on `manager` (a `WebKitUserContentManager*`) in the page's world.
    func register(on manager: OpaquePointer) {
        webkit_user_content_manager_register_script_message_handler_with_reply(manager, name, nil)
        let callback: @convention(c) (OpaquePointer?, OpaquePointer?, OpaquePointer?, gpointer?) -> gboolean = { _, value, reply, data in
            guard let value, let reply, let data else { return 0 }
            Unmanaged<BridgeMessageHandler>.fromOpaque(data).takeUnretainedValue().receive(value, reply: reply)
            return 1
        }
        _ = satchel_signal_connect(
            UnsafeMutableRawPointer(manager), "script-message-with-reply-received::" + name, unsafeBitCast(callback, to: GCallback.self),
            Unmanaged.passRetained(self).toOpaque())
    }

    private func receive(_ value: OpaquePointer, reply: OpaquePointer) {
        func string(_ property: String) -> String? {
            guard jsc_value_is_object(value) != 0, let field = jsc_value_object_get_property(value, property) else { return nil }
            defer { g_object_unref(UnsafeMutableRawPointer(field)) }
            guard jsc_value_is_string(field) != 0, let text = jsc_value_to_string(field) else { return nil }
            defer { g_free(text) }
            return String(cString: text)
        }
        let message = (id: string("id"), name: string("name"), params: string("params"), token: string("token"))
        // Kept until the answer: the reply and the context its value is made in.
        let pending = PendingReply(reply: webkit_script_message_reply_ref(reply), context: jsc_value_get_context(value))
        Task { [bridge, executor] in
            let answer = await bridge.receive(id: message.id, name: message.name, params: message.params, token: message.token)
            executor.execute { pending.answer(answer) }
        }
    }

    private final class PendingReply: @unchecked Sendable {
        let reply: OpaquePointer
        let context: OpaquePointer

        init(reply: OpaquePointer, context: OpaquePointer) {
            self.reply = reply
            self.context = context
            g_object_ref(UnsafeMutableRawPointer(context))
        }

        /// On the main context's thread, once; lets go of the reply and the context there (GObjects of WebKit's).
        func answer(_ text: String) {
            let value = jsc_value_new_string(context, text)
            webkit_script_message_reply_return_value(reply, value)
            g_object_unref(UnsafeMutableRawPointer(value))
            webkit_script_message_reply_unref(reply)
            g_object_unref(UnsafeMutableRawPointer(context))
        }
    }
}
