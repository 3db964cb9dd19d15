// The floor for tools/bench-proxy: the least an HTTP/1.1 reverse proxy on SwiftNIO can do per request, so a
// ratio against nginx can be split into what NIO itself costs and what Satchel adds on top.
//
//   nio-floor-proxy --port P --upstream HOST:PORT [--threads N]
//
// Per request: NIO's server codec decodes the head, a keep-alive upstream connection on the same event loop
// (kept per loop, made on demand) gets the head with `Host` set, and the response parts are written back as
// they come. No routing, engine, policy, log, timeouts, backpressure or hop-by-hop rules: this is not a proxy
// to use, only the measure of the runtime under one. GET and HEAD without bodies only.
import NIOCore
import NIOHTTP1
import NIOPosix

var arguments = Array(CommandLine.arguments.dropFirst())
var port = 0
var upstream = ""
var threads = System.coreCount
var raw = false
while !arguments.isEmpty {
    let flag = arguments.removeFirst()
    if flag == "--raw" { raw = true; continue }
    guard let value = arguments.first else { break }
    arguments.removeFirst()
    switch flag {
    case "--port": port = Int(value) ?? 0
    case "--upstream": upstream = value
    case "--threads": threads = Int(value) ?? threads
    default: fatalError("nio-floor-proxy: unknown flag \(flag)")
    }
}
guard let colon = upstream.lastIndex(of: ":"), let upstreamPort = Int(upstream[upstream.index(after: colon)...]) else {
    fatalError("usage: nio-floor-proxy --port P --upstream HOST:PORT [--threads N]")
}

/// Where requests go, and the idle upstream connections of one event loop (only touched on that loop).
final class LoopConnections: @unchecked Sendable {
    let authority: String
    let address: SocketAddress
    var idle: [Channel] = []
    init(authority: String, address: SocketAddress) {
        self.authority = authority
        self.address = address
    }
}

/// Upstream side: relays each response part to the client connection that asked.
final class UpstreamRelay: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart
    var client: ChannelHandlerContext?
    let connections: LoopConnections
    init(connections: LoopConnections) { self.connections = connections }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let client else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            client.write(NIOAny(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: head.status, headers: head.headers))), promise: nil)
        case .body(let buffer):
            client.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(buffer))), promise: nil)
        case .end:
            self.client = nil
            connections.idle.append(context.channel)
            client.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)), promise: nil)
        }
    }

    /// A large body goes out as it arrives (one flush per socket read), not all at the end.
    func channelReadComplete(context: ChannelHandlerContext) { client?.flush() }

    func channelInactive(context: ChannelHandlerContext) {
        connections.idle.removeAll { $0 === context.channel }
        client?.close(promise: nil)
    }
}

/// Client side: sends each request head upstream on an idle connection of this loop, or a new one.
final class ClientRelay: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    let connections: LoopConnections
    init(connections: LoopConnections) { self.connections = connections }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(var request) = unwrapInboundIn(data) else { return }
        request.headers.replaceOrAdd(name: "Host", value: connections.authority)
        request.headers.remove(name: "Connection")
        let head = request
        if let channel = connections.idle.popLast() {
            send(head, on: channel, for: context)
            return
        }
        let connections = connections
        let context = NIOLoopBound(context, eventLoop: context.eventLoop)
        ClientBootstrap(group: context.eventLoop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(UpstreamRelay(connections: connections))
                }
            }
            .connect(to: connections.address)
            .whenComplete { result in
                switch result {
                case .success(let channel): self.send(head, on: channel, for: context.value)
                case .failure: context.value.close(promise: nil)
                }
            }
    }

    private func send(_ head: HTTPRequestHead, on channel: Channel, for context: ChannelHandlerContext) {
        let relay = try! channel.pipeline.syncOperations.handler(type: UpstreamRelay.self)
        relay.client = context
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
    }
}

/// `--raw`: no HTTP at all. Each client connection gets its own upstream connection and bytes are copied both
/// ways as they come: the cost of NIO's channels and the sockets alone.
final class ByteRelay: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    var peer: Channel?
    var pending: [ByteBuffer] = []
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        if let peer { peer.write(buffer, promise: nil) } else { pending.append(buffer) }
    }
    func channelReadComplete(context: ChannelHandlerContext) { peer?.flush() }
    func channelInactive(context: ChannelHandlerContext) { peer?.close(promise: nil) }
    func connected(to peer: Channel) {
        self.peer = peer
        for buffer in pending { peer.write(buffer, promise: nil) }
        pending = []
        peer.flush()
    }
}

let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
var loopConnections: [ObjectIdentifier: LoopConnections] = [:]
let address = try SocketAddress(ipAddress: String(upstream[..<colon]), port: upstreamPort)
for loop in group.makeIterator() { loopConnections[ObjectIdentifier(loop)] = LoopConnections(authority: upstream, address: address) }
let perLoop = loopConnections
let server = try await ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 1024)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            if raw {
                let relay = ByteRelay()
                try channel.pipeline.syncOperations.addHandler(relay)
                let connections = perLoop[ObjectIdentifier(channel.eventLoop)]!
                let client = NIOLoopBound(channel, eventLoop: channel.eventLoop)
                ClientBootstrap(group: channel.eventLoop).channelOption(.socketOption(.tcp_nodelay), value: 1)
                    .channelInitializer { upstream in
                        upstream.eventLoop.makeCompletedFuture {
                            let back = ByteRelay()
                            back.peer = client.value
                            try upstream.pipeline.syncOperations.addHandler(back)
                        }
                    }
                    .connect(to: connections.address)
                    .whenComplete { result in
                        switch result {
                        case .success(let upstream): relay.connected(to: upstream)
                        case .failure: client.value.close(promise: nil)
                        }
                    }
                return
            }
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(withPipeliningAssistance: false, withErrorHandling: false)
            try channel.pipeline.syncOperations.addHandler(ClientRelay(connections: perLoop[ObjectIdentifier(channel.eventLoop)]!))
        }
    }
    .bind(host: "127.0.0.1", port: port).get()
print("listening on http://127.0.0.1:\(server.localAddress!.port!)")
try await server.closeFuture.get()
