import CSatchelGLib
import CWebKitGTK
import Foundation
import SatchelCore
import SatchelEngine
import SatchelHTTP
import SatchelWebKit

/// What the app hears after a web view's web process ended, or a navigation was stopped for its load timeout: which
/// view, why, what it was showing, and what the container did. Delivered on the main context's thread.
public struct RecoveryReport: @unchecked Sendable {
    /// `WebKitWebView*`.
    public let view: UnsafeMutablePointer<WebKitWebView>
    public let reason: WebProcessRecovery.Reason
    /// The URL the view was showing.
    public let url: String?
    public let recovery: WebProcessRecovery.Recovery
    /// Scheme tasks of the view that were still running and were ended.
    public let tasksStopped: Int
}

/// One web view's white-screen guard: WebKitGTK's signals into ``WebProcessRecovery`` (`web-process-terminated` with
/// its reason, `notify::is-web-process-responsive`, `load-changed`), the heartbeat's probes and timers, and the
/// actions carried out here. Lives as long as its view; everything runs on the main context's thread.
final class ViewRecovery {
    let view: UnsafeMutablePointer<WebKitWebView>
    private unowned let context: SatchelWebContext
    private var machine: WebProcessRecovery
    private var handlers: [gulong] = []

    init(view: UnsafeMutablePointer<WebKitWebView>, context: SatchelWebContext, configuration: WebProcessRecovery.Configuration) {
        self.view = view
        self.context = context
        machine = WebProcessRecovery(configuration: configuration)
        let me = Unmanaged.passUnretained(self).toOpaque()
        let terminated: @convention(c) (UnsafeMutableRawPointer?, WebKitWebProcessTerminationReason, gpointer?) -> Void = { _, reason, data in
            Unmanaged<ViewRecovery>.fromOpaque(data!).takeUnretainedValue().terminated(reason)
        }
        handlers.append(satchel_signal_connect(UnsafeMutableRawPointer(view), "web-process-terminated", unsafeBitCast(terminated, to: GCallback.self), me))
        let responsiveness: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, gpointer?) -> Void = { _, _, data in
            Unmanaged<ViewRecovery>.fromOpaque(data!).takeUnretainedValue().responsivenessChanged()
        }
        handlers.append(satchel_signal_connect(
            UnsafeMutableRawPointer(view), "notify::is-web-process-responsive", unsafeBitCast(responsiveness, to: GCallback.self), me))
        // A failed load ends with LOAD_FINISHED too, so STARTED and FINISHED bound every navigation.
        let loadChanged: @convention(c) (UnsafeMutableRawPointer?, WebKitLoadEvent, gpointer?) -> Void = { _, event, data in
            let recovery = Unmanaged<ViewRecovery>.fromOpaque(data!).takeUnretainedValue()
            if event == WEBKIT_LOAD_STARTED { recovery.navigationStarted() }
            if event == WEBKIT_LOAD_FINISHED { recovery.loadFinished() }
        }
        handlers.append(satchel_signal_connect(UnsafeMutableRawPointer(view), "load-changed", unsafeBitCast(loadChanged, to: GCallback.self), me))
        perform(machine.started())
    }

    /// The view was finalized: timers that fire later do nothing.
    func viewGone() {
        alive = false
        if heartbeatSource != 0 { g_source_remove(heartbeatSource) }
        heartbeatSource = 0
    }

    private var alive = true
    /// The one pending heartbeat timer (a new schedule replaces it).
    private var heartbeatSource: guint = 0

    func pauseHeartbeat() {
        machine.pauseHeartbeat()
        if heartbeatSource != 0 { g_source_remove(heartbeatSource) }
        heartbeatSource = 0
    }

    func resumeHeartbeat() { perform(machine.started()) }

    /// A script dialog waits for the app's answer (``ViewDialogs``): the page is not hung meanwhile.
    func dialogOpened() { machine.dialogOpened() }

    func dialogClosed() { machine.dialogClosed() }

    private func terminated(_ reason: WebKitWebProcessTerminationReason) {
        let mapped: WebProcessRecovery.Reason = switch reason {
        case WEBKIT_WEB_PROCESS_EXCEEDED_MEMORY_LIMIT: .exceededMemoryLimit
        case WEBKIT_WEB_PROCESS_TERMINATED_BY_API: .terminatedByAPI
        default: .crashed
        }
        let url = webkit_web_view_get_uri(view).map { String(cString: $0) }.flatMap { $0.isEmpty || $0 == "about:blank" ? nil : $0 }
        perform(machine.processTerminated(mapped, url: url, now: .now))
    }

    private func responsivenessChanged() {
        perform(machine.responsivenessChanged(webkit_web_view_get_is_web_process_responsive(view) != 0, now: .now))
    }

    private func loadFinished() { perform(machine.loadFinished()) }

    private func navigationStarted() {
        let url = webkit_web_view_get_uri(view).map { String(cString: $0) } ?? ""
        perform(machine.navigationStarted(url: url, now: .now))
    }

    /// Shown on screen: a view that is not mapped (a warm view in the pool, a hidden window) gets no hang verdict.
    private var visible: Bool { gtk_widget_get_mapped(UnsafeMutableRawPointer(view).assumingMemoryBound(to: GtkWidget.self)) != 0 }

    private var stoppedTasks = 0

    private func perform(_ actions: [WebProcessRecovery.Action]) {
        guard alive else { return }
        for action in actions {
            switch action {
            case .stopTasks:
                stoppedTasks = context.driver.stopAll(in: ViewRecovery.group(of: view))
            case .reload(let url):
                webkit_web_view_load_uri(view, url)
            case .showOfflinePage(let url):
                webkit_web_view_load_alternate_html(view, context.engine.offlinePageHTML(for: url), url, url)
            case .terminateWebProcess:
                webkit_web_view_terminate_web_process(view)
            case .stopLoading:
                webkit_web_view_stop_loading(view)
            case .scheduleLoadCheck(let after):
                let me = Unmanaged.passRetained(self).toOpaque()
                g_timeout_add_full(G_PRIORITY_DEFAULT, Self.milliseconds(after), { data in
                    let recovery = Unmanaged<ViewRecovery>.fromOpaque(data!).takeRetainedValue()
                    recovery.perform(recovery.machine.loadCheck(now: .now, visible: recovery.visible))
                    return gboolean(G_SOURCE_REMOVE)
                }, me, nil)
            case .scheduleResponsivenessCheck(let after):
                let me = Unmanaged.passRetained(self).toOpaque()
                g_timeout_add_full(G_PRIORITY_DEFAULT, Self.milliseconds(after), { data in
                    let recovery = Unmanaged<ViewRecovery>.fromOpaque(data!).takeRetainedValue()
                    recovery.perform(recovery.machine.responsivenessCheck(now: .now, visible: recovery.visible))
                    return gboolean(G_SOURCE_REMOVE)
                }, me, nil)
            case .scheduleHeartbeat(let after):
                if heartbeatSource != 0 { g_source_remove(heartbeatSource) }
                // The timer holds the guard; its destroy notify lets go whether it fired or was removed.
                heartbeatSource = g_timeout_add_full(G_PRIORITY_DEFAULT, Self.milliseconds(after), { data in
                    let recovery = Unmanaged<ViewRecovery>.fromOpaque(data!).takeUnretainedValue()
                    recovery.heartbeatSource = 0
                    recovery.perform(recovery.machine.heartbeatDue(now: .now, visible: recovery.visible))
                    return gboolean(G_SOURCE_REMOVE)
                }, Unmanaged.passRetained(self).toOpaque(), { data in Unmanaged<ViewRecovery>.fromOpaque(data!).release() })
            case .sendProbe(let id):
                let probe = Unmanaged.passRetained(Probe(recovery: self, id: id)).toOpaque()
                // Any answer counts, an error too: the process replied. A stuck process does not reply at all.
                webkit_web_view_evaluate_javascript(view, WebProcessRecovery.probeScript, -1, nil, nil, nil, { source, result, data in
                    let probe = Unmanaged<Probe>.fromOpaque(data!).takeRetainedValue()
                    var error: UnsafeMutablePointer<GError>?
                    let value = webkit_web_view_evaluate_javascript_finish(UnsafeMutableRawPointer(source)?.assumingMemoryBound(to: WebKitWebView.self), result, &error)
                    if let value { g_object_unref(UnsafeMutableRawPointer(value)) }
                    if let error { g_error_free(error) }
                    guard probe.recovery.alive else { return }
                    probe.recovery.machine.probeAnswered(probe.id)
                }, probe)
            case .notifyPage(let reason):
                // The page learns it was loaded again after its process died, and why, so it can restore its state:
                // an event, and the same detail in window.satchelRecovered for scripts that start listening later.
                let script = WebProcessRecovery.pageNotice(reason)
                webkit_web_view_evaluate_javascript(view, script, -1, nil, nil, nil, nil, nil)
            case .report(let reason, let url, let recovery):
                context.recoveryHandler?(RecoveryReport(view: view, reason: reason, url: url, recovery: recovery, tasksStopped: stoppedTasks))
                // After the app heard it: a trial's verdict may reload the view with another version.
                context.recovered(view, reason: reason)
            }
        }
    }

    private final class Probe {
        let recovery: ViewRecovery
        let id: Int
        init(recovery: ViewRecovery, id: Int) {
            self.recovery = recovery
            self.id = id
        }
    }

    private static func milliseconds(_ duration: Duration) -> guint {
        guint(max(0, duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000))
    }

    /// The driver group of a view's scheme tasks (the view's address, as the scheme handler names it).
    static func group(of view: UnsafeMutableRawPointer) -> ObjectIdentifier {
        ObjectIdentifier(ViewKey.key(for: view))
    }

    static func group(of view: UnsafeMutablePointer<WebKitWebView>) -> ObjectIdentifier { group(of: UnsafeMutableRawPointer(view)) }
}

/// One object per web view address, so that a view can name a group of driver tasks (ObjectIdentifier needs a class).
/// Used on the main context's thread only.
final class ViewKey {
    nonisolated(unsafe) private static var keys: [UnsafeMutableRawPointer: ViewKey] = [:]

    static func key(for view: UnsafeMutableRawPointer) -> ViewKey {
        if let key = keys[view] { return key }
        let key = ViewKey()
        keys[view] = key
        return key
    }

    static func forget(_ view: UnsafeMutableRawPointer) {
        keys.removeValue(forKey: view)
    }
}
