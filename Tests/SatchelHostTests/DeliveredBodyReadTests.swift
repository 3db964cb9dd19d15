import Foundation
import SatchelCore
import SatchelEngine
import SatchelHTTP
import SatchelTestSupport
@testable import SatchelHost
import SatchelWebKit
import Testing

/// A task whose body WebKit delivered as a stream (`httpBodyStream`, as for some fetch bodies): it reads it as the Apple
/// adapter does, with ``DeliveredBody``, and records for each read whether it ran on the driver's executor (the test's
/// queue standing in for the main thread: under `swift test` on Linux the main actor's jobs do not run on the main
/// thread, so `Thread.isMainThread` cannot tell there).
final class StreamBodyTask: SchemeTask, @unchecked Sendable {
    let request: ResourceRequest
    private let stream: InputStream
    private let lock = NSLock()
    private var reads: [Bool] = []
    private var received: [UInt8] = []
    private var status: Int?
    private var ended = false

    init(_ head: ResourceRequest, body: [UInt8]) {
        request = head
        stream = InputStream(data: Data(body))
    }

    func readRequest() -> ResourceRequest {
        let onExecutor = DispatchQueue.getSpecific(key: RecordingTask.queueKey) == 1
        lock.withLock { reads.append(onExecutor) }
        var whole = request
        whole.body = (try? DeliveredBody.read(body: nil, stream: stream)) ?? nil
        return whole
    }

    /// For each read of the body, whether it ran on the executor.
    var readsOnExecutor: [Bool] { lock.withLock { reads } }
    var response: (status: Int?, body: [UInt8]) { lock.withLock { (status, received) } }

    func didReceive(_ head: ResponseHead) { lock.withLock { status = head.status } }
    func didReceive(_ data: [UInt8], ready: @escaping @Sendable () -> Void) {
        lock.withLock { received += data }
        ready()
    }
    func didFinish() { lock.withLock { ended = true } }
    func didFail(_ error: any Error) { lock.withLock { ended = true } }

    /// Waits (up to 5 s) for the finish or the failure.
    func ended() async -> Bool {
        for _ in 0..<500 {
            if lock.withLock({ ended }) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }
}

/// An upstream that records each request and answers with its body.
final class EchoFetcher: AsyncNetworkFetcher, @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [ResourceRequest] = []
    var requests: [ResourceRequest] { lock.withLock { seen } }

    func fetchResponse(_ request: ResourceRequest, timeouts: FetchTimeouts) async throws -> ResourceResponse {
        lock.withLock { seen.append(request) }
        return ResourceResponse(status: 200, headers: ["Content-Type": "application/octet-stream"], body: .bytes(request.body ?? []))
    }
}

@Suite("The body WebKit delivered is read off the executor's thread (issue 48)")
struct DeliveredBodyReadTests {
    @Test("a task started on the executor has its streamed body read once, off the executor, and the request goes out with it")
    func streamedBodyReadOffExecutor() async throws {
        try await withTemporaryFolder { folder async throws in
            let upstream = EchoFetcher()
            // The executor is a serial queue, as the main queue is in an app, where WebKit's start callback runs.
            let tests = SchemeTaskDriverTests()
            let queue = tests.makeQueue()
            let driver = try tests.driver(folder, queue: queue, fetcher: upstream, allowed: [try HostPattern("origin.example")])
            // Past one 64 KiB read of the stream, so the read loops.
            let body = (0..<(200 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            let task = StreamBodyTask(
                ResourceRequest(method: "POST", url: "https://origin.example/upload", headers: ["Content-Type": "application/octet-stream"]), body: body)
            queue.async { driver.start(task) }
            #expect(await task.ended())
            #expect(task.readsOnExecutor == [false])
            // Lengths, then equality as a Bool: a failed comparison of the bytes themselves would print 200 KiB.
            #expect(upstream.requests.map { $0.body?.count } == [body.count])
            let sentWhole = upstream.requests.first?.body == body
            #expect(sentWhole, "the body that went out differs from the one WebKit delivered")
            #expect(task.response.status == 200)
            let echoedWhole = task.response.body == body
            #expect(echoedWhole, "the answer differs from the body sent")
        }
    }
}
