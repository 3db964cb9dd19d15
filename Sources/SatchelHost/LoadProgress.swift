/// A view's load progress for a progress bar, from WebKit's estimate (`estimatedProgress`, WebKitGTK's
/// `estimated-load-progress`), smoothed as the articles suggest: it moves at once when a navigation starts, rises
/// quickly to about 0.9 while WebKit's estimate climbs, and reaches 1 only when the load finished. Within one
/// navigation it never goes backwards (WebKit's own estimate does when a redirect or a new subresource arrives).
public struct LoadProgress: Sendable, Equatable {
    /// Shown as soon as a navigation starts, before WebKit has an estimate.
    public static let start = 0.1
    /// The most shown before the load event.
    public static let ceiling = 0.9

    public private(set) var value: Double = 0
    /// Between a navigation's start and its end: WebKit's estimate means something only then (it also moves for the
    /// blank page a view starts with, before any navigation the app asked for).
    private var navigating = false

    public init() {}

    /// A navigation started: progress starts over.
    public mutating func navigationStarted() -> Double {
        navigating = true
        value = Self.start
        return value
    }

    /// WebKit's estimate changed. Returns the value to show, or nil when it did not change.
    public mutating func estimate(_ estimate: Double) -> Double? {
        guard navigating else { return nil }
        let bounded = min(max(estimate, 0), 1)
        // Quick at first: the square root lifts small estimates (0.25 shows 0.5 of the way).
        let shown = min(Self.ceiling, Self.start + (Self.ceiling - Self.start) * bounded.squareRoot())
        guard shown > value else { return nil }
        value = shown
        return value
    }

    /// The load finished (or failed: the bar goes away either way).
    public mutating func finished() -> Double? {
        guard navigating else { return nil }
        navigating = false
        value = 1
        return value
    }
}
