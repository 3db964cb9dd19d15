import NIOCore
import NIOHTTP1
import NIOPosix
import SatchelCore

/// `CONNECT host:port` in forward-proxy mode: tunnelled as raw bytes to allow-listed hosts only (an upstream
/// override redirects the tunnel to a local origin for tests), refused with 403 otherwise, so the server is
/// never an open proxy.
struct ConnectTunnel: Sendable {
    let allowed: [HostPattern]
    let overrides: [String: String]
    /// Names under which the server pipeline's HTTP handlers were added, removed when the tunnel opens.
    static let httpHandlerNames = ["satchel.http.deadlines", "satchel.http.decoder", "satchel.http.handler"]

    func handle(context: ChannelHandlerContext, head: HTTPRequestHead, handler: HTTPConnectionHandler) {
        let parts = head.uri.split(separator: ":")
        let host = String(parts.first ?? "").lowercased()
        let port = parts.count > 1 ? Int(parts[1]) ?? 443 : 443
        guard !host.isEmpty, allowed.contains(where: { $0.matches(host) }) else {
            handler.refuse(context, status: .forbidden, message: "CONNECT to \(head.uri) is not allowed (not on the upstream allow-list)")
            return
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
                    handler.refuse(context, status: .badGateway, message: "CONNECT to \(targetHost):\(targetPort) failed: \(error)")
                case .success(let outbound):
                    handler.writeTunnelEstablished(context, version: head.version).flatMap {
                        let removals = Self.httpHandlerNames.map { inbound.pipeline.removeHandler(name: $0) }
                        return EventLoopFuture.andAllComplete(removals, on: inbound.eventLoop)
                    }.flatMap {
                        let (local, remote) = GlueHandler.matchedPair()
                        return inbound.pipeline.addHandler(local).and(outbound.pipeline.addHandler(remote)).map { _ in () }
                    }.whenFailure { _ in
                        inbound.close(promise: nil)
                        outbound.close(promise: nil)
                    }
                }
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
