import NIOCore
import SatchelHTTP

/// A body a consumer on an event loop can forward in the producer's own buffers, with no copy and no thread hop: the
/// fast path of `satchel serve`, which claims it from a ``BodyStream`` by this protocol (``BodyStream/claimSource(as:)``)
/// and pulls part by part while its client's socket is writable. ``UpstreamExchange`` (a ``NIOFetcher`` response) is
/// one; any other body is read through the stream.
public protocol EventLoopPartSource: BodySource {
    /// The loop the parts complete on; a consumer on the same loop may take ready parts without a future.
    var eventLoop: any EventLoop { get }
    /// The next part if it is already here. Call on ``eventLoop``.
    func takeReadyPart() -> ReadyBodyPart
    /// The next part, nil at the end; one at a time. Safe from any thread; completes on ``eventLoop``.
    func nextPart() -> EventLoopFuture<ByteBuffer?>
}

/// What ``EventLoopPartSource/takeReadyPart()`` found.
public enum ReadyBodyPart {
    case part(ByteBuffer)
    case end
    case failed(any Error)
    /// Nothing yet: ask with ``EventLoopPartSource/nextPart()``.
    case notYet
}
