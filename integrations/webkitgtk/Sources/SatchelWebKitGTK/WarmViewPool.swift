import CSatchelGLib
import CWebKitGTK

/// Web views whose web process already runs, so that opening a page does not wait for WebKit to start one (measured
/// here: a `satchel://` page in a warm view loads in 6-12 ms, against about 180 ms when the load starts the process).
///
/// WebKitGTK has no prewarm call: a view is warmed by loading `about:blank` in it, and is warm once that load
/// finished. Views come from ``SatchelWebContext/makeWebView()`` (one network session and cookie store, the hook, the
/// white-screen guard). A view handed out is never taken back for another page (WebKitGTK cannot clear its
/// back-forward list, so the next page could go back into the last one): ``giveBack(_:)`` drops it and warms a
/// replacement. How many views, and when to warm them, is the app's choice: ``capacity``, ``refill``, and ``warm()``
/// to fill the pool when it suits the app (after launch, once the first page painted). Main context thread only.
public final class WarmViewPool {
    public let context: SatchelWebContext
    /// How many views ``warm()`` keeps ready.
    public var capacity: Int
    public var refill: Refill

    /// When the pool warms replacements by itself (``warm()`` always does).
    public enum Refill: Sendable {
        /// When a view is given back (the default): a view in use and a warm one in waiting, at most.
        case onGiveBack
        /// As soon as a view is taken: the next page opens warm too, at the cost of one more web process meanwhile.
        case onTake
        /// Only when the app calls ``warm()``.
        case manual
    }

    /// Views warming or warm, oldest first. Each holds one strong reference of the pool's.
    private var views: [Entry] = []
    private var readyWaiters: [() -> Void] = []

    private final class Entry {
        let view: UnsafeMutablePointer<WebKitWebView>
        var ready = false
        var handlers: [gulong] = []
        init(view: UnsafeMutablePointer<WebKitWebView>) { self.view = view }
    }

    public init(context: SatchelWebContext, capacity: Int = 1, refill: Refill = .onGiveBack) {
        self.context = context
        self.capacity = max(0, capacity)
        self.refill = refill
        context.register(self)
    }

    deinit {
        for entry in views { release(entry) }
    }

    /// Drops the views (warm or warming) that show a URL `shows` is true for, and warms replacements when the pool
    /// refills by itself: after a rollback, a view that loaded a page of the version rolled back must not be handed out.
    func drop(where shows: (String) -> Bool) {
        let dropped = views.filter { entry in webkit_web_view_get_uri(entry.view).map { shows(String(cString: $0)) } ?? false }
        guard !dropped.isEmpty else { return }
        views.removeAll { entry in dropped.contains { $0 === entry } }
        for entry in dropped { release(entry) }
        if refill != .manual { warm() }
    }

    /// Views whose web process has started (their `about:blank` load finished).
    public var readyCount: Int { views.filter(\.ready).count }
    /// Views in the pool, warm or still warming.
    public var count: Int { views.count }

    /// Starts warming views until the pool holds ``capacity`` of them (warm or warming).
    public func warm() {
        while views.count < capacity {
            let view = context.makeWebView()
            // The pool owns the view until it hands it out (a GtkWidget starts with a floating reference).
            g_object_ref_sink(UnsafeMutableRawPointer(view))
            let entry = Entry(view: view)
            let loadChanged: @convention(c) (UnsafeMutableRawPointer?, WebKitLoadEvent, gpointer?) -> Void = { _, event, data in
                guard event == WEBKIT_LOAD_FINISHED else { return }
                Unmanaged<WarmViewPool>.fromOpaque(data!).takeUnretainedValue().warmed()
            }
            let me = Unmanaged.passUnretained(self).toOpaque()
            entry.handlers.append(satchel_signal_connect(UnsafeMutableRawPointer(view), "load-changed", unsafeBitCast(loadChanged, to: GCallback.self), me))
            // A waiting view whose process died is no longer warm: it warms again.
            let terminated: @convention(c) (UnsafeMutableRawPointer?, WebKitWebProcessTerminationReason, gpointer?) -> Void = { view, _, data in
                Unmanaged<WarmViewPool>.fromOpaque(data!).takeUnretainedValue().died(view)
            }
            entry.handlers.append(satchel_signal_connect(UnsafeMutableRawPointer(view), "web-process-terminated", unsafeBitCast(terminated, to: GCallback.self), me))
            views.append(entry)
            webkit_web_view_load_uri(view, "about:blank")
        }
    }

    /// Calls `body` once at least one view is warm (at once when one is).
    public func whenReady(_ body: @escaping () -> Void) {
        if readyCount > 0 { return body() }
        readyWaiters.append(body)
    }

    /// A warm view if one is ready, else the oldest warming one, else a new (cold) view; the caller owns the returned
    /// reference (put it in a window, and ``giveBack(_:)`` when done).
    public func take() -> UnsafeMutablePointer<WebKitWebView> {
        let view: UnsafeMutablePointer<WebKitWebView>
        if let index = views.firstIndex(where: \.ready) ?? (views.isEmpty ? nil : 0) {
            let entry = views.remove(at: index)
            for handler in entry.handlers { g_signal_handler_disconnect(UnsafeMutableRawPointer(entry.view), handler) }
            view = entry.view  // the pool's reference becomes the caller's
        } else {
            view = context.makeWebView()
            g_object_ref_sink(UnsafeMutableRawPointer(view))
        }
        if refill == .onTake { warm() }
        return view
    }

    /// Ends a view that was handed out (the caller has taken it out of its window; its web process ends with it),
    /// and warms a replacement unless the pool refills otherwise.
    public func giveBack(_ view: UnsafeMutablePointer<WebKitWebView>) {
        g_object_unref(UnsafeMutableRawPointer(view))
        if refill == .onGiveBack { warm() }
    }

    /// Empties the pool (memory pressure, the app going to the background): its views and their processes end.
    public func drain() {
        let drained = views
        views = []
        for entry in drained { release(entry) }
    }

    private func release(_ entry: Entry) {
        for handler in entry.handlers { g_signal_handler_disconnect(UnsafeMutableRawPointer(entry.view), handler) }
        g_object_unref(UnsafeMutableRawPointer(entry.view))
    }

    private func died(_ view: UnsafeMutableRawPointer?) {
        guard let entry = views.first(where: { UnsafeMutableRawPointer($0.view) == view }) else { return }
        entry.ready = false
        webkit_web_view_load_uri(entry.view, "about:blank")
    }

    private func warmed() {
        for entry in views where !entry.ready && webkit_web_view_is_loading(entry.view) == 0 { entry.ready = true }
        guard readyCount > 0 else { return }
        let waiters = readyWaiters
        readyWaiters = []
        for waiter in waiters { waiter() }
    }
}
