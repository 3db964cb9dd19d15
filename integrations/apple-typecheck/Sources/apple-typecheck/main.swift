// Names every Apple-only type of the adapter: if `#if canImport(WebKit)` were false for SatchelWebKit (the stand-in
// not in reach), these would not exist and this would not build, so the check cannot pass by compiling nothing.
import SatchelWebKit
import WebKit

let appleTypes: [Any.Type] = [
    SatchelSchemeHandler.self, SatchelBodyMessageHandler.self, SatchelBridgeMessageHandler.self, SatchelWebViews.self,
    WebContentRecovery.self, WarmWebViewPool.self, WKCookieStoreAdapter.self, WebContentTrials.self, SatchelTrialMessageHandler.self,
    SatchelBackgroundLocks.self,
]
print("type-checked against the WebKit stand-in: \(appleTypes.map { "\($0)" }.joined(separator: ", "))")
