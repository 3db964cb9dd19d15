import Dispatch
import SatchelCore
import SatchelEngine

/// The head of a response as a scheme task receives it.
public struct ResponseHead: Sendable, Equatable {
    public var status: Int
    public var headers: HTTPHeaders
}

/// What the driver needs of a WebKit scheme task (`WKURLSchemeTask`), and what the Linux tests stand in for.
/// WebKit's contract: exactly one response before any data, then data, then exactly one finish or fail, and
/// nothing at all once the task was stopped; every call on the same thread. Breaking it crashes the app
/// ("This task has already been stopped"), which is why the driver, not the adapter, owns these rules.
public protocol SchemeTask: AnyObject, Sendable {
    var request: ResourceRequest { get }
    func didReceive(_ head: ResponseHead)
    func didReceive(_ data: [UInt8])
    func didFinish()
    func didFail(_ error: any Error)
}

/// The life of one scheme task as a state machine whose transitions return what to do (swift-nio's style),
/// so every rule of the contract is in one place and testable without WebKit.
struct SchemeTaskState {
    enum State {
        /// Started; the response head is being computed.
        case awaitingResponse
        /// The head was sent; body chunks may follow.
        case streaming
        /// Finished or failed: nothing more may be sent.
        case completed
        /// WebKit stopped the task: nothing more may be sent, and the work is cancelled.
        case stopped
    }

    enum Action: Equatable {
        case send
        case drop
    }

    private(set) var state = State.awaitingResponse

    mutating func responseReady() -> Action {
        guard state == .awaitingResponse else { return .drop }
        state = .streaming
        return .send
    }

    mutating func chunkReady() -> Action { state == .streaming ? .send : .drop }

    /// Finish or fail: allowed once, before a stop; a failure before any response is allowed too.
    mutating func ended() -> Action {
        guard state == .streaming || state == .awaitingResponse else { return .drop }
        state = .completed
        return .send
    }

    /// Returns whether the work must be cancelled.
    mutating func stopRequested() -> Bool {
        defer { state = .stopped }
        return state == .awaitingResponse || state == .streaming
    }
}

/// Drives scheme tasks from the request pipeline while keeping WebKit's contract, whatever the timing of
/// `stop`: all task calls happen on one serial queue (the main queue in an app), the pipeline's work runs
/// off it and is cancelled on stop, and each chunk waits for the previous one to be delivered (bounded
/// memory, in order).
public final class SchemeTaskDriver: Sendable {
    public let pipeline: RequestPipeline
    /// Where every call to a task is made. WebKit wants the main thread.
    public let queue: DispatchQueue
    /// Largest chunk handed to a task (WebKit copies each into its process).
    public let chunkSize: Int
    private let running = Locked([ObjectIdentifier: Running]())

    private final class Running: @unchecked Sendable {
        var state = SchemeTaskState()  // only touched on `queue`
        var work: Task<Void, Never>?
    }

    public init(pipeline: RequestPipeline, queue: DispatchQueue = .main, chunkSize: Int = 256 << 10) {
        self.pipeline = pipeline
        self.queue = queue
        self.chunkSize = max(1, min(chunkSize, FileRegion.maxChunk))
    }

    /// Starts answering `task`. Call on ``queue`` (WebKit's `webView(_:start:)`).
    public func start(_ task: any SchemeTask) {
        let running = Running()
        let key = ObjectIdentifier(task)
        self.running.withLock { $0[key] = running }
        let request = task.request
        running.work = Task { [self] in
            let (response, _, _) = await pipeline.respond(to: request)
            await deliver(task, running) { state in
                guard state.responseReady() == .send else { return }
                task.didReceive(ResponseHead(status: response.status, headers: response.headers))
            }
            do {
                try await stream(response.body) { chunk in
                    await deliver(task, running) { state in
                        if state.chunkReady() == .send { task.didReceive(chunk) }
                    }
                }
                await deliver(task, running) { state in
                    if state.ended() == .send { task.didFinish() }
                }
            } catch {
                await deliver(task, running) { state in
                    if state.ended() == .send { task.didFail(error) }
                }
            }
            _ = self.running.withLock { $0.removeValue(forKey: key) }
        }
    }

    /// WebKit stopped the task: nothing more reaches it, and its work is cancelled. Call on ``queue``.
    public func stop(_ task: any SchemeTask) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let running = running.withLock({ $0.removeValue(forKey: ObjectIdentifier(task)) }) else { return }
        if running.state.stopRequested() { running.work?.cancel() }
    }

    /// Runs `body` on the queue with the task's state, and waits for it: the next chunk is read only after
    /// this one was handed over.
    private func deliver(_ task: any SchemeTask, _ running: Running, _ body: @escaping @Sendable (inout SchemeTaskState) -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                body(&running.state)
                continuation.resume()
            }
        }
    }

    private func stream(_ body: ResponseBody, _ send: ([UInt8]) async -> Void) async throws {
        switch body {
        case .empty: return
        case .bytes(let bytes):
            var offset = 0
            while offset < bytes.count {
                try Task.checkCancellation()
                let end = min(bytes.count, offset + chunkSize)
                await send(Array(bytes[offset..<end]))
                offset = end
            }
        case .file(let region):
            for try await chunk in region.chunks(size: chunkSize) {
                try Task.checkCancellation()
                await send(chunk)
            }
        case .stream(let stream):
            for try await chunk in stream {
                try Task.checkCancellation()
                var offset = 0
                while offset < chunk.count {
                    let end = min(chunk.count, offset + chunkSize)
                    await send(Array(chunk[offset..<end]))
                    offset = end
                }
            }
        }
    }
}
