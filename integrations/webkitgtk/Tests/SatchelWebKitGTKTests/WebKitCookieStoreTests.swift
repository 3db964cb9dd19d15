import CWebKitGTK
import Foundation
import SatchelCore
import SatchelHost
import SatchelWebKit
import Testing
@testable import SatchelWebKitGTK

/// Counts calls of a store's `changed` and lets a test wait for the nth.
final class ChangeCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    private var waiters: [(count: Int, continuation: CheckedContinuation<Bool, Never>)] = []

    var calls: Int { lock.withLock { count } }

    func changed() {
        let reached = lock.withLock {
            count += 1
            let reached = waiters.filter { $0.count <= count }
            waiters.removeAll { $0.count <= count }
            return reached
        }
        for waiter in reached { waiter.continuation.resume(returning: true) }
    }

    /// True once `count` calls came; false after `limit`, so that a signal that never comes fails the test rather than
    /// hanging it (a correct run never comes near the limit: WebKit answers in milliseconds).
    func reached(_ count: Int, within limit: Duration) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let already = lock.withLock {
                if self.count >= count { return true }
                waiters.append((count, continuation))
                return false
            }
            if already { return continuation.resume(returning: true) }
            Task {
                try? await Task.sleep(for: limit)
                let waiting = lock.withLock {
                    guard let index = waiters.firstIndex(where: { $0.count == count }) else { return nil as CheckedContinuation<Bool, Never>? }
                    return waiters.remove(at: index).continuation
                }
                waiting?.resume(returning: false)
            }
        }
    }
}

@Suite("WebKit's cookie manager tells the jar of its changes (issue 48)")
struct WebKitCookieStoreTests {
    /// The one thread that touches WebKit in this process: WebKit takes the first thread that calls it for its main
    /// thread (two tests each on a thread of its own abort). It runs until the process ends.
    static let webKit = MainContextThread()

    /// `WebKitNetworkSession*` and its `WebKitCookieManager*`, made and freed on the context's thread.
    final class Session: @unchecked Sendable {
        let session: OpaquePointer
        let manager: OpaquePointer
        init() {
            session = webkit_network_session_new_ephemeral()
            manager = webkit_network_session_get_cookie_manager(session)
        }
        func free() { g_object_unref(UnsafeMutableRawPointer(session)) }
    }

    @Test("the manager's changed signal reaches the store's observer: once when it is connected, then after a change made behind the jar's back")
    func changedSignal() async throws {
        let thread = Self.webKit
        let session = await thread.run { Session() }
        let store = WebKitCookieStore(manager: session.manager, executor: thread.executor)
        let counter = ChangeCounter()
        #expect(store.observeChanges { counter.changed() })
        #expect(await counter.reached(1, within: .seconds(60)), "connecting reports one change")
        // Another store on the same manager writes: the jar's store hears of it only through the signal.
        await WebKitCookieStore(manager: session.manager, executor: thread.executor).setCookie(Cookie(name: "b", value: "2", domain: "app.example"))
        #expect(await counter.reached(2, within: .seconds(60)), "WebKit's changed signal")
        #expect(await store.allCookies().map(\.pair) == ["b=2"])
        await thread.run { session.free() }
    }

    @Test("kept: a cookie as libsoup gives it back (SameSite not given as Lax, whole seconds, no creation time)")
    func kept() async {
        let thread = Self.webKit
        let session = await thread.run { Session() }
        let store = WebKitCookieStore(manager: session.manager, executor: thread.executor)
        let cookie = Cookie(name: "a", value: "1", domain: "app.example", hostOnly: false, path: "/x", expires: 2_000_000_000.75, secure: true, created: 5)
        #expect(store.kept(cookie) == Cookie(name: "a", value: "1", domain: "app.example", hostOnly: false, path: "/x", expires: 2_000_000_000, secure: true, sameSite: .lax))
        await thread.run { session.free() }
    }
}
