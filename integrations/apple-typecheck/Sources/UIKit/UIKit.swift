// A stand-in for the two UIKit properties the Apple adapter reads, as Apple's UIView documentation declares them
// (`var window: UIWindow? { get }`, `var isHidden: Bool`), so that WKWebView is a UIView here as it is on iOS
// (WKWebView.h: `@interface WKWebView : UIView` on iOS, `NSView` on macOS). Nothing here runs.

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
