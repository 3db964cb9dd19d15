import Dispatch
import SatchelCore
import SatchelEngine
import SatchelHTTP

/// The head of a response as a scheme task receives it.
public struct ResponseHead: Sendable, Equatable {
    public var status: Int
    public var headers: HTTPHeaders
    /// The body's length when known in advance (a package file, a `Content-Length` from the network); WebKitGTK
    /// wants it when the response is created.
    public var bodyLength: Int64?

    public init(status: Int, headers: HTTPHeaders, bodyLength: Int64? = nil) {
        self.status = status
        self.headers = headers
        self.bodyLength = bodyLength
    }
}

/// What the driver needs of a WebKit scheme task (`WKURLSchemeTask`, a WebKitGTK `WebKitURISchemeRequest`), and
/// what the Linux tests stand in for. WebKit's contract: exactly one response before any data, then data, then
/// exactly one finish or fail, and nothing at all once the task was stopped; every call on the executor's
/// thread. Breaking it crashes the app ("This task has already been stopped"), which is why the driver, not the
/// adapter, owns these rules.
public protocol SchemeTask: AnyObject, Sendable {
    /// The request as far as it is known at start, on the executor: method, URL and headers (the driver keeps the
    /// URL and the keepalive marker from it), and the body only when the task already holds it in memory.
    var request: ResourceRequest { get }
    /// The whole request, body included. The driver awaits it once, from its work and never on the executor, because
    /// the body may have to be read from a stream (up to 64 MiB of `httpBodyStream` for a `WKURLSchemeTask`), which
    /// must not hold up the executor's thread (the main thread in an app, issue 48) nor a thread of Swift's
    /// cooperative pool: a task that reads a stream does it on a thread of its own. Default: ``request``, for a task
    /// whose body is already in it.
    func readRequest() async -> ResourceRequest
    func didReceive(_ head: ResponseHead)
    /// Hands over a chunk; the task calls `ready` (on the executor's thread, once) when it can take the next.
    /// `WKURLSchemeTask` copies the bytes at once, so its adapter calls `ready` at once; a `GInputStream` calls it
    /// when WebKit has read what it holds. Until then the driver reads nothing more (bounded memory).
    func didReceive(_ data: [UInt8], ready: @escaping @Sendable () -> Void)
    func didFinish()
    func didFail(_ error: any Error)
}

extension SchemeTask {
    public func readRequest() async -> ResourceRequest { request }
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

/// Drives scheme tasks from the resource loader while keeping WebKit's contract, whatever the timing of
/// `stop`: all task calls happen on one executor (the main queue, or the GLib main context), the loader's
/// work runs off it and is cancelled on stop, and each chunk waits until the task is ready for the next
/// (bounded memory, in order).
///
/// The driver owns the bookkeeping: a task is known from `start` until it finishes, fails or is stopped, and
/// forgotten then. Adapters keep no table of their own; they name a task by an ``ObjectIdentifier`` of
/// whatever WebKit hands them again in `stop` (the `WKURLSchemeTask`), or of the adapter object itself.
public final class SchemeTaskDriver: Sendable {
    /// What answers each task: the request layer with the adapter's ``HostConfiguration`` (the app's cookie jar,
    /// redirects as pages).
    public let layer: RequestLayer
    public var loader: ResourceLoader { layer.loader }
    /// Where every call to a task is made.
    public let executor: any SchemeTaskExecutor
    /// Largest chunk handed to a task (WebKit copies each into its process).
    public let chunkSize: Int
    /// The launch that shows the app's pages, begun before the first task is answered and awaited by every task until
    /// it has (decision 0036); nil: this driver counts no launch.
    public let launch: PageLaunch?
    private let running = Locked(Bookkeeping())

    private struct Bookkeeping {
        var tasks: [ObjectIdentifier: Running] = [:]
        var started = 0
    }

    /// One task's state; `state` and `readyWaiter` are only touched on the executor.
    private final class Running: @unchecked Sendable {
        var state = SchemeTaskState()
        /// The page sent it with `keepalive` (the hook's marker): a stop ends delivery to WebKit, not the work.
        let keepalive: Bool
        /// For ``activeTasks``.
        let url: String
        /// The web view the task belongs to, for ``stopAll(in:)``.
        let group: ObjectIdentifier?
        init(keepalive: Bool, url: String, group: ObjectIdentifier?) {
            self.keepalive = keepalive
            self.url = url
            self.group = group
        }
        var work: Task<Void, Never>?
        /// The delivery waiting for the task to take another chunk (resumed with false by a stop).
        var readyWaiter: CheckedContinuation<Bool, Never>?

        func resumeReadyWaiter() {
            let waiter = readyWaiter
            readyWaiter = nil
            waiter?.resume(returning: state.chunkReady() == .send)
        }
    }

    /// The app's cookie jar, when the layer has one (``HostConfiguration/cookies``).
    public var cookies: AppCookieJar? { layer.configuration.cookies }

    public init(layer: RequestLayer, executor: any SchemeTaskExecutor, chunkSize: Int = 256 << 10, launch: PageLaunch? = nil) {
        self.layer = layer
        self.executor = executor
        self.chunkSize = max(1, min(chunkSize, FileRegion.maxChunk))
        self.launch = launch
    }

    /// A driver calling tasks on a serial Dispatch queue (the main queue in an app on Apple platforms).
    public convenience init(layer: RequestLayer, queue: DispatchQueue = .main, chunkSize: Int = 256 << 10, launch: PageLaunch? = nil) {
        self.init(layer: layer, executor: DispatchQueueExecutor(queue), chunkSize: chunkSize, launch: launch)
    }

    /// Tasks started and not yet finished, failed or stopped.
    public var activeTaskCount: Int { running.withLock { $0.tasks.count } }
    /// Tasks started since the driver was made.
    public var startedTaskCount: Int { running.withLock { $0.started } }

    /// The tasks started and not yet ended, each as its phase and URL (`awaiting response https://…`), sorted:
    /// for diagnosing a page whose loads never end. Call on the executor.
    public var activeTasks: [String] {
        assert(executor.isCurrent, "SchemeTaskDriver.activeTasks must be read on its executor")
        return running.withLock { book in
            book.tasks.values.map { task in
                let phase = switch task.state.state {
                case .awaitingResponse: "awaiting response"
                case .streaming: "streaming"
                case .completed: "completed"
                case .stopped: "stopped"
                }
                return "\(phase) \(task.url)"
            }.sorted()
        }
    }

    /// Starts answering `task`, known as `id` (default: the task object itself) until it ends or ``stop(_:)``.
    /// `group` names the web view it belongs to, so a container can end all of a view's tasks at once
    /// (``stopAll(in:)``). Call on the executor (WebKit's start callback).
    public func start(_ task: any SchemeTask, id: ObjectIdentifier? = nil, group: ObjectIdentifier? = nil) {
        let running = Running(
            keepalive: loader.engine.configuration.bodyChannels.map { task.request.headers.contains($0.keepaliveHeader) } ?? false,
            url: task.request.url, group: group)
        let key = id ?? ObjectIdentifier(task)
        self.running.withLock {
            $0.tasks[key] = running
            $0.started += 1
        }
        running.work = Task { [self] in
            defer { forget(key, running) }
            // The body is read here, off the executor, whose thread (the main thread in an app) would otherwise wait
            // for up to 64 MiB of a stream (issue 48); and first, so as close to WebKit's start as it can be.
            let request = await task.readRequest()
            // Nothing is read from a package before the launch that shows it was counted and its versions pinned.
            if let launch { _ = await launch.begin() }
            let response = await layer.respond(to: request).response
            let head = ResponseHead(status: response.status, headers: response.headers, bodyLength: Self.bodyLength(response))
            await deliver(running) { state in
                guard state.responseReady() == .send else { return }
                task.didReceive(head)
            }
            do {
                // Every kind of body as bounded chunks, read lazily; leaving the loop early (a stop cancels this task, or
                // the task no longer takes chunks) drops the iterator, which cancels an upstream body behind it. A
                // stopped keepalive request gets here too, once its request went out: its answer is not read on.
                for try await chunk in response.body.chunks(size: chunkSize) {
                    try Task.checkCancellation()
                    guard await send(chunk, to: task, running) else { break }
                }
                await deliver(running) { state in
                    if state.ended() == .send { task.didFinish() }
                }
            } catch {
                await deliver(running) { state in
                    if state.ended() == .send { task.didFail(error) }
                }
            }
        }
    }

    /// WebKit stopped the task: nothing more reaches it, and its work is cancelled (the upstream request, an open
    /// file). Call on the executor. Stopping a task that already ended, or twice, does nothing.
    ///
    /// A keepalive request (a beacon) is the exception: WebKit stops custom-scheme loads with their frame whatever
    /// `keepalive` says, so a beacon sent as the page leaves is often stopped before its upstream request went out.
    /// Its work runs on until the request has gone out and its answer's head is back (the body is then dropped,
    /// which cancels it), as a browser does for keepalive loads over HTTP.
    public func stop(_ id: ObjectIdentifier) {
        assert(executor.isCurrent, "SchemeTaskDriver.stop must be called on its executor")
        guard let running = running.withLock({ $0.tasks.removeValue(forKey: id) }) else { return }
        if running.state.stopRequested(), !running.keepalive { running.work?.cancel() }
        running.resumeReadyWaiter()
    }

    /// Stops every task of the web view `group` (its web process died: WebKit will not stop them itself in every
    /// case, and their upstream requests must not run on for a page that is gone). Call on the executor.
    /// - Returns: how many tasks were stopped.
    @discardableResult
    public func stopAll(in group: ObjectIdentifier) -> Int {
        assert(executor.isCurrent, "SchemeTaskDriver.stopAll must be called on its executor")
        let ids = running.withLock { book in book.tasks.filter { $0.value.group == group }.map(\.key) }
        for id in ids { stop(id) }
        return ids.count
    }

    /// ``stop(_:)`` for a task started without an explicit id.
    public func stop(_ task: any SchemeTask) { stop(ObjectIdentifier(task)) }

    /// Drops the task from the table when its work ends, unless a stop (or a new task under the same id) came first.
    private func forget(_ key: ObjectIdentifier, _ finished: Running) {
        running.withLock { book in
            if let current = book.tasks[key], current === finished { book.tasks.removeValue(forKey: key) }
        }
    }

    /// Runs `body` on the executor with the task's state, and waits for it.
    private func deliver(_ running: Running, _ body: @escaping @Sendable (inout SchemeTaskState) -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            executor.execute {
                body(&running.state)
                continuation.resume()
            }
        }
    }

    /// The length a response's body will have, from the body itself or its `Content-Length` (never for a 304 or a
    /// HEAD answer, whose `Content-Length` describes a body that is not sent).
    static func bodyLength(_ response: ResourceResponse) -> Int64? {
        if case .stream = response.body {
            guard response.status != 304, response.status >= 200, let value = response.headers[ResponseField.contentLength] else { return nil }
            return Int64(value.filter { $0 != " " && $0 != "\t" })
        }
        return response.body.knownLength
    }

    /// Hands `chunk` to the task on the executor and waits until the task is ready for the next one (or was stopped).
    /// Returns false when the task takes no more chunks (stopped, or already ended).
    private func send(_ chunk: [UInt8], to task: any SchemeTask, _ running: Running) async -> Bool {
        let executor = self.executor
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            executor.execute {
                guard running.state.chunkReady() == .send else { return continuation.resume(returning: false) }
                running.readyWaiter = continuation
                task.didReceive(chunk) { [executor] in
                    if executor.isCurrent { running.resumeReadyWaiter() } else { executor.execute { running.resumeReadyWaiter() } }
                }
            }
        }
    }
}
