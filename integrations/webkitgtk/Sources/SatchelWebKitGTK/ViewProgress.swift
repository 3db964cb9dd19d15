import CSatchelGLib
import CWebKitGTK
import SatchelHost

/// One web view's load progress: WebKitGTK's `estimated-load-progress` and `load-changed` into ``LoadProgress``, each
/// new value to ``SatchelWebContext/progressHandler``. Main context thread only.
final class ViewProgress {
    let view: UnsafeMutablePointer<WebKitWebView>
    private unowned let context: SatchelWebContext
    private var progress = LoadProgress()

    init(view: UnsafeMutablePointer<WebKitWebView>, context: SatchelWebContext) {
        self.view = view
        self.context = context
        let me = Unmanaged.passUnretained(self).toOpaque()
        let estimate: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, gpointer?) -> Void = { _, _, data in
            let tracker = Unmanaged<ViewProgress>.fromOpaque(data!).takeUnretainedValue()
            tracker.report(tracker.progress.estimate(webkit_web_view_get_estimated_load_progress(tracker.view)))
        }
        _ = satchel_signal_connect(UnsafeMutableRawPointer(view), "notify::estimated-load-progress", unsafeBitCast(estimate, to: GCallback.self), me)
        let loadChanged: @convention(c) (UnsafeMutableRawPointer?, WebKitLoadEvent, gpointer?) -> Void = { _, event, data in
            let tracker = Unmanaged<ViewProgress>.fromOpaque(data!).takeUnretainedValue()
            if event == WEBKIT_LOAD_STARTED { tracker.report(tracker.progress.navigationStarted()) }
            if event == WEBKIT_LOAD_FINISHED { tracker.report(tracker.progress.finished()) }
        }
        _ = satchel_signal_connect(UnsafeMutableRawPointer(view), "load-changed", unsafeBitCast(loadChanged, to: GCallback.self), me)
    }

    private func report(_ value: Double?) {
        guard let value else { return }
        context.progressHandler?(view, value)
    }
}
