import NIOCore
import NIOHTTP1
import NIOPosix
import SatchelCore

/// `CONNECT host:port` in forward-proxy mode: tunnelled as raw bytes to allow-listed hosts on allowed ports only
/// (443 unless configured otherwise; an upstream override redirects the tunnel to a local origin for tests),
/// refused with 403 otherwise, so the server is never an open proxy. Bytes the client sends right behind its
/// CONNECT head (a TLS ClientHello, often in the same packet) reach the upstream first.
struct ConnectTunnel: Sendable {
    let allowed: [HostPattern]
    let overrides: [String: String]
    let ports: Set<Int>
    /// Names under which the channel pipeline's HTTP handlers were added; the tunnel replaces them.
    static let observerName = "satchel.http.bytes"
    static let decoderName = "satchel.http.decoder"
    static let handlerName = "satchel.http.handler"

    func open(head: HTTPRequestHead, handler: HTTPConnectionHandler, context: ChannelHandlerContext) {
        guard let (host, port) = try? RequestTarget.authority(head.uri), let port else {
            return handler.tunnelRefused(status: 400, message: "CONNECT needs host:port, not \(head.uri.debugDescription)", context: context)
        }
        guard allowed.contains(where: { $0.matches(host) }) else {
            return handler.tunnelRefused(status: 403, message: "CONNECT to \(head.uri) is not allowed (not on the upstream allow-list)", context: context)
        }
        guard ports.contains(port) else {
            let list = ports.sorted().map(String.init).joined(separator: ", ")
            return handler.tunnelRefused(status: 403, message: "CONNECT to port \(port) is not allowed (allowed: \(list))", context: context)
        }
        let overrideURL = overrides[host].flatMap(RequestURL.init)
        let targetHost = overrideURL?.host ?? host
        let targetPort = overrideURL.map { $0.port ?? ($0.scheme == "https" ? 443 : 80) } ?? port
        let inbound = context.channel
        let loopBound = NIOLoopBound((handler, context), eventLoop: context.eventLoop)
        ClientBootstrap(group: context.eventLoop)
            .connectTimeout(.seconds(10))
            .connect(host: targetHost, port: targetPort)
            .whenComplete { result in
                let (handler, context) = loopBound.value
                switch result {
                case .failure(let error):
                    handler.tunnelRefused(status: 502, message: "CONNECT to \(targetHost):\(targetPort) failed: \(error)", context: context)
                case .success(let outbound):
                    guard inbound.isActive else { return outbound.close(promise: nil) }
                    var established = context.channel.allocator.buffer(capacity: 64)
                    established.writeString("HTTP/\(head.version.major).\(head.version.minor) 200 Connection Established\r\n\r\n")
                    context.writeAndFlush(NIOAny(established), promise: nil)
                    do {
                        try Self.join(inbound, outbound)
                    } catch {
                        inbound.close(promise: nil)
                        outbound.close(promise: nil)
                    }
                }
            }
    }

    /// Replaces the HTTP handlers with a glue pair. The client's glue goes in right behind the decoder first, so
    /// that when the decoder leaves, the bytes it still holds (sent right behind the CONNECT head) flow into the
    /// tunnel instead of being dropped.
    private static func join(_ inbound: any Channel, _ outbound: any Channel) throws {
        let (local, remote) = GlueHandler.matchedPair()
        try outbound.pipeline.syncOperations.addHandler(remote)
        let pipeline = inbound.pipeline.syncOperations
        let decoder = try pipeline.context(name: decoderName).handler
        try pipeline.addHandler(local, position: .after(decoder))
        pipeline.removeHandler(context: try pipeline.context(name: handlerName), promise: nil)
        pipeline.removeHandler(context: try pipeline.context(name: observerName), promise: nil)
        // The decoder hands over what it holds as it leaves (a read without a read-complete, so nothing flushes
        // it): flush once it is gone, then let the client's bytes flow.
        let decoderGone = inbound.eventLoop.makePromise(of: Void.self)
        pipeline.removeHandler(context: try pipeline.context(name: decoderName), promise: decoderGone)
        decoderGone.futureResult.whenComplete { _ in
            outbound.flush()
            inbound.read()
        }
    }
}

/// Joins two channels: what one reads, the other writes, with backpressure through writability (the
/// pattern from SwiftNIO's connect-proxy example).
final class GlueHandler: ChannelDuplexHandler, @unchecked Sendable {
    typealias InboundIn = NIOAny
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    private var partner: GlueHandler?
    private var context: ChannelHandlerContext?
    private var pendingRead = false

    static func matchedPair() -> (GlueHandler, GlueHandler) {
        let first = GlueHandler()
        let second = GlueHandler()
        first.partner = second
        second.partner = first
        return (first, second)
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    private func partnerWrite(_ data: NIOAny) { context?.write(data, promise: nil) }
    private func partnerFlush() { context?.flush() }
    private func partnerWriteEOF() { context?.close(mode: .output, promise: nil) }
    private func partnerCloseFull() { context?.close(promise: nil) }
    private var partnerWritable: Bool { context?.channel.isWritable ?? false }

    private func partnerBecameWritable() {
        if pendingRead {
            pendingRead = false
            context?.read()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) { partner?.partnerWrite(data) }
    func channelReadComplete(context: ChannelHandlerContext) { partner?.partnerFlush() }
    func channelInactive(context: ChannelHandlerContext) { partner?.partnerCloseFull() }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, case .inputClosed = event { partner?.partnerWriteEOF() }
        // A tunnel has no response boundary to wait for: on shutdown it simply closes.
        if event is ServerShutdownEvent { context.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { partner?.partnerCloseFull() }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { partner?.partnerBecameWritable() }
    }

    func read(context: ChannelHandlerContext) {
        if let partner, partner.partnerWritable { context.read() } else { pendingRead = true }
    }
}
