import CWebKitGTK
import SatchelWebKit

/// The GLib main context as a ``SchemeTaskExecutor``: WebKitGTK calls the scheme handler, and wants every answer,
/// on the thread that runs this context. Work posted from other threads (the pipeline's Swift tasks) becomes an
/// idle source on the context, dispatched in the order it was posted.
///
/// Chosen over feeding Dispatch's main queue into the GLib loop: that needs libdispatch's private
/// `_dispatch_main_queue_callback_4CF` and would tie every adapter to `DispatchQueue.main`; a seam keeps the driver
/// ignorant of both and is tested with a plain `GMainLoop`.
public struct GLibMainContextExecutor: SchemeTaskExecutor, @unchecked Sendable {
    /// The context's pointer is only handed to GLib calls that are thread-safe (`g_source_attach`,
    /// `g_main_context_is_owner`).
    public let context: OpaquePointer

    /// The default main context (the one GTK runs).
    public init(context: OpaquePointer? = nil) {
        self.context = context ?? g_main_context_default()
    }

    public func execute(_ work: @escaping @Sendable () -> Void) {
        let source = g_idle_source_new()
        g_source_set_priority(source, G_PRIORITY_DEFAULT)
        let box = Unmanaged.passRetained(WorkBox(work)).toOpaque()
        g_source_set_callback(
            source,
            { data in
                Unmanaged<WorkBox>.fromOpaque(data!).takeUnretainedValue().work()
                return gboolean(G_SOURCE_REMOVE)
            }, box,
            { data in Unmanaged<WorkBox>.fromOpaque(data!).release() })
        g_source_attach(source, context)
        g_source_unref(source)
    }

    public var isCurrent: Bool { g_main_context_is_owner(context) != 0 }

    private final class WorkBox {
        let work: @Sendable () -> Void
        init(_ work: @escaping @Sendable () -> Void) { self.work = work }
    }
}
