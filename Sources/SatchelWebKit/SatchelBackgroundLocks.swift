#if canImport(UIKit)
import Foundation
import SatchelCore
import SatchelEngine
import SatchelHost
import UIKit

/// The store's locks across the app's suspensions, from UIKit's own notifications (decision 0037). iOS ends an app
/// that is suspended holding a file lock on a file in a shared App Group container (exception 0xdead10cc), and the
/// engine's pins hold one for as long as it serves. When the app goes to the background the store lets go of every
/// lock (its pins kept by a lease meanwhile) and the app runs on, in a background task, until no operation of the store
/// holds one; when it comes back the store takes its pins back, and the engine reads the active versions again if
/// another process swept some it served (``StoreSuspension``, which holds the logic and is tested on Linux).
///
/// ```swift
/// let locks = SatchelBackgroundLocks(store: store, engine: webViews.engine)   // keep it as long as the store
/// ```
///
/// A process the system starts in the background (a refresh) begins suspended: nothing holds a lock into the suspension
/// that follows. A `BGAppRefreshTask` that updates calls ``resume()`` first and ``suspend()`` when it ends or expires
/// (an install under way then stops at its next file, the store unchanged).
@MainActor
public final class SatchelBackgroundLocks {
    public let suspension: StoreSuspension
    /// Told how each return went: versions lost while suspended and the engine reloaded, or what failed.
    public var resumeHandler: ((StoreSuspension.Outcome) -> Void)?
    private let application: UIApplication
    private let observation: Observation
    /// The background task that keeps the app running until the store's last lock is let go.
    private var backgroundTask: UIBackgroundTaskIdentifier = .invalid

    /// The notification observers, removed with this object (a block observer stays registered until removed).
    private final class Observation: @unchecked Sendable {
        let center: NotificationCenter
        var tokens: [any NSObjectProtocol] = []
        init(center: NotificationCenter) { self.center = center }
        deinit { for token in tokens { center.removeObserver(token) } }
    }

    /// - Parameters:
    ///   - store: the app's `PackageStore`.
    ///   - engine: the engine that serves from it (`SatchelWebViews.engine`).
    public init(
        store: any SuspendableLocks, engine: ResourceEngine, application: UIApplication = .shared, notifications: NotificationCenter = .default
    ) {
        suspension = StoreSuspension(locks: store, engine: engine)
        self.application = application
        observation = Observation(center: notifications)
        // Posted on the main thread; the work is the main actor's, like every other call into this object.
        observation.tokens = [
            notifications.addObserver(forName: UIApplication.didEnterBackgroundNotification, object: nil, queue: .main) { [weak self] _ in
                Task { @MainActor in self?.suspend() }
            },
            notifications.addObserver(forName: UIApplication.willEnterForegroundNotification, object: nil, queue: .main) { [weak self] _ in
                Task { @MainActor in self?.resume() }
            },
        ]
        // Started in the background (a refresh, a push): no didEnterBackground comes, and the suspension may follow.
        if application.applicationState == .background { suspend() }
    }

    /// Lets go of the store's locks; the app keeps running (a background task) until the last operation holding one
    /// has let go, which an install does before its next file.
    public func suspend() {
        endBackgroundTask()
        let task = application.beginBackgroundTask(withName: "satchel.locks") { [weak self] in self?.endBackgroundTask() }
        backgroundTask = task
        suspension.suspend {
            Task { @MainActor [weak self] in
                guard let self, self.backgroundTask == task else { return }
                self.endBackgroundTask()
            }
        }
    }

    /// Takes the store's pins back (and reloads the engine if versions it served were swept), then tells
    /// ``resumeHandler``.
    public func resume() {
        endBackgroundTask()
        let outcome = suspension.resume()
        resumeHandler?(outcome)
    }

    private func endBackgroundTask() {
        guard backgroundTask != .invalid else { return }
        application.endBackgroundTask(backgroundTask)
        backgroundTask = .invalid
    }
}
#endif
