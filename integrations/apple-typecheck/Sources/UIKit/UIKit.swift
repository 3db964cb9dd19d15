// A stand-in for the UIKit the Apple adapter touches, as Apple's documentation declares it: UIView's
// `var window: UIWindow? { get }` and `var isHidden: Bool` (so that WKWebView is a UIView here as it is on iOS:
// WKWebView.h, `@interface WKWebView : UIView` on iOS, `NSView` on macOS), and UIImage's `func pngData() -> Data?`
// (a snapshot's PNG); UIApplication's `shared`, `applicationState`, background tasks and the notifications of its moves
// between foreground and background (SatchelBackgroundLocks). Nothing here runs. UIKit has no open headers to read, so
// webkit-facts.json marks these facts unverified (from the documentation only) and `source-check standin` reports them
// as such.

@_exported import Foundation

@MainActor
open class UIResponder: NSObject {}

@MainActor
open class UIView: UIResponder {
    override public init() {}
    open var window: UIWindow? { nil }
    open var isHidden: Bool = false
}

@MainActor
open class UIWindow: UIView {}

open class UIImage: NSObject, @unchecked Sendable {
    open func pngData() -> Data? { nil }
}

@MainActor
open class UIApplication: UIResponder {
    public enum State: Int, Sendable {
        case active, inactive, background
    }

    open class var shared: UIApplication { UIApplication() }
    open var applicationState: UIApplication.State { .active }
    nonisolated public static let didEnterBackgroundNotification = NSNotification.Name("UIApplicationDidEnterBackgroundNotification")
    nonisolated public static let willEnterForegroundNotification = NSNotification.Name("UIApplicationWillEnterForegroundNotification")
    open func beginBackgroundTask(
        withName taskName: String?, expirationHandler handler: (@MainActor @Sendable () -> Void)? = nil
    ) -> UIBackgroundTaskIdentifier { .invalid }
    open func endBackgroundTask(_ identifier: UIBackgroundTaskIdentifier) {}
}

public struct UIBackgroundTaskIdentifier: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let invalid = UIBackgroundTaskIdentifier(rawValue: 0)
}
