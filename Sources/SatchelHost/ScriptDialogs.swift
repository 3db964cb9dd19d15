/// A page's JavaScript dialog (`alert`, `confirm`, `prompt`, or the leave-page question of `beforeunload`).
public struct ScriptDialog: Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        case alert, confirm, prompt
        case beforeUnload = "beforeunload"
    }

    public var kind: Kind
    public var message: String
    /// A prompt's default text.
    public var defaultText: String?

    public init(kind: Kind, message: String, defaultText: String? = nil) {
        self.kind = kind
        self.message = message
        self.defaultText = defaultText
    }
}

/// How a dialog was answered: `accepted` is OK (an alert is always acknowledged; for `beforeunload`, leave the page),
/// and a prompt's `text` (nil when dismissed: the page's `prompt()` returns null).
public struct ScriptDialogAnswer: Sendable, Equatable {
    public var accepted: Bool
    public var text: String?

    public init(accepted: Bool, text: String? = nil) {
        self.accepted = accepted
        self.text = accepted ? text : nil
    }

    /// The stated default, for a view with no handler, off screen, or a handler that did not answer in time: an
    /// alert is acknowledged, a confirm is dismissed, a prompt returns null, and a page may leave.
    public static func `default`(for kind: ScriptDialog.Kind) -> ScriptDialogAnswer {
        switch kind {
        case .alert, .beforeUnload: ScriptDialogAnswer(accepted: true)
        case .confirm, .prompt: ScriptDialogAnswer(accepted: false)
        }
    }

    /// What the page's call returned, as JSON: `alert` true, `confirm` true or false, `prompt` the text or null,
    /// `beforeunload` true to leave.
    public func json(for kind: ScriptDialog.Kind) -> BridgeValue {
        switch kind {
        case .alert: .bool(true)
        case .confirm, .beforeUnload: .bool(accepted)
        case .prompt: text.map { .string($0) } ?? .null
        }
    }
}

/// The JS dialogs of one view, as a state machine that returns actions: every dialog completes. It goes to the app's
/// handler when there is one and the view is on screen; otherwise, or when the handler has not answered within
/// ``Configuration/handlerTimeout``, the default answers (``ScriptDialogAnswer/default(for:)``). WebKit waits for the
/// answer (on iOS an unanswered completion handler ends the app), and the page's main thread waits with it, so the
/// view's ``WebProcessRecovery`` is told a dialog is open: a page waiting on a dialog is not hung. Every dialog is
/// reported to the app.
public struct ScriptDialogs: Sendable {
    public struct Configuration: Sendable, Equatable {
        public var handlerTimeout: Duration
        public init(handlerTimeout: Duration = .seconds(60)) { self.handlerTimeout = handlerTimeout }
    }

    /// Who answered.
    public enum Answerer: String, Sendable, Equatable {
        case app
        /// No handler, or the view was not on screen.
        case defaultPolicy = "default"
        /// The handler did not answer in time.
        case timeout
    }

    public struct Report: Sendable, Equatable {
        public var dialog: ScriptDialog
        public var answer: ScriptDialogAnswer
        public var answeredBy: Answerer

        public init(dialog: ScriptDialog, answer: ScriptDialogAnswer, answeredBy: Answerer) {
            self.dialog = dialog
            self.answer = answer
            self.answeredBy = answeredBy
        }
    }

    public enum Action: Sendable, Equatable {
        /// Show dialog `id` to the app's handler, which calls ``answered(_:with:)``.
        case askHandler(id: Int, ScriptDialog)
        /// Call ``timedOut(_:)`` with `id` after `after`.
        case scheduleTimeout(id: Int, after: Duration)
        /// Give WebKit the answer to dialog `id` (it returns to the page).
        case answer(id: Int, ScriptDialogAnswer)
        case report(Report)
    }

    public let configuration: Configuration
    private var open: [Int: ScriptDialog] = [:]
    private var opened = 0

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Dialogs waiting for the app's handler.
    public var isWaiting: Bool { !open.isEmpty }

    /// The page opened `dialog`; `id` names it in the actions.
    public mutating func opened(_ dialog: ScriptDialog, hasHandler: Bool, visible: Bool) -> (id: Int, actions: [Action]) {
        opened += 1
        let id = opened
        guard hasHandler, visible else {
            let answer = ScriptDialogAnswer.default(for: dialog.kind)
            return (id, [.answer(id: id, answer), .report(Report(dialog: dialog, answer: answer, answeredBy: .defaultPolicy))])
        }
        open[id] = dialog
        return (id, [.askHandler(id: id, dialog), .scheduleTimeout(id: id, after: configuration.handlerTimeout)])
    }

    /// The app's handler answered dialog `id` (a late answer, after the timeout, changes nothing).
    public mutating func answered(_ id: Int, with answer: ScriptDialogAnswer) -> [Action] {
        guard let dialog = open.removeValue(forKey: id) else { return [] }
        return [.answer(id: id, answer), .report(Report(dialog: dialog, answer: answer, answeredBy: .app))]
    }

    /// Dialog `id`'s time is up: the default answers it if the handler has not.
    public mutating func timedOut(_ id: Int) -> [Action] {
        guard let dialog = open.removeValue(forKey: id) else { return [] }
        let answer = ScriptDialogAnswer.default(for: dialog.kind)
        return [.answer(id: id, answer), .report(Report(dialog: dialog, answer: answer, answeredBy: .timeout))]
    }
}
