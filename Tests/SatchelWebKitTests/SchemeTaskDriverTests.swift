import Foundation
import SatchelCore
import SatchelEngine
import SatchelTestSupport
@testable import SatchelWebKit
import Testing

/// A stand-in for WKURLSchemeTask that records every call and every breach of WebKit's contract.
final class RecordingTask: SchemeTask, @unchecked Sendable {
    static let queueKey = DispatchSpecificKey<Int>()
    let request: ResourceRequest
    private let lock = NSLock()
    private(set) var calls: [String] = []
    private(set) var violations: [String] = []
    private(set) var bytes = 0
    private var responded = false
    private var ended = false
    private var stopped = false

    init(url: String) { request = ResourceRequest(url: url) }

    private func record(_ call: String, _ check: () -> String?) {
        lock.withLock {
            if DispatchQueue.getSpecific(key: Self.queueKey) != 1 { violations.append("\(call) off the serial queue") }
            if stopped { violations.append("\(call) after stop") }
            if let problem = check() { violations.append(problem) }
            calls.append(call)
        }
    }

    func didReceive(_ head: ResponseHead) {
        record("response") {
            defer { responded = true }
            return responded ? "second response" : ended ? "response after the end" : nil
        }
    }

    func didReceive(_ data: [UInt8]) {
        record("data") {
            bytes += data.count
            return !responded ? "data before the response" : ended ? "data after the end" : nil
        }
    }

    func didFinish() {
        record("finish") {
            defer { ended = true }
            return !responded ? "finish before the response" : ended ? "second end" : nil
        }
    }

    func didFail(_ error: any Error) {
        record("fail") {
            defer { ended = true }
            return ended ? "second end" : nil
        }
    }

    /// Called on the queue just before the driver's stop.
    func markStopped() { lock.withLock { stopped = true } }

    var snapshot: (calls: [String], violations: [String], bytes: Int) { lock.withLock { (calls, violations, bytes) } }
}

@Suite("The scheme task driver keeps WebKit's contract")
struct SchemeTaskDriverTests {
    func driver(_ folder: String, queue: DispatchQueue) throws -> SchemeTaskDriver {
        let files: [String: [UInt8]] = [
            "index.html": Array("<h1>hi</h1>".utf8),
            "small.js": (0..<(48 << 10)).map { UInt8(truncatingIfNeeded: $0) },
            "large.bin": (0..<(200 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 3) },
        ]
        let root = folder + "/pkg"
        var records: [FileRecord] = []
        for (path, bytes) in files {
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: root + "/" + path))
            let safe = try SafePath(validating: path)
            records.append(FileRecord(path: safe, size: Int64(bytes.count), sha256: Digests.sha256Hex(bytes), mime: MIMETable.entry(for: safe).type))
        }
        let manifest = try Manifest(
            id: PackageID("app"), version: SemanticVersion("1.0.0"), createdAt: Timestamp(secondsSinceEpoch: 0),
            scope: Scope(hosts: [HostPattern("app.example")]), files: records)
        struct Source: PackageSource {
            let package: ServedPackage
            func servedPackages() throws -> [ServedPackage] { [package] }
            func changeToken() -> [Int64] { [0] }
            func pin(_ packages: [ServedPackage]) throws -> any Sendable { 0 }
        }
        let engine = try ResourceEngine(source: Source(package: ServedPackage(manifest: manifest, folder: root)))
        return SchemeTaskDriver(pipeline: RequestPipeline(engine: engine, policy: NetworkPolicy(allowedHosts: [])), queue: queue, chunkSize: 16 << 10)
    }

    func makeQueue() -> DispatchQueue {
        let queue = DispatchQueue(label: "satchel.webkit.test")
        queue.setSpecific(key: RecordingTask.queueKey, value: 1)
        return queue
    }

    @Test("without a stop: one response, the data in order, one finish; a miss outside the allow-list fails cleanly")
    func complete() async throws {
        try await withTemporaryFolder { folder async throws in
            let queue = makeQueue()
            let driver = try driver(folder, queue: queue)
            let task = RecordingTask(url: "satchel://app.example/large.bin")
            queue.async { driver.start(task) }
            for _ in 0..<500 where !task.snapshot.calls.contains("finish") { try await Task.sleep(for: .milliseconds(10)) }
            let result = task.snapshot
            #expect(result.violations.isEmpty)
            #expect(result.calls.first == "response")
            #expect(result.calls.last == "finish")
            #expect(result.bytes == 200 << 10)
            #expect(result.calls.filter { $0 == "data" }.count == 13)  // 16 KiB chunks
            let miss = RecordingTask(url: "https://elsewhere.example/x")
            queue.async { driver.start(miss) }
            for _ in 0..<500 where !miss.snapshot.calls.contains("finish") { try await Task.sleep(for: .milliseconds(10)) }
            #expect(miss.snapshot.violations.isEmpty)
            #expect(miss.snapshot.calls.first == "response")  // the 403 from the allow-list is a response
        }
    }

    @Test("10,000 races with stop arriving from another thread at random points: 0 violations")
    func races() async throws {
        try await withTemporaryFolder { folder async throws in
            let queue = makeQueue()
            let driver = try driver(folder, queue: queue)
            let urls = ["satchel://app.example/small.js", "satchel://app.example/large.bin", "satchel://app.example/index.html"]
            var tasks: [RecordingTask] = []
            let total = 10_000
            let batch = 100
            for start in stride(from: 0, to: total, by: batch) {
                await withTaskGroup(of: Void.self) { group in
                    for index in start..<min(total, start + batch) {
                        let task = RecordingTask(url: urls[index % urls.count])
                        tasks.append(task)
                        group.addTask {
                            queue.async { driver.start(task) }
                            // Stops land anywhere: at once, during the work, or (sometimes) after the end.
                            let delay = [0, 0, 50, 200, 1_000, 3_000, 20_000][index % 7]
                            if delay > 0 { try? await Task.sleep(for: .microseconds(Int.random(in: 0...delay))) }
                            await withCheckedContinuation { continuation in
                                DispatchQueue.global().async {
                                    queue.async {
                                        task.markStopped()
                                        driver.stop(task)
                                        continuation.resume()
                                    }
                                }
                            }
                        }
                    }
                }
            }
            // Let any work that was already in flight try (and fail) to reach its stopped task.
            try await Task.sleep(for: .milliseconds(500))
            await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
            var spread = ["before the response": 0, "between response and end": 0, "after the end": 0]
            var violations: [String] = []
            for task in tasks {
                let result = task.snapshot
                violations += result.violations
                if result.calls.isEmpty { spread["before the response"]! += 1 } else if result.calls.last == "finish" || result.calls.last == "fail" {
                    spread["after the end"]! += 1
                } else {
                    spread["between response and end"]! += 1
                }
            }
            print("scheme task races: \(tasks.count) stops; spread: \(spread.sorted { $0.key < $1.key })")
            #expect(tasks.count == total)
            #expect(violations.isEmpty, "\(violations.prefix(5))")
            #expect(spread.values.allSatisfy { $0 > 0 }, "stops must land in every phase: \(spread)")
        }
    }

    @Test("the state machine: one response, data only while streaming, one end, nothing after stop")
    func stateMachine() {
        var state = SchemeTaskState()
        var actions: [SchemeTaskState.Action] = []
        actions.append(state.chunkReady())
        actions.append(state.responseReady())
        actions.append(state.responseReady())
        actions.append(state.chunkReady())
        actions.append(state.ended())
        actions.append(state.ended())
        actions.append(state.chunkReady())
        #expect(actions == [.drop, .send, .drop, .send, .send, .drop, .drop])
        let cancelAfterEnd = state.stopRequested()
        #expect(!cancelAfterEnd)
        var stopped = SchemeTaskState()
        let cancel = stopped.stopRequested()
        let afterStop = [stopped.responseReady(), stopped.chunkReady(), stopped.ended()]
        #expect(cancel)
        #expect(afterStop == [.drop, .drop, .drop])
    }
}
