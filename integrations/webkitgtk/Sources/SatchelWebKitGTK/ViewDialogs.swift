import CSatchelGLib
import CWebKitGTK
import SatchelHost

/// One web view's JS dialogs: WebKitGTK's `script-dialog` signal into ``ScriptDialogs``, the app's handler
/// (``SatchelWebContext/dialogHandler``) when the view is mapped, WebKit's dialog answered and closed, and every
/// dialog reported (``SatchelWebContext/dialogReportHandler``). WebKit's own GTK dialog is never shown. Main context
/// thread only.
final class ViewDialogs {
    let view: UnsafeMutablePointer<WebKitWebView>
    private unowned let context: SatchelWebContext
    private weak var recovery: ViewRecovery?
    private var machine: ScriptDialogs
    /// WebKit's dialogs waiting for the app's answer (each referenced until closed).
    private var waiting: [Int: OpaquePointer] = [:]
    /// Told when the page begins waiting on a dialog (true) and when the last one waiting is answered (false).
    var waitingChanged: ((Bool) -> Void)?
    private var alive = true

    init(view: UnsafeMutablePointer<WebKitWebView>, context: SatchelWebContext, recovery: ViewRecovery, configuration: ScriptDialogs.Configuration) {
        self.view = view
        self.context = context
        self.recovery = recovery
        machine = ScriptDialogs(configuration: configuration)
        let opened: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, gpointer?) -> gboolean = { _, dialog, data in
            guard let dialog, let data else { return 0 }
            Unmanaged<ViewDialogs>.fromOpaque(data).takeUnretainedValue().opened(dialog)
            return 1
        }
        _ = satchel_signal_connect(UnsafeMutableRawPointer(view), "script-dialog", unsafeBitCast(opened, to: GCallback.self), Unmanaged.passUnretained(self).toOpaque())
        // The page died with a dialog open: WebKit still wants its answer, and the app's dialog is for a page that is gone.
        let terminated: @convention(c) (UnsafeMutableRawPointer?, WebKitWebProcessTerminationReason, gpointer?) -> Void = { _, _, data in
            Unmanaged<ViewDialogs>.fromOpaque(data!).takeUnretainedValue().answerWaitingWithDefault()
        }
        _ = satchel_signal_connect(
            UnsafeMutableRawPointer(view), "web-process-terminated", unsafeBitCast(terminated, to: GCallback.self), Unmanaged.passUnretained(self).toOpaque())
    }

    /// Every dialog still waiting for the app gets the default now.
    func answerWaitingWithDefault() {
        for id in Array(waiting.keys) { perform(machine.timedOut(id), dialog: nil) }
    }

    /// The view is gone: dialogs still waiting are answered by the default (WebKit must get its answer).
    func viewGone() {
        answerWaitingWithDefault()
        alive = false
    }

    private func opened(_ dialog: OpaquePointer) {
        let kind: ScriptDialog.Kind = switch webkit_script_dialog_get_dialog_type(dialog) {
        case WEBKIT_SCRIPT_DIALOG_CONFIRM: .confirm
        case WEBKIT_SCRIPT_DIALOG_PROMPT: .prompt
        case WEBKIT_SCRIPT_DIALOG_BEFORE_UNLOAD_CONFIRM: .beforeUnload
        default: .alert
        }
        let message = webkit_script_dialog_get_message(dialog).map { String(cString: $0) } ?? ""
        let defaultText = kind == .prompt ? webkit_script_dialog_prompt_get_default_text(dialog).map { String(cString: $0) } : nil
        let visible = gtk_widget_get_mapped(UnsafeMutableRawPointer(view).assumingMemoryBound(to: GtkWidget.self)) != 0
        let (_, actions) = machine.opened(
            ScriptDialog(kind: kind, message: message, defaultText: defaultText), hasHandler: context.dialogHandler != nil, visible: visible)
        perform(actions, dialog: dialog)
    }

    /// `dialog` is WebKit's for an action about a dialog just opened (answered in the signal, or kept for later).
    private func perform(_ actions: [ScriptDialogs.Action], dialog: OpaquePointer?) {
        for action in actions {
            switch action {
            case .askHandler(let id, let asked):
                guard let dialog else { continue }
                webkit_script_dialog_ref(dialog)
                waiting[id] = dialog
                recovery?.dialogOpened()
                waitingChanged?(true)
                let weak = WeakDialogs(self)
                let executor = context.executor
                context.dialogHandler?(view, asked) { answer in
                    // The handler may answer on any thread, more than once, or after the timeout: the machine decides.
                    executor.execute {
                        guard let dialogs = weak.dialogs, dialogs.alive else { return }
                        dialogs.perform(dialogs.machine.answered(id, with: answer), dialog: nil)
                    }
                }
            case .scheduleTimeout(let id, let after):
                let timeout = Timeout(dialogs: self, id: id)
                g_timeout_add_full(G_PRIORITY_DEFAULT, guint(max(0, after.components.seconds * 1000 + after.components.attoseconds / 1_000_000_000_000_000)), { data in
                    let timeout = Unmanaged<Timeout>.fromOpaque(data!).takeRetainedValue()
                    if timeout.dialogs.alive { timeout.dialogs.perform(timeout.dialogs.machine.timedOut(timeout.id), dialog: nil) }
                    return gboolean(G_SOURCE_REMOVE)
                }, Unmanaged.passRetained(timeout).toOpaque(), nil)
            case .answer(let id, let answer):
                if let kept = waiting.removeValue(forKey: id) {
                    Self.give(answer, to: kept)
                    webkit_script_dialog_close(kept)
                    webkit_script_dialog_unref(kept)
                    recovery?.dialogClosed()
                    if waiting.isEmpty { waitingChanged?(false) }
                } else if let dialog {
                    // Answered within the signal: WebKit reads the answer when the handler returns.
                    Self.give(answer, to: dialog)
                }
            case .report(let report):
                context.dialogReportHandler?(view, report)
            }
        }
    }

    private static func give(_ answer: ScriptDialogAnswer, to dialog: OpaquePointer) {
        switch webkit_script_dialog_get_dialog_type(dialog) {
        case WEBKIT_SCRIPT_DIALOG_CONFIRM, WEBKIT_SCRIPT_DIALOG_BEFORE_UNLOAD_CONFIRM:
            webkit_script_dialog_confirm_set_confirmed(dialog, answer.accepted ? 1 : 0)
        case WEBKIT_SCRIPT_DIALOG_PROMPT:
            // Not set: the page's prompt() returns null.
            if answer.accepted { webkit_script_dialog_prompt_set_text(dialog, answer.text ?? "") }
        default:
            break
        }
    }

    private final class Timeout {
        let dialogs: ViewDialogs
        let id: Int
        init(dialogs: ViewDialogs, id: Int) {
            self.dialogs = dialogs
            self.id = id
        }
    }

    /// Reaches the view's dialogs from the app's handler, which may answer after the view is gone.
    private final class WeakDialogs: @unchecked Sendable {
        weak var dialogs: ViewDialogs?
        init(_ dialogs: ViewDialogs) { self.dialogs = dialogs }
    }
}
