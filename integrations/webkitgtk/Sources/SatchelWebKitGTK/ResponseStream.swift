import CSatchelGLib
import CWebKitGTK

/// A response body as WebKit reads it: a `GInputStream` (`CSatchelGLib`'s stream) that a scheme task feeds one chunk
/// at a time. The driver's `ready` for a chunk is called when the reader has taken all but `lowWater` bytes of it, so
/// at most one chunk is held; the reader giving up (its `GCancellable`, or the stream closed or dropped before its end)
/// calls `onAbandoned` once, which a task turns into the driver's stop. Main context's thread only.
final class ResponseStream {
    /// The stream, until it is finalized; the reference returned by ``makeStream()`` is the caller's.
    private(set) var stream: UnsafeMutablePointer<GInputStream>?
    private var ready: (@Sendable () -> Void)?
    private var ended = false
    private var onAbandoned: (() -> Void)?

    init(onAbandoned: @escaping () -> Void) {
        self.onAbandoned = onAbandoned
    }

    /// Creates the stream (once); the caller owns the returned reference and hands it to its reader.
    func makeStream(lowWater: Int) -> UnsafeMutablePointer<GInputStream> {
        precondition(stream == nil, "one stream per response")
        let callbacks = SatchelStreamCallbacks(
            context: Unmanaged.passRetained(self).toOpaque(),  // released when the stream is finalized
            drained: { Unmanaged<ResponseStream>.fromOpaque($0!).takeUnretainedValue().drained() },
            abandoned: { Unmanaged<ResponseStream>.fromOpaque($0!).takeUnretainedValue().abandoned() },
            release: { Unmanaged<ResponseStream>.fromOpaque($0!).takeRetainedValue().released() })
        let stream = satchel_stream_new(callbacks, gsize(lowWater))!
        self.stream = stream
        return stream
    }

    /// Hands over a chunk; `ready` follows once the reader has (nearly) taken it, or at once when there is no reader.
    func push(_ data: [UInt8], ready: @escaping @Sendable () -> Void) {
        guard let stream else { return ready() }
        self.ready = ready
        data.withUnsafeBufferPointer { satchel_stream_push(stream, $0.baseAddress, gsize($0.count)) }
    }

    func end() {
        ended = true
        if let stream { satchel_stream_end(stream) }
    }

    func fail(_ message: String) {
        ended = true
        if let stream { satchel_stream_fail(stream, message) }
    }

    private func drained() {
        let pending = ready
        ready = nil
        pending?()
    }

    private func abandoned() {
        ready = nil
        let notify = onAbandoned
        onAbandoned = nil
        if !ended { notify?() }
    }

    private func released() {
        stream = nil
        ready = nil
        onAbandoned = nil
    }
}
