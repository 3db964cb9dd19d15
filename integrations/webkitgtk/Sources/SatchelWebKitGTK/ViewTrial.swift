import CSatchelGLib
import CWebKitGTK
import Foundation
import SatchelCore
import SatchelHost

/// One web view's judge of a release on trial (``TrialJudge``): WebKitGTK's navigation signals (`load-changed`: a
/// navigation's start, its commit with the response's status, its end; `load-failed`), the hook's `satchelTrial`
/// messages (paint, ready(), errors), the view shown or hidden, dialogs waiting, the view's recoveries, and the judge's
/// timers; its verdicts go to the context, which carries them out for every view (``SatchelWebContext``). Lives as long
/// as its view; everything runs on the main context's thread.
final class ViewTrial {
    let view: UnsafeMutablePointer<WebKitWebView>
    private unowned let context: SatchelWebContext
    private let court: TrialCourt
    private let manager: OpaquePointer
    private var judge: TrialJudge
    private var alive = true
    /// The pending check (a new schedule replaces it).
    private var checkSource: guint = 0
    /// Signal handlers on the view and on its content manager, disconnected when the view goes.
    private var viewHandlers: [gulong] = []
    private var managerHandler: gulong = 0

    init(view: UnsafeMutablePointer<WebKitWebView>, manager: OpaquePointer, context: SatchelWebContext, court: TrialCourt, handlerName: String) {
        self.view = view
        self.context = context
        self.court = court
        self.manager = manager
        judge = TrialJudge(configuration: court.configuration)
        let me = Unmanaged.passUnretained(self).toOpaque()
        let raw = UnsafeMutableRawPointer(view)
        let loadChanged: @convention(c) (UnsafeMutableRawPointer?, WebKitLoadEvent, gpointer?) -> Void = { _, event, data in
            let trial = Unmanaged<ViewTrial>.fromOpaque(data!).takeUnretainedValue()
            switch event {
            case WEBKIT_LOAD_STARTED: trial.navigationStarted()
            case WEBKIT_LOAD_COMMITTED: trial.committed()
            case WEBKIT_LOAD_FINISHED: trial.perform(trial.judge.loadFinished(now: .now))
            default: break
            }
        }
        viewHandlers.append(satchel_signal_connect(raw, "load-changed", unsafeBitCast(loadChanged, to: GCallback.self), me))
        // Emitted before WebKit's LOAD_FINISHED for the same navigation (a cancel, a download, a network error).
        let loadFailed: @convention(c) (UnsafeMutableRawPointer?, WebKitLoadEvent, UnsafePointer<CChar>?, UnsafeMutablePointer<GError>?, gpointer?) -> gboolean = { _, _, _, _, data in
            Unmanaged<ViewTrial>.fromOpaque(data!).takeUnretainedValue().judge.navigationFailed()
            return 0
        }
        viewHandlers.append(satchel_signal_connect(raw, "load-failed", unsafeBitCast(loadFailed, to: GCallback.self), me))
        let shown: @convention(c) (UnsafeMutableRawPointer?, gpointer?) -> Void = { _, data in
            Unmanaged<ViewTrial>.fromOpaque(data!).takeUnretainedValue().visibilityChanged()
        }
        viewHandlers.append(satchel_signal_connect(raw, "map", unsafeBitCast(shown, to: GCallback.self), me))
        viewHandlers.append(satchel_signal_connect(raw, "unmap", unsafeBitCast(shown, to: GCallback.self), me))
        // The page's signals: no reply, and a proof in each (WebKitGTK does not say which frame posted it).
        webkit_user_content_manager_register_script_message_handler(manager, handlerName, nil)
        let received: @convention(c) (OpaquePointer?, OpaquePointer?, gpointer?) -> Void = { _, value, data in
            guard let value, let data else { return }
            Unmanaged<ViewTrial>.fromOpaque(data).takeUnretainedValue().received(value)
        }
        managerHandler = satchel_signal_connect(
            UnsafeMutableRawPointer(manager), "script-message-received::" + handlerName, unsafeBitCast(received, to: GCallback.self), me)
        if !isShown { judge.pause() }
    }

    /// The view was finalized: its handlers go (they hold this object unretained) and its timer does nothing.
    func viewGone() {
        alive = false
        if checkSource != 0 { g_source_remove(checkSource) }
        checkSource = 0
        // The view is being finalized: its own handlers go with it; the manager may outlive it.
        if managerHandler != 0 { g_signal_handler_disconnect(UnsafeMutableRawPointer(manager), managerHandler) }
        managerHandler = 0
        viewHandlers = []
    }

    /// The view's recovery ended its page (a termination, or its load timeout).
    func recovery(_ reason: WebProcessRecovery.Reason) { perform(judge.recovery(reason)) }

    /// Another view (or the app) decided `subject`.
    func settled(_ subject: TrialJudge.Subject, _ verdict: TrialJudge.Verdict) { judge.settled(subject, verdict) }

    /// A dialog began or stopped holding the page.
    func dialogWaiting(_ waiting: Bool) {
        dialogsWaiting = waiting
        pauseOrResume()
    }

    private var dialogsWaiting = false
    private var isShown: Bool { gtk_widget_get_mapped(UnsafeMutableRawPointer(view).assumingMemoryBound(to: GtkWidget.self)) != 0 }
    private var uri: String { webkit_web_view_get_uri(view).map { String(cString: $0) } ?? "" }

    private func visibilityChanged() { pauseOrResume() }

    private func pauseOrResume() {
        guard alive else { return }
        if !isShown || dialogsWaiting { judge.pause() } else { perform(judge.resumed(now: .now)) }
    }

    private func navigationStarted() {
        perform(judge.navigationStarted(subject: court.subject(for: uri), now: .now))
    }

    private func committed() {
        let url = uri
        perform(judge.navigationCommitted(subject: court.subject(for: url), now: .now))
        guard judge.judging != nil, let resource = webkit_web_view_get_main_resource(view), let response = webkit_web_resource_get_response(resource) else { return }
        perform(judge.entryStatus(Int(webkit_uri_response_get_status_code(response)), answeredByPackage: court.packageAnswers(url)))
    }

    private func received(_ value: OpaquePointer) {
        guard alive, judge.judging != nil, jsc_value_is_object(value) != 0 else { return }
        func property(_ name: String) -> OpaquePointer? { jsc_value_object_get_property(value, name) }
        func string(_ name: String) -> String? {
            guard let field = property(name) else { return nil }
            defer { g_object_unref(UnsafeMutableRawPointer(field)) }
            guard jsc_value_is_string(field) != 0, let text = jsc_value_to_string(field) else { return nil }
            defer { g_free(text) }
            return String(cString: text)
        }
        var network = false
        if let field = property("network") {
            network = jsc_value_is_boolean(field) != 0 && jsc_value_to_boolean(field) != 0
            g_object_unref(UnsafeMutableRawPointer(field))
        }
        guard let signal = court.signal(kind: string("kind"), message: string("message"), source: string("source"), network: network, token: string("token"))
        else { return }
        perform(judge.signal(signal, now: .now))
    }

    private func perform(_ actions: [TrialJudge.Action]) {
        guard alive else { return }
        for action in actions {
            switch action {
            case .scheduleCheck(let after):
                if checkSource != 0 { g_source_remove(checkSource) }
                checkSource = g_timeout_add_full(G_PRIORITY_DEFAULT, Self.milliseconds(after), { data in
                    let trial = Unmanaged<ViewTrial>.fromOpaque(data!).takeUnretainedValue()
                    trial.checkSource = 0
                    trial.perform(trial.judge.check(now: .now))
                    return gboolean(G_SOURCE_REMOVE)
                }, Unmanaged.passRetained(self).toOpaque(), { data in Unmanaged<ViewTrial>.fromOpaque(data!).release() })
            case .confirm(let subject):
                context.trialDecided(subject, .confirmed, in: view)
            case .rollBack(let subject, let failure):
                context.trialDecided(subject, .rolledBack(failure), in: view)
            }
        }
    }

    private static func milliseconds(_ duration: Duration) -> guint {
        guint(max(0, duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000))
    }
}
