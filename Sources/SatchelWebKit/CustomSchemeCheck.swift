/// A custom scheme WebKit would refuse: `setURLSchemeHandler(_:forURLScheme:)` raises an Objective-C exception (which
/// Swift cannot catch: the app dies) for a scheme WebKit handles itself, so the adapter checks every scheme first and
/// throws this instead.
public struct CustomSchemeError: Error, Equatable, Sendable, CustomStringConvertible {
    public let scheme: String
    public var description: String {
        "the custom scheme \(scheme.debugDescription) is one WebKit handles itself; registering a handler for it would raise (choose another, like satchel)"
    }
}

/// Which custom schemes may get a handler.
public enum CustomSchemeCheck {
    /// Schemes WebKit is known to handle itself on every platform (what `WKWebView.handlesURLScheme` answers true for
    /// in Apple's documentation and WebKit's sources), checked even where the platform cannot be asked.
    public static let handledByWebKit: Set<String> = ["http", "https", "file", "about", "data", "blob", "javascript", "ws", "wss", "ftp"]

    /// Throws for the first scheme (in sorted order) that WebKit handles itself, by the list above or by `handles` (on
    /// Apple platforms, `WKWebView.handlesURLScheme`).
    public static func check(_ schemes: Set<String>, handles: (String) -> Bool = { _ in false }) throws(CustomSchemeError) {
        for scheme in schemes.sorted() where handledByWebKit.contains(scheme.lowercased()) || handles(scheme) {
            throw CustomSchemeError(scheme: scheme)
        }
    }
}
