#if canImport(WebKit)
import Foundation
import WebKit

/// `WKWebView`s whose web content process already runs, so that opening a page does not wait for WebKit to start one
/// (the WebKitGTK adapter's `WarmViewPool`, for Apple's WebKit). Every view is made by the app's `make` closure from
/// one `WKWebViewConfiguration` (the scheme handler, the hook, one process pool and data store), and warmed by
/// loading `about:blank`. A view handed out is never reused for another page (its back-forward list would keep the
/// last one): ``giveBack(_:)`` drops it and warms a replacement, as ``refill`` says.
@MainActor
public final class WarmWebViewPool {
    public enum Refill: Sendable {
        /// When a view is given back (the default).
        case onGiveBack
        /// As soon as a view is taken.
        case onTake
        /// Only when the app calls ``warm()``.
        case manual
    }

    public var capacity: Int
    public var refill: Refill
    private let make: () -> WKWebView
    private var views: [Entry] = []

    private final class Entry: NSObject, WKNavigationDelegate {
        let view: WKWebView
        var ready = false
        init(view: WKWebView) {
            self.view = view
        }
        func webView(_ webView: WKWebView, didFinish navigation: WKNavigation!) { ready = true }
        // A waiting view whose process died warms again.
        func webViewWebContentProcessDidTerminate(_ webView: WKWebView) {
            ready = false
            webView.loadHTMLString("", baseURL: nil)
        }
    }

    /// - Parameter make: a new view on the app's shared configuration (and, if the app uses ``WebContentRecovery``,
    ///   attached to it).
    public init(capacity: Int = 1, refill: Refill = .onGiveBack, make: @escaping () -> WKWebView) {
        self.capacity = max(0, capacity)
        self.refill = refill
        self.make = make
    }

    public var readyCount: Int { views.filter(\.ready).count }

    /// Starts warming views until the pool holds ``capacity`` of them.
    public func warm() {
        while views.count < capacity {
            let entry = Entry(view: make())
            entry.view.navigationDelegate = entry
            views.append(entry)
            entry.view.loadHTMLString("", baseURL: nil)
        }
    }

    /// A warm view if one is ready, else the oldest warming one, else a new (cold) one. The app sets its own
    /// navigation delegate on it.
    public func take() -> WKWebView {
        let view: WKWebView
        if let index = views.firstIndex(where: \.ready) ?? (views.isEmpty ? nil : 0) {
            view = views.remove(at: index).view
            view.navigationDelegate = nil
        } else {
            view = make()
        }
        if refill == .onTake { warm() }
        return view
    }

    /// The app is done with a view it took (removed from its window): it is dropped, and a replacement warmed.
    public func giveBack(_ view: WKWebView) {
        view.stopLoading()
        if refill == .onGiveBack { warm() }
    }

    /// Drops the waiting views that show a URL `shows` is true for (after a rollback, a view that loaded a page of
    /// the version rolled back must not be handed out), and warms replacements unless the pool refills by hand.
    public func drop(where shows: (String) -> Bool) {
        let before = views.count
        views.removeAll { entry in entry.view.url.map { shows($0.absoluteString) } ?? false }
        if views.count < before, refill != .manual { warm() }
    }

    /// Empties the pool (memory warning, background).
    public func drain() { views = [] }
}
#endif
