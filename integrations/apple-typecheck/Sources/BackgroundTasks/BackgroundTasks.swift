// A stand-in for the BackgroundTasks the Apple guide's background refresh touches (docs/apple.md), as Apple's
// documentation declares it: BGTaskScheduler's `shared`, `register(forTaskWithIdentifier:using:launchHandler:)`,
// `submit(_:)` and `cancel(taskRequestWithIdentifier:)`; BGTask's `identifier`, `expirationHandler` and
// `setTaskCompleted(success:)`; BGAppRefreshTask; BGTaskRequest's `identifier` and `earliestBeginDate`; and
// BGAppRefreshTaskRequest. iOS 13.0 and Mac Catalyst 13.1 on, not macOS (the documentation lists no macOS). Nothing
// here runs. BackgroundTasks has no open headers to read, so webkit-facts.json marks these facts unverified (from the
// documentation only) and `source-check standin` reports them as such.

@_exported import Foundation

@available(iOS 13.0, *)
@available(macOS, unavailable)
open class BGTaskScheduler: NSObject {
    open class var shared: BGTaskScheduler { BGTaskScheduler() }
    open func register(
        forTaskWithIdentifier identifier: String, using queue: DispatchQueue?, launchHandler: @escaping (BGTask) -> Void
    ) -> Bool { true }
    open func submit(_ taskRequest: BGTaskRequest) throws {}
    open func cancel(taskRequestWithIdentifier identifier: String) {}
}

@available(iOS 13.0, *)
@available(macOS, unavailable)
open class BGTask: NSObject {
    open var identifier: String { "" }
    open var expirationHandler: (() -> Void)?
    open func setTaskCompleted(success: Bool) {}
}

@available(iOS 13.0, *)
@available(macOS, unavailable)
open class BGAppRefreshTask: BGTask {}

@available(iOS 13.0, *)
@available(macOS, unavailable)
open class BGTaskRequest: NSObject {
    open var identifier: String { "" }
    open var earliestBeginDate: Date?
}

@available(iOS 13.0, *)
@available(macOS, unavailable)
open class BGAppRefreshTaskRequest: BGTaskRequest {
    public init(identifier: String) {}
}
