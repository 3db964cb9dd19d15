import Foundation
import SatchelCore
import SatchelHTTP
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The ``NetworkFetcher`` for apps on Apple platforms: URLSession, driven through its delegate so that bodies
/// stream (Linux's FoundationNetworking has no `bytes(for:)`). Redirects are handed back to the caller; on Apple
/// platforms a slow consumer suspends the transfer rather than letting chunks pile up in memory.
///
/// Foundation's limits, which is why servers and Linux use `NIOFetcher` (SatchelNetwork) instead:
/// response header fields arrive as a dictionary, so repeated fields are folded into one line (`Set-Cookie` is split
/// back by ``CookieRules/splitFolded(_:)``); the body is handed over decoded, so `Content-Length` cannot be passed on; FoundationNetworking adds
/// request headers of its own; and on Linux a transfer cannot be suspended, so nothing holds the upstream back.
public final class URLSessionFetcher: AsyncNetworkFetcher {
    private let session: URLSession
    private let delegate: Delegate

    public init() {
        delegate = Delegate()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = nil  // cookies come from the CookieProvider, not a shared jar
        configuration.httpShouldSetCookies = false
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    }

    deinit { session.invalidateAndCancel() }

    public func fetchResponse(_ request: ResourceRequest, timeouts: FetchTimeouts) async throws -> ResourceResponse {
        guard let url = URL(string: request.url) else { throw FetchError.unsupportedURL(request.url) }
        var urlRequest = URLRequest(url: url)
        urlRequest.httpMethod = request.method.rawValue
        for field in request.headers { urlRequest.addValue(field.value, forHTTPHeaderField: field.name) }
        if let body = request.body, !body.isEmpty || request.method != .get { urlRequest.httpBody = Data(body) }
        #if canImport(FoundationNetworking)
        // FoundationNetworking gives every POST without a Content-Type "application/x-www-form-urlencoded", so an
        // origin would see a type the page never sent (an XHR of an ArrayBuffer has none; the browser test caught
        // it). A blank value stops that, and libcurl sends no header whose value is blank.
        if RequestMethod(request.method.rawValue.uppercased()) == .post, !request.headers.contains("Content-Type") {
            urlRequest.setValue(" ", forHTTPHeaderField: "Content-Type")
        }
        #endif
        // URLSession's timeout is the longest silence between packets, connecting included: the idle bound.
        urlRequest.timeoutInterval = Self.seconds(max(timeouts.idle, timeouts.connect))
        let task = session.dataTask(with: urlRequest)
        let exchange = Exchange(task: task)
        delegate.register(exchange, for: task)
        // The response head must come within `responseHead`; once it has, the body may take as long as it keeps coming.
        let headDeadline = Task {
            try await Task.sleep(for: timeouts.responseHead)
            exchange.fail(FetchError.timedOut("no response head within \(timeouts.responseHead)"))
            task.cancel()
        }
        return try await withTaskCancellationHandler {
            task.resume()
            defer { headDeadline.cancel() }
            let head = try await exchange.head()
            // The exchange is the body's reader: a consumer that lets go of the body before its end (WebKit stopped the
            // scheme task, the driver stopped reading) cancels the transfer, which would otherwise run on, buffered.
            return ResourceResponse(status: head.status, headers: head.headers, body: .stream(BodyStream(reader: exchange)))
        } onCancel: {
            exchange.fail(CancellationError())
            task.cancel()
        }
    }

    static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }

    /// One request's state: the head the caller waits for, then the body chunks.
    final class Exchange: BodyReader, @unchecked Sendable {
        struct Head {
            let status: Int
            let headers: HTTPHeaders
        }

        private let lock = NSLock()
        let task: URLSessionDataTask
        private var headResult: Result<Head, any Error>?
        private var headWaiter: CheckedContinuation<Head, any Error>?
        private var chunks: [[UInt8]] = []
        private var bufferedBytes = 0
        private var ended: (any Error)?? = nil  // .some(nil): finished cleanly
        private var bodyWaiter: CheckedContinuation<[UInt8]?, any Error>?
        private var suspended = false

        /// Buffered bytes above which the transfer is suspended until the consumer catches up.
        static let highWater = 8 << 20
        static let lowWater = 1 << 20
        /// Linux's FoundationNetworking restarts a transfer on `resume()` after `suspend()` (a 1 GiB response
        /// arrived as 1.97 GiB in CI), so suspending is only used where it works. On Linux the buffer is bounded
        /// by how far the consumer lags, not by design; a fetcher with real backpressure (SatchelNetwork's NIOFetcher) can
        /// be plugged in through ``NetworkFetcher``.
        #if canImport(Darwin)
        static let canSuspend = true
        #else
        static let canSuspend = false
        #endif

        init(task: URLSessionDataTask) { self.task = task }

        func head() async throws -> Head {
            try await withCheckedThrowingContinuation { continuation in
                lock.lock()
                if let headResult {
                    lock.unlock()
                    continuation.resume(with: headResult)
                } else {
                    headWaiter = continuation
                    lock.unlock()
                }
            }
        }

        func receive(head: Head) {
            lock.lock()
            guard headResult == nil else { lock.unlock(); return }
            headResult = .success(head)
            let waiter = headWaiter
            headWaiter = nil
            lock.unlock()
            waiter?.resume(returning: head)
        }

        func receive(data: Data) {
            var bytes = [UInt8](data)
            lock.lock()
            if let waiter = bodyWaiter, chunks.isEmpty {
                bodyWaiter = nil
                lock.unlock()
                // Hand over in chunks of at most 1 MiB.
                if bytes.count > FileRegion.maxChunk {
                    var rest: [[UInt8]] = []
                    var offset = FileRegion.maxChunk
                    while offset < bytes.count {
                        let end = min(bytes.count, offset + FileRegion.maxChunk)
                        rest.append(Array(bytes[offset..<end]))
                        offset = end
                    }
                    bytes = Array(bytes[..<FileRegion.maxChunk])
                    lock.lock()
                    chunks.append(contentsOf: rest)
                    bufferedBytes += rest.reduce(0) { $0 + $1.count }
                    lock.unlock()
                }
                waiter.resume(returning: bytes)
                return
            }
            var offset = 0
            while offset < bytes.count {
                let end = min(bytes.count, offset + FileRegion.maxChunk)
                chunks.append(Array(bytes[offset..<end]))
                offset = end
            }
            bufferedBytes += bytes.count
            let shouldSuspend = Self.canSuspend && bufferedBytes > Self.highWater && !suspended
            if shouldSuspend { suspended = true }
            lock.unlock()
            if shouldSuspend { task.suspend() }
        }

        /// Ends the exchange: with an error, or cleanly when `error` is nil.
        func fail(_ error: (any Error)?) {
            lock.lock()
            guard ended == nil else { lock.unlock(); return }
            ended = .some(error)
            let headWaiter = self.headWaiter
            self.headWaiter = nil
            if headResult == nil { headResult = .failure(error ?? FetchError.badResponse("no response head")) }
            let bodyWaiter = chunks.isEmpty ? self.bodyWaiter : nil
            if bodyWaiter != nil { self.bodyWaiter = nil }
            lock.unlock()
            headWaiter?.resume(throwing: error ?? FetchError.badResponse("no response head"))
            if let bodyWaiter {
                if let error { bodyWaiter.resume(throwing: error) } else { bodyWaiter.resume(returning: nil) }
            }
        }

        func nextChunk() async throws -> [UInt8]? {
            try await withCheckedThrowingContinuation { continuation in
                lock.lock()
                if !chunks.isEmpty {
                    let chunk = chunks.removeFirst()
                    bufferedBytes -= chunk.count
                    let shouldResume = suspended && bufferedBytes < Self.lowWater
                    if shouldResume { suspended = false }
                    lock.unlock()
                    if shouldResume { task.resume() }
                    continuation.resume(returning: chunk)
                } else if let ended {
                    lock.unlock()
                    if let error = ended { continuation.resume(throwing: error) } else { continuation.resume(returning: nil) }
                } else {
                    bodyWaiter = continuation
                    lock.unlock()
                }
            }
        }

        /// The consumer let go before the end, or its task was cancelled: the transfer stops.
        func cancel() {
            fail(CancellationError())
            task.cancel()
        }
    }

    /// Routes URLSession's callbacks to each task's exchange.
    final class Delegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        private let lock = NSLock()
        private var exchanges: [Int: Exchange] = [:]

        func register(_ exchange: Exchange, for task: URLSessionTask) {
            lock.withLock { exchanges[task.taskIdentifier] = exchange }
        }

        private func exchange(_ task: URLSessionTask) -> Exchange? { lock.withLock { exchanges[task.taskIdentifier] } }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse, completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
            guard let http = response as? HTTPURLResponse else {
                exchange(dataTask)?.fail(FetchError.badResponse("not an HTTP response"))
                completionHandler(.cancel)
                return
            }
            var headers = HTTPHeaders()
            for (name, value) in http.allHeaderFields {
                guard let name = name as? String, let value = value as? String else { continue }
                // URLSession hands over the body already decoded and de-chunked, so the length and encoding the
                // origin declared no longer describe it.
                let lower = name.lowercased()
                if lower == "content-encoding" || lower == "content-length" || lower == "transfer-encoding" || lower == "connection" || lower == "keep-alive" { continue }
                // Foundation folded repeated Set-Cookie fields into one line: split them back, one field per cookie.
                if lower == "set-cookie" {
                    for cookie in CookieRules.splitFolded(value) { headers.add(name, cookie) }
                    continue
                }
                headers.add(name, value)
            }
            exchange(dataTask)?.receive(head: .init(status: http.statusCode, headers: headers))
            completionHandler(.allow)
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            exchange(dataTask)?.receive(data: data)
        }

        /// Redirects go back to the page (a web view follows them itself); nothing is followed here.
        func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse, newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
            completionHandler(nil)
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            let exchange = lock.withLock { exchanges.removeValue(forKey: task.taskIdentifier) }
            exchange?.fail(error.map(Self.translate))
        }

        static func translate(_ error: any Error) -> any Error {
            guard let urlError = error as? URLError else { return FetchError.connectionFailed("\(error)") }
            switch urlError.code {
            case .cancelled: return CancellationError()
            case .timedOut: return FetchError.timedOut(urlError.localizedDescription)
            case .badServerResponse, .cannotParseResponse, .zeroByteResource, .cannotDecodeRawData, .cannotDecodeContentData:
                return FetchError.badResponse(urlError.localizedDescription)
            default: return FetchError.connectionFailed(urlError.localizedDescription)
            }
        }
    }
}
