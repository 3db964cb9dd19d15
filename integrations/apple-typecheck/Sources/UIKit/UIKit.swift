// A stand-in for the UIKit the Apple adapter touches, as Apple's documentation declares it: UIView's
// `var window: UIWindow? { get }` and `var isHidden: Bool` (so that WKWebView is a UIView here as it is on iOS:
// WKWebView.h, `@interface WKWebView : UIView` on iOS, `NSView` on macOS), and UIImage's `func pngData() -> Data?`
// (a snapshot's PNG). Nothing here runs. UIKit has no open headers to read, so webkit-facts.json marks these facts
// unverified (from the documentation only) and `source-check standin` reports them as such.

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
