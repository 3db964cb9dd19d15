import CSatchelGLib
import CWebKitGTK
import Foundation
import Testing
@testable import SatchelWebKitGTK

/// Runs `body` with a fresh GLib main context as this thread's default (what GTask callbacks are dispatched to), and a
/// way to run everything that context has ready.
private func withThreadContext(_ body: (_ iterate: () -> Void) throws -> Void) rethrows {
    let context = g_main_context_new()
    g_main_context_push_thread_default(context)
    defer {
        g_main_context_pop_thread_default(context)
        g_main_context_unref(context)
    }
    try body { while g_main_context_iteration(context, 0) != 0 {} }
}

private final class Counter: @unchecked Sendable {
    var value = 0
}

/// One `read_async`, as WebKit makes it.
private final class PendingRead {
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 8)
    var result: [UInt8]?
    var error: (domain: GQuark, code: Int32)?
    var done: Bool { result != nil || error != nil }

    init(_ stream: UnsafeMutablePointer<GInputStream>, count: Int = 8, cancellable: UnsafeMutablePointer<GCancellable>? = nil) {
        g_input_stream_read_async(stream, buffer, gsize(count), G_PRIORITY_DEFAULT, cancellable, { source, result, data in
            let read = Unmanaged<PendingRead>.fromOpaque(data!).takeRetainedValue()
            var error: UnsafeMutablePointer<GError>?
            let count = g_input_stream_read_finish(UnsafeMutableRawPointer(source)!.assumingMemoryBound(to: GInputStream.self), result, &error)
            if let error {
                read.error = (error.pointee.domain, error.pointee.code)
                g_error_free(error)
            } else {
                read.result = Array(UnsafeRawBufferPointer(start: read.buffer, count: Int(count)))
            }
        }, Unmanaged.passRetained(self).toOpaque())
    }

    deinit { buffer.deallocate() }
}

private var cancelled: Int32 { Int32(G_IO_ERROR_CANCELLED.rawValue) }

@Suite("The response stream WebKit reads (C GInputStream, read through GLib)")
struct ResponseStreamTests {
    @Test("a read waits for a push; ready comes when all but low-water bytes were read; the end reads 0; finalizing releases")
    func readsAndReadiness() {
        withThreadContext { iterate in
            let abandons = Counter()
            let readies = Counter()
            let body = ResponseStream(onAbandoned: { abandons.value += 1 })
            let stream = body.makeStream(lowWater: 4)
            let first = PendingRead(stream)
            iterate()
            #expect(!first.done, "a read completed with nothing pushed")
            body.push(Array(0..<10)) { readies.value += 1 }
            iterate()
            #expect(first.result == Array(0..<8))
            #expect(readies.value == 1, "2 bytes left, low water 4: the driver may send the next chunk")
            #expect(satchel_stream_buffered(stream) == 2)
            let second = PendingRead(stream)
            iterate()
            #expect(second.result == [8, 9])
            let third = PendingRead(stream)
            iterate()
            #expect(!third.done)
            body.fail("upstream broke")
            iterate()
            #expect(third.error?.code == Int32(G_IO_ERROR_FAILED.rawValue))
            #expect(abandons.value == 0, "a stream that failed was not abandoned by its reader")
            g_object_unref(UnsafeMutableRawPointer(stream))
            #expect(body.stream == nil, "finalized: the release callback ran")

            let ended = ResponseStream(onAbandoned: { abandons.value += 1 })
            let endedStream = ended.makeStream(lowWater: 4)
            ended.push([1, 2, 3]) {}
            ended.end()
            let rest = PendingRead(endedStream)
            iterate()
            #expect(rest.result == [1, 2, 3], "held bytes are read before the end")
            let last = PendingRead(endedStream)
            iterate()
            #expect(last.result == [], "then 0")
            g_object_unref(UnsafeMutableRawPointer(endedStream))
            #expect(abandons.value == 0)
        }
    }

    @Test("the reader's GCancellable fails a waiting read and abandons the stream once; dropping it unread abandons it too")
    func cancellation() {
        withThreadContext { iterate in
            let abandons = Counter()
            let body = ResponseStream(onAbandoned: { abandons.value += 1 })
            let stream = body.makeStream(lowWater: 4)
            let cancellable = g_cancellable_new()!
            let read = PendingRead(stream, cancellable: cancellable)
            iterate()
            #expect(!read.done)
            g_cancellable_cancel(cancellable)
            iterate()
            #expect(read.error?.domain == g_io_error_quark() && read.error?.code == cancelled)
            #expect(abandons.value == 1)
            let again = PendingRead(stream, cancellable: cancellable)
            iterate()
            #expect(again.error?.code == cancelled)
            #expect(abandons.value == 1, "abandoned once")
            let readies = Counter()
            body.push([1, 2]) { readies.value += 1 }
            #expect(readies.value == 1, "a push after the reader left is taken at once, so the driver is never stuck")
            g_object_unref(UnsafeMutableRawPointer(stream))
            g_object_unref(UnsafeMutableRawPointer(cancellable))

            let dropped = ResponseStream(onAbandoned: { abandons.value += 1 })
            let droppedStream = dropped.makeStream(lowWater: 4)
            dropped.push([1]) {}
            g_object_unref(UnsafeMutableRawPointer(droppedStream))  // WebKit let go before the end
            #expect(abandons.value == 2)
        }
    }

    @Test("pacing: reads stop at `window` unacknowledged bytes, a ping goes out every `interval`, an acknowledgement lets reads go on")
    func pacing() {
        final class Pings: @unchecked Sendable {
            var marks: [guint64] = []
            var acknowledgeAtOnce = false
        }
        let ping: SatchelStreamPing = { stream, mark, data in
            let pings = Unmanaged<Pings>.fromOpaque(data!).takeUnretainedValue()
            pings.marks.append(mark)
            if pings.acknowledgeAtOnce { satchel_stream_acknowledge(stream, mark) }
        }
        withThreadContext { iterate in
            let pings = Pings()
            let body = ResponseStream(onAbandoned: {})
            let stream = body.makeStream(lowWater: 64)
            satchel_stream_set_pacing(stream, 16, 8, ping, Unmanaged.passRetained(pings).toOpaque(), { Unmanaged<Pings>.fromOpaque($0!).release() })
            body.push(Array(0..<40)) {}
            let reads = (0..<2).map { _ -> PendingRead in
                let read = PendingRead(stream)
                iterate()
                return read
            }
            #expect(reads.map(\.result) == [Array(0..<8), Array(8..<16)])
            #expect(pings.marks == [8], "one ping in flight at a time")
            let third = PendingRead(stream)
            iterate()
            #expect(!third.done, "16 bytes unacknowledged: the window is full")
            satchel_stream_acknowledge(stream, 8)
            iterate()
            #expect(third.result == Array(16..<24))
            #expect(pings.marks == [8, 16])
            #expect(satchel_stream_handed(stream) == 24 && satchel_stream_acknowledged(stream) == 8)
            let fourth = PendingRead(stream)
            iterate()
            #expect(!fourth.done)
            satchel_stream_acknowledge(stream, 16)
            iterate()
            #expect(fourth.result == Array(24..<32))
            g_object_unref(UnsafeMutableRawPointer(stream))

            // A receiver that acknowledges at once never holds the stream back (and is not re-entered).
            let quick = Pings()
            quick.acknowledgeAtOnce = true
            let other = ResponseStream(onAbandoned: {})
            let otherStream = other.makeStream(lowWater: 64)
            satchel_stream_set_pacing(otherStream, 16, 8, ping, Unmanaged.passRetained(quick).toOpaque(), { Unmanaged<Pings>.fromOpaque($0!).release() })
            other.push(Array(0..<40)) {}
            var all: [UInt8] = []
            for _ in 0..<5 {
                let read = PendingRead(otherStream)
                iterate()
                all += read.result ?? []
            }
            #expect(all == Array(0..<40))
            #expect(quick.marks == [8, 16, 24, 32, 40])
            g_object_unref(UnsafeMutableRawPointer(otherStream))
        }
    }
}
