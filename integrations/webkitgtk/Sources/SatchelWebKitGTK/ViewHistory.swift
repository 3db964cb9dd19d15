import CSatchelGLib
import CWebKitGTK
import SatchelHost

/// One web view's back navigation (``BackNavigation``): WebKitGTK's committed loads and back-forward list, so the
/// first page shown is the view's root. Main context thread only.
final class ViewHistory {
    let view: UnsafeMutablePointer<WebKitWebView>
    private var rules = BackNavigation()

    init(view: UnsafeMutablePointer<WebKitWebView>) {
        self.view = view
        let committed: @convention(c) (UnsafeMutableRawPointer?, WebKitLoadEvent, gpointer?) -> Void = { _, event, data in
            guard event == WEBKIT_LOAD_COMMITTED else { return }
            Unmanaged<ViewHistory>.fromOpaque(data!).takeUnretainedValue().committed()
        }
        _ = satchel_signal_connect(UnsafeMutableRawPointer(view), "load-changed", unsafeBitCast(committed, to: GCallback.self), Unmanaged.passUnretained(self).toOpaque())
    }

    /// Items behind the current one (WebKitGTK has no count of them: the back list, counted and freed).
    private var backLength: Int {
        let list = webkit_back_forward_list_get_back_list(webkit_web_view_get_back_forward_list(view))
        defer { g_list_free(list) }
        return Int(g_list_length(list))
    }

    private func committed() {
        rules.committed(url: webkit_web_view_get_uri(view).map { String(cString: $0) } ?? "", backLength: backLength)
    }

    var canGoBack: Bool { rules.canGoBack(webKitCanGoBack: webkit_web_view_can_go_back(view) != 0, backLength: backLength) }
}
