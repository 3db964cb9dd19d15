import CSatchelGLib
import CWebKitGTK
import Foundation
import SatchelCore
import SatchelEngine
import SatchelHTTP
import SatchelHost
import SatchelWebKit
import Testing
@testable import SatchelWebKitGTK

/// A scheme task whose body is a ``ResponseStream``, as `URISchemeTask` answers WebKit (which needs a real WebKit request):
/// the head hands the stream to `onStream`, chunks are pushed, the stream's abandonment is the driver's stop.
final class StreamTask: SchemeTask, @unchecked Sendable {
    let request: ResourceRequest
    private var body: ResponseStream!
    private let onStream: (UnsafeMutablePointer<GInputStream>) -> Void

    init(url: String, driver: SchemeTaskDriver, onStream: @escaping (UnsafeMutablePointer<GInputStream>) -> Void) {
        request = ResourceRequest(url: url)
        self.onStream = onStream
        body = ResponseStream(onAbandoned: { [driver, id = ObjectIdentifier(self)] in driver.stop(id) })
    }

    func didReceive(_ head: ResponseHead) {
        let stream = body.makeStream(lowWater: URISchemeTask.lowWater)
        onStream(stream)
        g_object_unref(UnsafeMutableRawPointer(stream))
    }

    func didReceive(_ data: [UInt8], ready: @escaping @Sendable () -> Void) { body.push(data, ready: ready) }
    func didFinish() { body.end() }
    func didFail(_ error: any Error) { body.fail("\(error)") }
}

/// An upstream whose body never ends, recording whether its reader was cancelled.
final class EndlessUpstream: AsyncNetworkFetcher, BodyReader, @unchecked Sendable {
    private let lock = NSLock()
    private var wasCancelled = false
    var cancelled: Bool { lock.withLock { wasCancelled } }

    func fetchResponse(_ request: ResourceRequest, timeouts: FetchTimeouts) async throws -> ResourceResponse {
        ResourceResponse(status: 200, headers: ["Content-Type": "application/octet-stream"], body: .stream(BodyStream(reader: self)))
    }

    func nextChunk() async throws -> [UInt8]? {
        if cancelled { throw CancellationError() }
        try await Task.sleep(for: .milliseconds(1))
        return [UInt8](repeating: 0x5A, count: 64 << 10)
    }

    func cancel() { lock.withLock { wasCancelled = true } }
}

func waitUntil(_ seconds: Double = 10, _ condition: () -> Bool) async throws {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition(), Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
}

@Suite("The driver on a GLib main context, answering through the response stream")
struct DriverOnGLibTests {
    @Test("work posted from many threads runs on the context's thread, in the order each thread posted it")
    func executorOrder() async {
        let loop = MainContextThread()
        defer { loop.stop() }
        let executor = loop.executor
        #expect(!executor.isCurrent)
        final class Log: @unchecked Sendable {
            var entries: [(thread: Int, index: Int, onContext: Bool)] = []
        }
        let log = Log()
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<4 {
                group.addTask {
                    for index in 0..<500 {
                        executor.execute { log.entries.append((thread, index, executor.isCurrent)) }
                    }
                }
            }
        }
        let count = await loop.run { log.entries.count }
        #expect(count == 2_000)
        #expect(log.entries.allSatisfy { $0.onContext })
        for thread in 0..<4 {
            #expect(log.entries.filter { $0.thread == thread }.map(\.index) == Array(0..<500))
        }
    }

    @Test("a package file streams through the GInputStream whole, the stream holding at most a chunk and the low-water rest, and the task is dropped")
    func streamsAFile() async throws {
        let package = try TestPackage()
        defer { package.remove() }
        let loop = MainContextThread()
        defer { loop.stop() }
        let driver = SchemeTaskDriver(layer: RequestLayer(loader: ResourceLoader(engine: package.engine, fetcher: URLSessionFetcher(), policy: NetworkPolicy(allowedHosts: [])), configuration: .webKit(hook: nil, cookies: nil)), executor: loop.executor, chunkSize: 256 << 10)
        let reader: StreamReader = await withCheckedContinuation { continuation in
            loop.executor.execute {
                driver.start(StreamTask(url: "satchel://app.example/large.bin", driver: driver) { stream in
                    StreamReader(stream).start { continuation.resume(returning: $0) }
                })
            }
        }
        #expect(reader.error == nil)
        #expect(reader.bytes == TestPackage.files["large.bin"], "\(reader.bytes.count) bytes")
        // The next chunk is pushed once at most low-water bytes are left; the reader's 8 KiB just taken may be counted too.
        #expect(reader.mostHeld <= (256 << 10) + URISchemeTask.lowWater + 8192, "the stream held \(reader.mostHeld) bytes")
        #expect(reader.mostHeld > 64 << 10, "the measure measures nothing")
        try await waitUntil { driver.activeTaskCount == 0 }
        #expect(driver.activeTaskCount == 0 && driver.startedTaskCount == 1)
    }

    @Test("the reader cancelling mid-body stops the task and cancels the upstream body behind it")
    func cancellationReachesUpstream() async throws {
        let package = try TestPackage()
        defer { package.remove() }
        let loop = MainContextThread()
        defer { loop.stop() }
        let upstream = EndlessUpstream()
        let loader = ResourceLoader(engine: package.engine, fetcher: upstream, policy: NetworkPolicy(allowedHosts: [try HostPattern("origin.example")]))
        let driver = SchemeTaskDriver(layer: RequestLayer(loader: loader, configuration: .webKit(hook: nil, cookies: nil)), executor: loop.executor)
        let reader: StreamReader = await withCheckedContinuation { continuation in
            loop.executor.execute {
                driver.start(StreamTask(url: "https://origin.example/endless", driver: driver) { stream in
                    let reader = StreamReader(stream)
                    reader.cancelAfter = 1 << 20
                    reader.start { continuation.resume(returning: $0) }
                })
            }
        }
        #expect(reader.bytes.count >= 1 << 20)
        #expect(reader.error != nil, "the last read failed as cancelled")
        try await waitUntil { driver.activeTaskCount == 0 && upstream.cancelled }
        #expect(driver.activeTaskCount == 0)
        #expect(upstream.cancelled, "the upstream body was not cancelled")
    }
}
