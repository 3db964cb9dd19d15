import Foundation
import SatchelCore
import SatchelHTTP
import Testing

/// A handle that records its cancellation and answers its completion then, once, as fetchers do.
private final class RecordingHandle: FetchHandle, @unchecked Sendable {
    private let lock = NSLock()
    private var completion: (@Sendable (Int) -> Void)?
    private(set) var cancelled = 0
    init(_ completion: @escaping @Sendable (Int) -> Void) { self.completion = completion }
    func cancel() {
        let pending = lock.withLock { () -> (@Sendable (Int) -> Void)? in
            cancelled += 1
            defer { completion = nil }
            return completion
        }
        pending?(-1)
    }
}

@Suite("The one bridge from callbacks to async/await")
struct AwaitedCallbackTests {
    @Test("an answer given before the start returns, or later, is awaited once")
    func answers() async {
        #expect(await AwaitedCallback.value { (completion: @escaping @Sendable (Int) -> Void) in completion(7); return nil } == 7)
        let later = await AwaitedCallback.value { (completion: @escaping @Sendable (Int) -> Void) -> (any FetchHandle)? in
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { completion(8) }
            return RecordingHandle { _ in }
        }
        #expect(later == 8)
    }

    @Test("cancelling the task cancels the handle, also when it was cancelled before the handle existed")
    func cancellation() async {
        let handles = Locked<[RecordingHandle]>([])
        // Cancelled before it starts: the handle is cancelled as soon as the start returns it.
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await AwaitedCallback.value { (completion: @escaping @Sendable (Int) -> Void) -> (any FetchHandle)? in
                let handle = RecordingHandle(completion)
                handles.withLock { $0.append(handle) }
                return handle
            }
        }
        #expect(await task.value == -1)
        // Cancelled while it waits.
        let waiting = Task {
            await AwaitedCallback.value { (completion: @escaping @Sendable (Int) -> Void) -> (any FetchHandle)? in
                let handle = RecordingHandle(completion)
                handles.withLock { $0.append(handle) }
                return handle
            }
        }
        while handles.withLock({ $0.count }) < 2 { try? await Task.sleep(for: .milliseconds(1)) }
        waiting.cancel()
        #expect(await waiting.value == -1)
        #expect(handles.withLock { $0.map(\.cancelled) } == [1, 1])
    }
}
