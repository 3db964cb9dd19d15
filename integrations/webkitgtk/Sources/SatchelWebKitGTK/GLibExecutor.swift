import CWebKitGTK
import SatchelWebKit

/// The GLib main context as a ``SchemeTaskExecutor``: WebKitGTK calls the scheme handler, and wants every answer,
/// on the thread that runs this context. Work posted from other threads (the loader's Swift tasks) becomes an
/// idle source on the context, dispatched in the order it was posted.
///
/// Chosen over feeding Dispatch's main queue into the GLib loop: that needs libdispatch's private
/// `_dispatch_main_queue_callback_4CF` and would tie every adapter to `DispatchQueue.main`; a seam keeps the driver
/// ignorant of both and is tested with a plain `GMainLoop`.
public struct GLibMainContextExecutor: SchemeTaskExecutor, @unchecked Sendable {
    /// The context's pointer is only handed to GLib calls that are thread-safe (`g_source_attach`,
    /// `g_main_context_is_owner`).
    public var context: OpaquePointer { reference.context }
    /// A reference on the context for as long as any copy of the executor exists: work posted by a task still running
    /// after its context's owner let go must find the context there, not freed memory.
    private let reference: ContextReference

    /// The default main context (the one GTK runs).
    public init(context: OpaquePointer? = nil) {
        reference = ContextReference(context ?? g_main_context_default())
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

    private final class ContextReference: @unchecked Sendable {
        let context: OpaquePointer
        init(_ context: OpaquePointer) {
            self.context = context
            g_main_context_ref(context)
        }
        deinit { g_main_context_unref(context) }
    }

    private final class WorkBox {
        let work: @Sendable () -> Void
        init(_ work: @escaping @Sendable () -> Void) { self.work = work }
    }
}
