import Foundation
import SatchelCore
import SatchelHTTP
import Testing

@testable import SatchelCache

/// The fill on its own, with bodies that end the ways real ones do, so the rule "only a whole body is stored" is tested
/// without an origin's timing.
@Suite("A cache fill stores only a whole body")
struct CacheFillTests {
    /// A fill writing into a fresh temporary file, and what its `done` was told.
    final class Harness: Sendable {
        let fill: CacheFill
        let outcome = Locked<(called: Bool, length: Int64?)>((false, nil))
        let path: String

        init(expectedLength: Int64?) {
            path = NSTemporaryDirectory() + "satchel-fill-\(UUID().uuidString)"
            let descriptor = open(path, O_CREAT | O_RDWR | O_TRUNC, 0o600)
            precondition(descriptor >= 0)
            fill = CacheFill(id: "test", key: "https://origin.example/a", descriptor: descriptor, expectedLength: expectedLength)
        }

        func start(_ body: ResponseBody) {
            fill.start(copying: body, limit: 1 << 30) { [outcome] length in outcome.withLock { $0 = (true, length) } }
        }

        func waitForDone() async throws -> Int64? {
            for _ in 0..<500 {
                let (called, length) = outcome.withLock { $0 }
                if called { return length }
                try await Task.sleep(for: .milliseconds(10))
            }
            Issue.record("the fill never ended")
            return nil
        }

        deinit { unlink(path) }
    }

    /// A body that gives `first`, then waits for more and, when its task is cancelled, ends as a finished stream does:
    /// without an error (what `AsyncThrowingStream` and many readers do).
    static func quietOnCancel(first: [UInt8]) -> ResponseBody {
        let stream = AsyncThrowingStream<[UInt8], any Error> { continuation in
            continuation.yield(first)
            // Never finished by the producer: only the consumer's cancellation ends it, as a normal end.
        }
        return .stream(BodyStream(stream))
    }

    @Test("the last reader leaving early while the origin's stream is waiting: the stream ends quietly, nothing is stored")
    func abandonedWhileWaiting() async throws {
        let harness = Harness(expectedLength: 1_000_000)
        harness.start(Self.quietOnCancel(first: Array(repeating: 7, count: 1000)))
        var reader: BodyStream.AsyncIterator? = harness.fill.reader()!.makeAsyncIterator()
        let chunk = try await reader?.next()
        #expect(chunk?.count == 1000)
        reader = nil  // the only reader leaves with 1,000 of 1,000,000 bytes written
        #expect(try await harness.waitForDone() == nil, "an abandoned fill is not committed")
    }

    @Test("an origin whose body ends short of its Content-Length without an error: nothing is stored")
    func shortBody() async throws {
        let harness = Harness(expectedLength: 5000)
        let stream = AsyncThrowingStream<[UInt8], any Error> { continuation in
            continuation.yield(Array(repeating: 1, count: 3000))
            continuation.finish()
        }
        harness.start(.stream(BodyStream(stream)))
        #expect(try await harness.waitForDone() == nil)
    }

    @Test("a whole body is stored with its length, announced or not")
    func wholeBody() async throws {
        for expected in [Int64(4000), nil] {
            let harness = Harness(expectedLength: expected)
            let stream = AsyncThrowingStream<[UInt8], any Error> { continuation in
                continuation.yield(Array(repeating: 1, count: 3000))
                continuation.yield(Array(repeating: 2, count: 1000))
                continuation.finish()
            }
            harness.start(.stream(BodyStream(stream)))
            #expect(try await harness.waitForDone() == 4000)
        }
    }
}
