import SatchelCore

/// Sends a request to the network and streams the answer back: the one seam between Satchel's rules and an HTTP
/// stack. SatchelNetwork's `NIOFetcher` (servers, Linux, the updater) and SatchelWebKit's `URLSessionFetcher` (apps on
/// Apple platforms) implement it; the HTTP cache wraps one.
///
/// One form: a callback delivered on the caller's executor, which the loader calls for every request (the server's
/// fast path needs it: an answer on the connection's event loop with no task or hop). Callers that await use
/// ``fetch(_:timeouts:)``, an extension over it through ``AwaitedCallback``; a fetcher whose own work is written with
/// async/await conforms to ``AsyncNetworkFetcher`` instead, which supplies the callback form through one task bridge.
public protocol NetworkFetcher: Sendable {
    /// Fetches `request` (an absolute http(s) URL, body restored, satchel headers removed). Redirects are returned
    /// as they are, never followed. The body is a stream of chunks of at most 1 MiB. `completion` is called once, on
    /// `executor`, possibly before this returns (a request that cannot be made, an answer already stored). A
    /// fetcher that can work on `executor` itself answers there with no task or thread hop; a wrapper (the HTTP
    /// cache) passes `executor` on to the fetcher it wraps, so wrapping never costs a fetcher its fast path.
    /// Failures are ``FetchError``s, or `CancellationError` once cancelled.
    /// - Returns: what cancels the fetch (the caller's client went away); nil when it already ended.
    @discardableResult
    func fetch(
        _ request: ResourceRequest, timeouts: FetchTimeouts, on executor: any AnswerExecutor,
        completion: @escaping @Sendable (Result<ResourceResponse, any Error>) -> Void
    ) -> (any FetchHandle)?

    /// The HTTP cache answers may come from (one wrapping the network), or nil. Without one, a request whose cache
    /// policy never loads (`return-cache-dont-load`) fails at once; with one, an app clears it (logout).
    var responseCache: (any ResponseCache)? { get }
}

extension NetworkFetcher {
    public var responseCache: (any ResponseCache)? { nil }

    /// The fetch awaited (the updater, tests): the callback form through ``AwaitedCallback``; cancelling the task
    /// cancels the upstream request.
    /// - Throws: ``FetchError``, or `CancellationError`.
    public func fetch(_ request: ResourceRequest, timeouts: FetchTimeouts) async throws -> ResourceResponse {
        try await AwaitedCallback.value { completion in
            fetch(request, timeouts: timeouts, on: InlineExecutor.shared, completion: completion)
        }.get()
    }
}

/// A ``NetworkFetcher`` whose work is written with async/await (URLSession's delegate, a test origin): it implements
/// ``fetchResponse(_:timeouts:)`` and gets the callback form, run in a task whose answer is delivered on the caller's
/// executor and which cancelling the handle cancels.
public protocol AsyncNetworkFetcher: NetworkFetcher {
    /// See ``NetworkFetcher/fetch(_:timeouts:on:completion:)``; task cancellation cancels the upstream request.
    func fetchResponse(_ request: ResourceRequest, timeouts: FetchTimeouts) async throws -> ResourceResponse
}

extension AsyncNetworkFetcher {
    @discardableResult
    public func fetch(
        _ request: ResourceRequest, timeouts: FetchTimeouts, on executor: any AnswerExecutor,
        completion: @escaping @Sendable (Result<ResourceResponse, any Error>) -> Void
    ) -> (any FetchHandle)? {
        TaskFetch.start(on: executor, completion: completion) { try await fetchResponse(request, timeouts: timeouts) }
    }
}

/// The one bridge from a callback API (an answer delivered once, a handle that cancels) to async/await: the
/// loader's ``respond`` and every awaited fetch go through it. Cancelling the awaiting task cancels the handle, also
/// when the cancellation came before the handle existed; the answer (a failure, then) is still awaited, once.
public enum AwaitedCallback {
    public static func value<T: Sendable>(_ start: (_ completion: @escaping @Sendable (T) -> Void) -> (any FetchHandle)?) async -> T {
        let box = HandleBox()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
                if let handle = start({ continuation.resume(returning: $0) }) { box.set(handle) }
            }
        } onCancel: {
            box.cancel()
        }
    }

    /// The same for a callback API that may answer before it returns (``Started``).
    public static func value<T: Sendable>(starting start: (_ completion: @escaping @Sendable (T) -> Void) -> Started<T>) async -> T {
        await value { completion in
            switch start(completion) {
            case .answered(let answer):
                completion(answer)
                return nil
            case .pending(let handle):
                return handle
            }
        }
    }

    private final class HandleBox: Sendable {
        private let state = Locked<(handle: (any FetchHandle)?, cancelled: Bool)>((nil, false))

        func set(_ handle: any FetchHandle) {
            let cancelled = state.withLock { state -> Bool in
                state.handle = handle
                return state.cancelled
            }
            if cancelled { handle.cancel() }
        }

        func cancel() {
            state.withLock { $0.cancelled = true; return $0.handle }?.cancel()
        }
    }
}

/// An HTTP cache as the rest of the app sees it: what it holds per host, and forgetting it (SatchelCache's `HTTPCache`).
public protocol ResponseCache: AnyObject, Sendable {
    /// Forgets every stored answer, or those of one host.
    func clear(host: String?)
    /// Bytes stored, by host.
    func storedBytesPerHost() -> [String: Int64]
}

/// Where a caller with a thread of its own wants answers delivered: the server's event loops (SatchelNetwork
/// wraps one as `EventLoopExecutor`), or ``InlineExecutor`` for a caller that takes them on any thread.
public protocol AnswerExecutor: AnyObject, Sendable {
    /// Runs `work` on the executor, after what is running there now.
    func execute(_ work: @escaping @Sendable () -> Void)
}

/// Runs work at once, on the calling thread: for a caller that does not care where an answer arrives.
public final class InlineExecutor: AnswerExecutor {
    public static let shared = InlineExecutor()
    public func execute(_ work: @escaping @Sendable () -> Void) { work() }
}

/// A fetch (or a load) under way, which its caller may cancel: the answer still comes, as a failure, once.
public protocol FetchHandle: AnyObject, Sendable {
    func cancel()
}

/// How a callback API that may answer at once went (the loader's and the request layer's `start`).
public enum Started<Answer: Sendable>: Sendable {
    /// Answered before returning; the completion is not called.
    case answered(Answer)
    /// The answer comes through the completion, once; cancel the handle when the caller no longer wants it (the answer
    /// then still comes, as a failure or a cancellation).
    case pending(any FetchHandle)
}

/// Async work run in a task for a callback caller (``AsyncNetworkFetcher``): its result is delivered on the caller's
/// executor; cancelling the handle cancels the task, which cancels the upstream request.
enum TaskFetch {
    static func start(
        on executor: any AnswerExecutor, completion: @escaping @Sendable (Result<ResourceResponse, any Error>) -> Void,
        _ work: @escaping @Sendable () async throws -> ResourceResponse
    ) -> TaskHandle {
        TaskHandle(Task {
            let result: Result<ResourceResponse, any Error>
            do { result = .success(try await work()) } catch { result = .failure(error) }
            executor.execute { completion(result) }
        })
    }
}

/// A task as a ``FetchHandle``: cancelling the handle cancels the task.
package final class TaskHandle: FetchHandle {
    private let task: Task<Void, Never>
    package init(_ task: Task<Void, Never>) { self.task = task }
    package func cancel() { task.cancel() }
}

/// How long a fetch may wait, and for what. There is deliberately no total: a response whose bytes keep coming
/// is never cut, however long it takes (a 1 GiB download, a slow stream); what is bounded is each wait.
public struct FetchTimeouts: Sendable, Equatable {
    /// Connecting (TCP, and TLS for https).
    public var connect: Duration
    /// From sending the request to the response head. A route's `timeoutMs` sets this: it is what a
    /// network-first route falls back to the package on.
    public var responseHead: Duration
    /// The longest wait for the next body chunk while the consumer is waiting for it. Time the consumer itself
    /// takes (a slow client holding the upstream back) does not count.
    public var idle: Duration

    public init(connect: Duration = .seconds(10), responseHead: Duration = .seconds(30), idle: Duration = .seconds(30)) {
        self.connect = connect
        self.responseHead = responseHead
        self.idle = idle
    }
}

/// Why the network could not answer. Each maps to the status the page sees: 502 (refused, reset, TLS, a
/// response that is not HTTP), 504 (timeout; nothing stored for a request that may not load), 403 (a host that is not
/// allow-listed), 400 (a request that cannot go on the wire as it is: a field, method or target that would end early
/// and change what the origin reads).
public enum FetchError: Error, Equatable, Sendable, CustomStringConvertible {
    case hostNotAllowed(String)
    case connectionFailed(String)
    case badResponse(String)
    case timedOut(String)
    case unsupportedURL(String)
    case invalidRequest(String)
    /// The request's cache policy forbids the network (`return-cache-dont-load`) and the cache holds no answer for it.
    case notCached(String)

    public var status: Int {
        switch self {
        case .hostNotAllowed: 403
        case .invalidRequest: 400
        case .timedOut, .notCached: 504
        case .connectionFailed, .badResponse, .unsupportedURL: 502
        }
    }

    public var description: String {
        switch self {
        case .hostNotAllowed(let host): "host \(host) is not allowed upstream (not on the allow-list)"
        case .connectionFailed(let why): "upstream connection failed: \(why)"
        case .badResponse(let why): "upstream sent a bad response: \(why)"
        case .timedOut(let why): "upstream timed out: \(why)"
        case .unsupportedURL(let url): "cannot fetch \(url)"
        case .invalidRequest(let why): "cannot send the request upstream: \(why)"
        case .notCached(let why): "not in the cache, and the request may not load: \(why)"
        }
    }

    /// What went wrong, without the kind of failure in front (for a message that names its own context).
    public var reason: String {
        switch self {
        case .hostNotAllowed(let host): "\(host) is not on the allow-list"
        case .connectionFailed(let why), .badResponse(let why), .timedOut(let why), .invalidRequest(let why), .notCached(let why): why
        case .unsupportedURL(let url): "unsupported URL \(url)"
        }
    }

    /// A short plain-text response for the page, with `X-Satchel-Error`.
    public var response: ResourceResponse { .error(status, description) }
}
