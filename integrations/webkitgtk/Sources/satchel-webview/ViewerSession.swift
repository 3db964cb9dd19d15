import CSatchelGLib
import CWebKitGTK
import Foundation
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
    /// Exits when done (a script, screenshot or timing was asked for); otherwise the window stays for a person.
    var exitsWhenDone: Bool { script != nil || screenshot != nil || timing }

    private var report: [String: Any] = [:]
    private var errors: [String] = []
    /// When the load was asked for: what every figure of the report is measured from.
    private var started = Date()
    private var loaded = false
    private var finished = false

    init(
        satchel: SatchelWebContext, target: String, script: String?, screenshot: String?, timing: Bool, json: Bool, size: (Int32, Int32),
        beforeExit: @escaping () -> Void
    ) {
        self.beforeExit = beforeExit
        self.satchel = satchel
        self.target = target
        self.script = script
        self.screenshot = screenshot
        self.timing = timing
        self.json = json
        webView = satchel.makeWebView()
        let settings = webkit_web_view_get_settings(webView)
        webkit_settings_set_media_playback_requires_user_gesture(settings, 0)
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
            guard event == WEBKIT_LOAD_FINISHED else { return }
            Unmanaged<ViewerSession>.fromOpaque(data!).takeUnretainedValue().loadFinished()
        }
        _ = satchel_signal_connect(UnsafeMutableRawPointer(webView), "load-changed", unsafeBitCast(loadChanged, to: GCallback.self), me)
        let loadFailed: @convention(c) (UnsafeMutableRawPointer?, WebKitLoadEvent, UnsafePointer<CChar>?, UnsafeMutablePointer<GError>?, gpointer?) -> gboolean = { _, _, uri, error, data in
            let session = Unmanaged<ViewerSession>.fromOpaque(data!).takeUnretainedValue()
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
        g_timeout_add_full(G_PRIORITY_DEFAULT, guint(timeout * 1000), { data in
            let session = Unmanaged<ViewerSession>.fromOpaque(data!).takeUnretainedValue()
            if session.exitsWhenDone {
                session.errors.append("timed out")
                session.finish()
            }
            return gboolean(G_SOURCE_REMOVE)
        }, me, nil)
        started = Date()
        webkit_web_view_load_uri(webView, target)
    }

    private func loadFinished() {
        guard !loaded else { return }
        loaded = true
        report["loadMs"] = Int(Date().timeIntervalSince(started) * 1000)
        guard exitsWhenDone else { return }
        if timing {
            measureTiming()
        } else {
            afterTiming()
        }
    }

    /// The page's own timing (``PageTiming``), then whatever else was asked for.
    private func measureTiming() {
        let me = Unmanaged.passRetained(self).toOpaque()
        webkit_web_view_call_async_javascript_function(webView, PageTiming.script, -1, nil, nil, nil, nil, { source, result, data in
            let session = Unmanaged<ViewerSession>.fromOpaque(data!).takeRetainedValue()
            var error: UnsafeMutablePointer<GError>?
            let value = webkit_web_view_call_async_javascript_function_finish(UnsafeMutableRawPointer(source)?.assumingMemoryBound(to: WebKitWebView.self), result, &error)
            if let error {
                session.errors.append("timing failed: \(String(cString: error.pointee.message))")
                g_error_free(error)
            } else if let value {
                if let measured = ViewerSession.jsonObject(value) as? [String: Any], let timing = PageTiming(measured, loadRequestedAt: session.started) {
                    session.report["timing"] = timing.report
                } else {
                    session.errors.append("timing failed: the page gave no navigation timing")
                }
                g_object_unref(UnsafeMutableRawPointer(value))
            }
            session.afterTiming()
        }, me)
    }

    private func afterTiming() {
        if let script {
            runScript(script)
        } else {
            takeScreenshot()
        }
    }

    private func runScript(_ body: String) {
        let me = Unmanaged.passRetained(self).toOpaque()
        webkit_web_view_call_async_javascript_function(webView, body, -1, nil, nil, nil, nil, { source, result, data in
            let session = Unmanaged<ViewerSession>.fromOpaque(data!).takeRetainedValue()
            var error: UnsafeMutablePointer<GError>?
            let value = webkit_web_view_call_async_javascript_function_finish(UnsafeMutableRawPointer(source)?.assumingMemoryBound(to: WebKitWebView.self), result, &error)
            if let error {
                session.errors.append("script failed: \(String(cString: error.pointee.message))")
                g_error_free(error)
                session.report["result"] = NSNull()
            } else if let value {
                session.report["result"] = ViewerSession.jsonObject(value)
                g_object_unref(UnsafeMutableRawPointer(value))
            }
            session.takeScreenshot()
        }, me)
    }

    /// A JSCValue as a JSON-compatible Foundation object (null for undefined or what JSON cannot hold).
    static func jsonObject(_ value: OpaquePointer) -> Any {
        guard jsc_value_is_undefined(value) == 0, let text = jsc_value_to_json(value, 0) else { return NSNull() }
        defer { g_free(text) }
        return (try? JSONSerialization.jsonObject(with: Data(String(cString: text).utf8), options: [.fragmentsAllowed])) ?? NSNull()
    }

    private func takeScreenshot() {
        guard let screenshot else { return finish() }
        let request = ScreenshotRequest(session: self, path: screenshot)
        webkit_web_view_get_snapshot(webView, WEBKIT_SNAPSHOT_REGION_VISIBLE, WEBKIT_SNAPSHOT_OPTIONS_NONE, nil, { source, result, data in
            let request = Unmanaged<ScreenshotRequest>.fromOpaque(data!).takeRetainedValue()
            var error: UnsafeMutablePointer<GError>?
            if let texture = webkit_web_view_get_snapshot_finish(UnsafeMutableRawPointer(source)?.assumingMemoryBound(to: WebKitWebView.self), result, &error) {
                if gdk_texture_save_to_png(texture, request.path) != 0 {
                    request.session.report["screenshot"] = request.path
                } else {
                    request.session.errors.append("cannot write the screenshot to \(request.path)")
                }
                g_object_unref(UnsafeMutableRawPointer(texture))
            } else {
                request.session.errors.append("screenshot failed: \(error.map { String(cString: $0.pointee.message) } ?? "?")")
                if let error { g_error_free(error) }
            }
            request.session.finish()
        }, Unmanaged.passRetained(request).toOpaque())
    }

    /// Prints the report and exits, once the driver's tasks have settled (or two seconds passed).
    private func finish() {
        guard !finished else { return }
        finished = true
        let deadline = Date().addingTimeInterval(2)
        while satchel.driver.activeTaskCount > 0, Date() < deadline { g_main_context_iteration(nil, 0) }
        report["url"] = webkit_web_view_get_uri(webView).map { String(cString: $0) } ?? target
        report["title"] = webkit_web_view_get_title(webView).map { String(cString: $0) } ?? ""
        report["requestedURL"] = target
        if report["result"] == nil { report["result"] = NSNull() }
        if report["screenshot"] == nil { report["screenshot"] = NSNull() }
        report["error"] = errors.isEmpty ? NSNull() : errors.joined(separator: "; ")
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

    /// Runs `work` in a task and iterates the main context until it is done or `seconds` passed: work that needs the
    /// main context meanwhile (the driver delivering to WebKit) keeps running.
    static func waitOnMainContext(seconds: Double, _ work: @escaping @Sendable () async -> Void) {
        let done = DoneFlag()
        Task {
            await work()
            done.set()
            g_main_context_wakeup(nil)
        }
        let deadline = Date().addingTimeInterval(seconds)
        while !done.isSet, Date() < deadline { g_main_context_iteration(nil, 1) }
    }

    private final class DoneFlag: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        var isSet: Bool { lock.withLock { value } }
        func set() { lock.withLock { value = true } }
    }

    private final class ScreenshotRequest {
        let session: ViewerSession
        let path: String
        init(session: ViewerSession, path: String) {
            self.session = session
            self.path = path
        }
    }
}
