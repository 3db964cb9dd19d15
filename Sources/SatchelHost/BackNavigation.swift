/// Back navigation in a container's view (004 §2.8.3, §2.8.4), decided once for both adapters:
/// - the first page the view showed is its root: going back from it leaves the web view (the app pops its screen)
///   rather than showing what came before (a warm view's `about:blank`);
/// - a page restored from the back-forward cache runs no `load` handler again, so it gets `satchel:restored`
///   (``restoredEventScript``, installed in every view at document start);
/// - on Apple's WebKit, text size can grow after going back: ``textSizeReset`` runs after each finished navigation.
public struct BackNavigation: Sendable, Equatable {
    /// Items WebKit's back list held behind the root page when it was shown; nil before the first page.
    public private(set) var rootBackLength: Int?

    public init() {}

    /// A page was committed in the view, with `backLength` items behind it in WebKit's back list. The first one that
    /// is not blank becomes the root.
    public mutating func committed(url: String, backLength: Int) {
        guard rootBackLength == nil, !url.isEmpty, url != "about:blank" else { return }
        rootBackLength = backLength
    }

    /// Whether the view can go back within its own pages: WebKit can, and the current page is past the root.
    public func canGoBack(webKitCanGoBack: Bool, backLength: Int) -> Bool {
        guard webKitCanGoBack, let rootBackLength else { return false }
        return backLength > rootBackLength
    }

    /// Dispatches `satchel:restored` on a page shown again from the back-forward cache (`pageshow` with `persisted`).
    public static let restoredEventScript =
        "addEventListener('pageshow', (event) => { if (event.persisted) dispatchEvent(new CustomEvent('satchel:restored')); });"

    /// Resets WebKit's text size adjustment on the page (Apple's WebKit, after a navigation finished).
    public static let textSizeReset = "if (document.body) document.body.style.webkitTextSizeAdjust = '100%';"
}
