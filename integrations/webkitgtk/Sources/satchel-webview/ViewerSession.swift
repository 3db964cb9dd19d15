import CSatchelGLib
import CWebKitGTK
import Foundation
import SatchelCore
import SatchelWebKit
import SatchelWebKitGTK

/// One window's run: load, then (when asked) the script and the screenshot, then the report. Runs on the main
/// context's thread only.
final class ViewerSession: @unchecked Sendable {
    let satchel: SatchelWebContext
    let target: String
    let script: String?
    let screenshot: String?
    /// Report the page's navigation and paint timing (``PageTiming``).
    let timing: Bool
    let json: Bool
    let webView: UnsafeMutablePointer<WebKitWebView>
    /// Runs on the main context's thread just before the process exits (closes the network client).
    let beforeExit: () -> Void
    /// Recoveries to wait for before the report (`--recoveries`).
    let awaitedRecoveries: Int
    let terminateAfter: Double?
    let events: EventLog?
    /// Exits when done (a script, screenshot, timing or recoveries were asked for); otherwise the window stays for a person.
    var exitsWhenDone: Bool { script != nil || screenshot != nil || timing || awaitedRecoveries > 0 || judged != nil }

    /// The version on trial the opened page is served from (nil: none): the viewer waits for its verdict.
    private var judged: TrialJudge.Subject?
    /// The verdict is not in yet, or the fallback it loads has not loaded yet.
    private var trialPending = false
    /// After a rollback: the fallback's load is awaited (and when the verdict came, to time its first paint from).
    private var fallbackSince: Date?
    private var fallbackStarted = false
    /// The report was due while the trial was pending: it is printed once the trial settles.
    private var finishDeferred = false

    /// Recoveries so far, as reported (`recoveries` in the report).
    private var recoveries: [[String: Any]] = []
    /// A recovery whose load has not finished yet: its report, and when the termination was heard.
    private var recovering: (report: RecoveryReport, at: Date)?
    /// The report waits for the recoveries (everything else asked for is done).
    private var waitingForRecoveries = false

    private var report: [String: Any] = [:]
    /// `--back-from`: where the trip away and back stands.
    enum BackTrip { case none, away(String), returning, back }
    var backTrip = BackTrip.none
    /// The load that just failed was cancelled: its LOAD_FINISHED is skipped.
    var cancelledLoad = false
    /// The page's JS dialogs and their answers (`dialogs` in the report).
    private var dialogs: [[String: Any]] = []
    private var errors: [String] = []
    /// When the load was asked for: what every figure of the report is measured from.
    private var started = Date()
    private var loaded = false
    private var finished = false

    init(
        satchel: SatchelWebContext, view: UnsafeMutablePointer<WebKitWebView>, target: String, script: String?, screenshot: String?, timing: Bool,
        json: Bool, size: (Int32, Int32), recoveries: Int, terminateAfter: Double?, events: EventLog?, beforeExit: @escaping () -> Void
    ) {
        self.beforeExit = beforeExit
        awaitedRecoveries = recoveries
        self.terminateAfter = terminateAfter
        self.events = events
        self.satchel = satchel
        self.target = target
        self.script = script
        self.screenshot = screenshot
        self.timing = timing
        self.json = json
        webView = view
        let settings = webkit_web_view_get_settings(webView)
        webkit_settings_set_enable_developer_extras(settings, 1)
        if ProcessInfo.processInfo.environment["SATCHEL_WEBVIEW_CONSOLE"] != nil { webkit_settings_set_enable_write_console_messages_to_stdout(settings, 1) }
        let window = UnsafeMutableRawPointer(gtk_window_new()!).assumingMemoryBound(to: GtkWindow.self)
        gtk_window_set_default_size(window, size.0, size.1)
        gtk_window_set_title(window, "Satchel: \(target)")
        gtk_window_set_child(window, UnsafeMutableRawPointer(webView).assumingMemoryBound(to: GtkWidget.self))
        gtk_window_present(window)
        self.window = window
    }

    private var window: UnsafeMutablePointer<GtkWindow>?

    func start(timeout: Double) {
        let me = Unmanaged.passRetained(self).toOpaque()
        let loadChanged: @convention(c) (UnsafeMutableRawPointer?, WebKitLoadEvent, gpointer?) -> Void = { _, event, data in
            let session = Unmanaged<ViewerSession>.fromOpaque(data!).takeUnretainedValue()
            if event == WEBKIT_LOAD_STARTED, session.fallbackSince != nil { session.fallbackStarted = true }
            guard event == WEBKIT_LOAD_FINISHED else { return }
            session.loadFinished()
        }
        _ = satchel_signal_connect(UnsafeMutableRawPointer(webView), "load-changed", unsafeBitCast(loadChanged, to: GCallback.self), me)
        let loadFailed: @convention(c) (UnsafeMutableRawPointer?, WebKitLoadEvent, UnsafePointer<CChar>?, UnsafeMutablePointer<GError>?, gpointer?) -> gboolean = { _, _, uri, error, data in
            let session = Unmanaged<ViewerSession>.fromOpaque(data!).takeUnretainedValue()
            if let error, error.pointee.domain == webkit_network_error_quark(), error.pointee.code == Int32(WEBKIT_NETWORK_ERROR_CANCELLED.rawValue) {
                // Stopped (the container's load timeout, a newer load): its LOAD_FINISHED is not a page that loaded.
                session.cancelledLoad = true
                return 0
            }
            let message = error.map { String(cString: $0.pointee.message) } ?? "unknown error"
            session.errors.append("load failed: \(uri.map { String(cString: $0) } ?? "?"): \(message)")
            return 0
        }
        _ = satchel_signal_connect(UnsafeMutableRawPointer(webView), "load-failed", unsafeBitCast(loadFailed, to: GCallback.self), me)
        // A person closing the window ends the viewer (the network client is closed first).
        let closeRequest: @convention(c) (UnsafeMutableRawPointer?, gpointer?) -> gboolean = { _, data in
            let session = Unmanaged<ViewerSession>.fromOpaque(data!).takeUnretainedValue()
            session.beforeExit()
            exit(0)
        }
        _ = satchel_signal_connect(UnsafeMutableRawPointer(window), "close-request", unsafeBitCast(closeRequest, to: GCallback.self), me)
        satchel.recoveryHandler = { [unowned self] report in self.recovered(report) }
        satchel.dialogReportHandler = { [unowned self] _, dialog in
            let entry: [String: Any] = [
                "type": dialog.dialog.kind.rawValue, "message": dialog.dialog.message,
                "answer": Self.jsonObject(dialog.answer.json(for: dialog.dialog.kind)), "answeredBy": dialog.answeredBy.rawValue,
            ]
            self.dialogs.append(entry)
            self.events?.write("dialog", entry)
        }
        satchel.progressHandler = { [unowned self] _, value in self.events?.write("progress", ["value": value]) }
        registerBridgeHandlers()
        // Judged only where a view judges (a court: the store, the hook and its proofs).
        if let subject = satchel.court?.subject(for: target) {
            judged = subject
            trialPending = true
            report["trial"] = [
                "id": subject.id.value, "version": subject.version.description, "decision": "undecided", "why": NSNull(), "detail": NSNull(),
                "serving": NSNull(), "fallbackPaintedMs": NSNull(),
            ] as [String: Any]
        }
        satchel.trialHandler = { [unowned self] _, decided in self.trialDecided(decided) }
        g_timeout_add_full(G_PRIORITY_DEFAULT, guint(timeout * 1000), { data in
            let session = Unmanaged<ViewerSession>.fromOpaque(data!).takeUnretainedValue()
            if session.exitsWhenDone {
                session.errors.append(session.waitingForRecoveries
                    ? "timed out waiting for recoveries (\(session.recoveries.count) of \(session.awaitedRecoveries))"
                    : session.trialPending ? "timed out waiting for the trial's verdict" : "timed out")
                session.finish(timedOut: true)
            }
            return gboolean(G_SOURCE_REMOVE)
        }, me, nil)
        started = Date()
        webkit_web_view_load_uri(webView, target)
    }

    private func loadFinished() {
        if cancelledLoad {
            cancelledLoad = false
            return
        }
        // The fallback's own load: one that started after the verdict (the judged page's may still end meanwhile).
        if let since = fallbackSince, fallbackStarted {
            fallbackSince = nil
            fallbackStarted = false
            recovering = nil
            return measureFallback(since: since)
        }
        if let recovering {
            self.recovering = nil
            return measureRecovery(recovering.report, heardAt: recovering.at)
        }
        guard !loaded else { return }
        // --back-from: away to that page, then back (the container's goBack), and only then on as loaded.
        switch backTrip {
        case .away(let url):
            backTrip = .returning
            report["canGoBackOnRoot"] = satchel.canGoBack(webView)
            webkit_web_view_load_uri(webView, url)
            return
        case .returning:
            backTrip = .back
            report["canGoBackAway"] = satchel.canGoBack(webView)
            if !satchel.goBack(webView) { errors.append("--back-from: the view could not go back") } else { return }
        case .none, .back:
            break
        }
        loaded = true
        report["loadMs"] = Int(Date().timeIntervalSince(started) * 1000)
        events?.write("loaded", ["loadMs": report["loadMs"]!])
        guard exitsWhenDone else { return }
        if timing {
            measureTiming()
        } else {
            afterTiming()
        }
    }

    /// The page's own timing (``PageTiming``), then whatever else was asked for.
    private func measureTiming() {
        evaluate(PageTiming.script) { [self] outcome in
            switch outcome {
            case .failure(let message): errors.append("timing failed: \(message)")
            case .success(let value):
                if let measured = value as? [String: Any], let timing = PageTiming(measured, loadRequestedAt: started) {
                    report["timing"] = timing.report
                } else {
                    errors.append("timing failed: the page gave no navigation timing")
                }
            }
            afterTiming()
        }
    }

    /// Runs `script` (the body of an async function) in the page and hands its JSON-compatible value, or WebKit's
    /// error message, to `then` on the main context's thread.
    private func evaluate(_ script: String, then: @escaping (Result<Any, ScriptFailure>) -> Void) {
        let call = Unmanaged.passRetained(PendingScript(then)).toOpaque()
        webkit_web_view_call_async_javascript_function(webView, script, -1, nil, nil, nil, nil, { source, result, data in
            let call = Unmanaged<PendingScript>.fromOpaque(data!).takeRetainedValue()
            var error: UnsafeMutablePointer<GError>?
            let value = webkit_web_view_call_async_javascript_function_finish(UnsafeMutableRawPointer(source)?.assumingMemoryBound(to: WebKitWebView.self), result, &error)
            if let error {
                let message = String(cString: error.pointee.message)
                g_error_free(error)
                return call.then(.failure(ScriptFailure(message: message)))
            }
            guard let value else { return call.then(.success(NSNull())) }
            let object = ViewerSession.jsonObject(value)
            g_object_unref(UnsafeMutableRawPointer(value))
            call.then(.success(object))
        }, call)
    }

    private final class PendingScript {
        let then: (Result<Any, ScriptFailure>) -> Void
        init(_ then: @escaping (Result<Any, ScriptFailure>) -> Void) { self.then = then }
    }

    struct ScriptFailure: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }

    private func afterTiming() {
        if let script {
            runScript(script)
        } else {
            takeScreenshot()
        }
    }

    private func runScript(_ body: String) {
        evaluate(body) { [self] outcome in
            switch outcome {
            case .failure(let message):
                errors.append("script failed: \(message)")
                report["result"] = NSNull()
            case .success(let value):
                report["result"] = value
            }
            scriptFinished()
            takeScreenshot()
        }
    }

    /// The viewer's bridge handlers, for trying the bridge from a page (and for tools/webkit-test): `echo` answers
    /// with its params; `fail` rejects with `params.message`; `emit` sends `params.count` events called
    /// `params.name` with `{seq}` 0, 1, …; `callPage` calls the page's handler `params.name` with `params.params`
    /// and answers with its result; `logout` clears the cookie jar.
    private func registerBridgeHandlers() {
        let satchel = self.satchel
        let view = ViewPointer(webView)
        satchel.bridge.register("echo") { params in params }
        satchel.bridge.register("fail") { params in throw BridgeError(params["message"]?.string ?? "failed") }
        satchel.bridge.register("emit") { params in
            let name = params["name"]?.string ?? "tick"
            let count = Int(params["count"]?.number ?? 1)
            satchel.executor.execute {
                for seq in 0..<count { satchel.send(event: name, detail: ["seq": .number(Double(seq))], to: view.pointer) }
            }
            return .number(Double(count))
        }
        satchel.bridge.register("callPage") { params in
            try await satchel.callPage(view.pointer, name: params["name"]?.string ?? "", params: params["params"] ?? .null)
        }
        satchel.bridge.register("logout") { _ in
            try await satchel.cookies.clear()
            return true
        }
    }

    private struct ViewPointer: @unchecked Sendable {
        let pointer: UnsafeMutablePointer<WebKitWebView>
        init(_ pointer: UnsafeMutablePointer<WebKitWebView>) { self.pointer = pointer }
    }

    /// The page's requests are under way (the script's own business): a driver may act now; `--terminate-after` does.
    private func scriptFinished() {
        events?.write("ready", ["result": report["result"] ?? NSNull(), "activeTasks": satchel.driver.activeTaskCount])
        guard let terminateAfter else { return }
        let me = Unmanaged.passRetained(self).toOpaque()
        g_timeout_add_full(G_PRIORITY_DEFAULT, guint(terminateAfter * 1000), { data in
            let session = Unmanaged<ViewerSession>.fromOpaque(data!).takeRetainedValue()
            webkit_web_view_terminate_web_process(session.webView)
            return gboolean(G_SOURCE_REMOVE)
        }, me, nil)
    }

    /// The container recovered the view (``SatchelWebContext/recoveryHandler``): its reload (or offline page) is
    /// loading; the recovery is measured once that load finished.
    private func recovered(_ recovery: RecoveryReport) {
        // Right after the container ended the dead page's tasks: none of them may be left.
        recoveryTasksLeft = satchel.driver.activeTaskCount
        if case .nothingToRestore = recovery.recovery {
            // No load follows: nothing to measure.
            return recoveryMeasured(RecoveryMeasurement(recovery: recovery, heardAt: Date(), tasksLeft: recoveryTasksLeft), [:])
        }
        recovering = (recovery, Date())
    }

    private var recoveryTasksLeft = 0

    /// The recovered page's first contentful paint and load event, from when the termination was heard, and what
    /// the page was told (`window.satchelRecovered`, set with the `satchel:recovered` event).
    private func measureRecovery(_ recovery: RecoveryReport, heardAt: Date) {
        // After a reload the page is told why (WebProcessRecovery.pageNotice, sent just before this script): give it
        // half a second to arrive. The offline page is not told.
        let wait = if case .reloaded = recovery.recovery {
            "for (let i = 0; i < 50 && !window.satchelRecovered; i++) await new Promise(resolve => setTimeout(resolve, 10));"
        } else { "" }
        let script = PageTiming.script(
            before: wait, fields: "recovered: window.satchelRecovered ? window.satchelRecovered.reason : null, title: document.title,")
        let request = RecoveryMeasurement(recovery: recovery, heardAt: heardAt, tasksLeft: recoveryTasksLeft)
        evaluate(script) { [self] outcome in
            switch outcome {
            case .failure(let message):
                errors.append("recovery timing failed: \(message)")
                recoveryMeasured(request, [:])
            case .success(let value):
                recoveryMeasured(request, value as? [String: Any] ?? [:])
            }
        }
    }

    private func recoveryMeasured(_ request: RecoveryMeasurement, _ measured: [String: Any]) {
        let recovery = request.recovery
        var entry: [String: Any] = [
            "reason": recovery.reason.rawValue, "url": recovery.url ?? NSNull(), "tasksStopped": recovery.tasksStopped,
            "tasksLeft": request.tasksLeft, "pageHeard": measured["recovered"] ?? NSNull(), "title": measured["title"] ?? NSNull(),
        ]
        entry["recovery"] = recovery.recovery.name
        // From the moment the container heard of the termination to the recovered page's first contentful paint.
        let timing = PageTiming(measured, loadRequestedAt: request.heardAt)?.report
        entry["repaintMs"] = timing?["firstContentfulPaintMs"] ?? NSNull()
        entry["loadEventMs"] = timing?["loadEventMs"] ?? NSNull()
        recoveries.append(entry)
        events?.write("recovered", entry)
        if !loaded {
            // The page never loaded before its recovery (stopped at the load timeout): the recovered page is the one
            // the script runs in.
            loaded = true
            report["loadMs"] = Int(Date().timeIntervalSince(started) * 1000)
            if exitsWhenDone { afterTiming() }
            return
        }
        if waitingForRecoveries, recoveries.count >= awaitedRecoveries { finish() }
    }

    /// A recovery as heard, carried to its measurement.
    private struct RecoveryMeasurement {
        let recovery: RecoveryReport
        let heardAt: Date
        let tasksLeft: Int
    }

    /// A JSCValue as a JSON-compatible Foundation object (null for undefined or what JSON cannot hold).
    static func jsonObject(_ value: OpaquePointer) -> Any {
        guard jsc_value_is_undefined(value) == 0, let text = jsc_value_to_json(value, 0) else { return NSNull() }
        defer { g_free(text) }
        return (try? JSONSerialization.jsonObject(with: Data(String(cString: text).utf8), options: [.fragmentsAllowed])) ?? NSNull()
    }

    private func takeScreenshot() {
        guard let screenshot else { return finish() }
        // The context's snapshot: WebKit's, or the page's own pixels when WebKit's is blank (WebGL).
        satchel.snapshot(webView) { [self] result in
            switch result {
            case .success(let shot):
                if FileManager.default.createFile(atPath: screenshot, contents: shot.png) {
                    report["screenshot"] = screenshot
                    report["screenshotSource"] = shot.source.rawValue
                    report["screenshotBlank"] = shot.blank
                } else {
                    errors.append("cannot write the screenshot to \(screenshot)")
                }
            case .failure(let error):
                errors.append("\(error)")
            }
            finish()
        }
    }

    /// A view's judge decided the trial (``SatchelWebContext/trialHandler``): a confirmation settles it; a rollback
    /// waits for the fallback's load.
    private func trialDecided(_ decided: TrialReport) {
        guard var entry = report["trial"] as? [String: Any], judged?.id == decided.id, judged?.version == decided.version else { return }
        entry["decision"] = decided.decision
        entry["why"] = decided.failure?.why ?? NSNull()
        entry["detail"] = decided.failure?.detail ?? NSNull()
        entry["serving"] = decided.serving?.description ?? NSNull()
        report["trial"] = entry
        events?.write("trial", entry)
        if decided.fallbackToShow {
            fallbackSince = Date()
        } else {
            trialSettled()
        }
    }

    /// The fallback loaded after a rollback: its first contentful paint, timed from the verdict.
    private func measureFallback(since: Date) {
        evaluate(PageTiming.script) { [self] outcome in
            switch outcome {
            case .failure(let message):
                errors.append("fallback timing failed: \(message)")
            case .success(let value):
                if var entry = report["trial"] as? [String: Any] {
                    let measured = value as? [String: Any] ?? [:]
                    entry["fallbackPaintedMs"] = PageTiming(measured, loadRequestedAt: since)?.report["firstContentfulPaintMs"] ?? NSNull()
                    report["trial"] = entry
                }
            }
            trialSettled()
        }
    }

    private func trialSettled() {
        trialPending = false
        if !loaded {
            // The page judged never finished loading (the fallback did): the rest of the run goes on in the fallback.
            loaded = true
            report["loadMs"] = Int(Date().timeIntervalSince(started) * 1000)
            if exitsWhenDone { afterTiming() }
            return
        }
        if finishDeferred { finish() }
    }

    /// Prints the report and exits, once the driver's tasks have settled (or two seconds passed).
    private func finish(timedOut: Bool = false) {
        guard !finished else { return }
        if !timedOut, trialPending {
            finishDeferred = true
            return
        }
        if !timedOut, recoveries.count < awaitedRecoveries {
            waitingForRecoveries = true
            return
        }
        finished = true
        let deadline = Date().addingTimeInterval(2)
        while satchel.driver.activeTaskCount > 0, Date() < deadline { g_main_context_iteration(nil, 0) }
        report["url"] = webkit_web_view_get_uri(webView).map { String(cString: $0) } ?? target
        report["title"] = webkit_web_view_get_title(webView).map { String(cString: $0) } ?? ""
        report["requestedURL"] = target
        if report["result"] == nil { report["result"] = NSNull() }
        if report["screenshot"] == nil { report["screenshot"] = NSNull() }
        report["cookies"] = nativeCookies()
        if let cache = satchel.httpCache {
            let counts = cache.statistics
            report["cache"] = [
                "hits": counts.hits, "misses": counts.misses, "revalidations": counts.revalidations, "staleAnswers": counts.staleAnswers,
                "stored": counts.stored, "bytes": cache.storedBytes, "entries": cache.entryCount, "hosts": cache.storedBytesPerHost(),
            ] as [String: Any]
        }
        report["error"] = errors.isEmpty ? NSNull() : errors.joined(separator: "; ")
        if awaitedRecoveries > 0 { report["recoveries"] = recoveries }
        report["dialogs"] = dialogs
        // The tasks still active name their phase and URL: a page whose loads never end says which.
        report["tasks"] = [
            "started": satchel.driver.startedTaskCount, "active": satchel.driver.activeTaskCount,
            "stillActive": Array(satchel.driver.activeTasks.prefix(20)),
        ] as [String: Any]
        if json {
            let data = (try? JSONSerialization.data(withJSONObject: report, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
            FileHandle.standardOutput.write(data + Data("\n".utf8))
        } else {
            print("\(report["title"] ?? "") <\(report["url"] ?? "")>")
            if let result = report["result"], !(result is NSNull) { print("result: \(result)") }
            if let shot = report["screenshot"] as? String { print("screenshot: \(shot)") }
        }
        for error in errors { FileHandle.standardError.write(Data("error: \(error)\n".utf8)) }
        beforeExit()
        exit(errors.isEmpty ? 0 : 1)
    }

    /// The jar's cookies, read natively (after the script): what native code sees of the page's cookies.
    private func nativeCookies() -> [[String: Any]] {
        let cookies = LockedBox<[Cookie]>([])
        let jar = satchel.cookies
        let answered = Self.waitOnMainContext(seconds: 5) {
            let all = (try? await jar.cookies()) ?? []
            cookies.withLock { $0 = all }
        }
        if !answered {
            errors.append("the cookie jar did not answer within 5 s")
        }
        return cookies.withLock { $0 }.sorted { ($0.domain, $0.path, $0.name) < ($1.domain, $1.path, $1.name) }.map { cookie in
            [
                "name": cookie.name, "value": cookie.value, "domain": cookie.domain, "path": cookie.path, "httpOnly": cookie.httpOnly,
                "secure": cookie.secure, "sameSite": cookie.sameSite.rawValue, "expires": cookie.expires.map { $0 as Any } ?? NSNull(),
            ]
        }
    }

    /// Runs `work` in a task and iterates the main context until it is done or `seconds` passed: work that needs the
    /// main context meanwhile (the driver delivering to WebKit) keeps running.
    @discardableResult
    static func waitOnMainContext(seconds: Double, _ work: @escaping @Sendable () async -> Void) -> Bool {
        let done = DoneFlag()
        Task {
            await work()
            done.set()
            g_main_context_wakeup(nil)
        }
        let deadline = Date().addingTimeInterval(seconds)
        while !done.isSet, Date() < deadline { g_main_context_iteration(nil, 1) }
        return done.isSet
    }

    private final class DoneFlag: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        var isSet: Bool { lock.withLock { value } }
        func set() { lock.withLock { value = true } }
    }
}

/// A value shared with a task the main context waits for.
final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) -> T) -> T { lock.withLock { body(&value) } }
}

extension ViewerSession {
    /// A bridge value as JSONSerialization takes it.
    static func jsonObject(_ value: BridgeValue) -> Any {
        switch value {
        case .null: NSNull()
        case .bool(let flag): flag
        case .number(let number): number
        case .string(let text): text
        case .array(let items): items.map(jsonObject)
        case .object(let fields): fields.mapValues(jsonObject)
        }
    }
}

