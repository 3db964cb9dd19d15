import Foundation
import SatchelBundle
import SatchelCore
import SatchelEngine
@testable import SatchelServer
import SatchelStore
import SatchelTestSupport
import Testing

/// A store with one package (shop, m.shop.example) and a running server on a free port.
final class ServerFixture: @unchecked Sendable {
    let folder: String
    let server: LocalServer
    let port: Int
    let store: PackageStore

    init(configuration: ServerConfiguration = ServerConfiguration(port: 0, accessLog: false), files: [String: String]? = nil, bigFile: Int = 0) async throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("satchel-server-\(UUID().uuidString)").path
        try makeTree(folder + "/src", files ?? ["index.html": "<!doctype html><html><head><title>t</title></head><body>home</body></html>", "app.js": "console.log(1)", "offline.html": "<h1>offline</h1>"])
        if bigFile > 0 {
            let bytes = (0..<bigFile).map { UInt8(truncatingIfNeeded: $0 &* 13) }
            try Data(bytes).write(to: URL(fileURLWithPath: folder + "/src/big.mp4"))
        }
        let options = PackOptions(
            id: try PackageID("shop"), version: try SemanticVersion("1.0.0"), scope: try Scope(hosts: [HostPattern("m.shop.example")]),
            offlinePage: try SafePath(validating: "offline.html"))
        let bundle = try Packer.pack(source: folder + "/src", options: options, outputFolder: folder + "/out").bundle
        store = try PackageStore(root: folder + "/store")
        _ = try store.install(bundle: bundle)
        let engine = try ResourceEngine(source: store, configuration: EngineConfiguration(activation: .immediate))
        let pipeline = RequestPipeline(engine: engine, policy: NetworkPolicy(allowedHosts: configuration.allowedUpstreams, upstreamOverrides: configuration.upstreamOverrides))
        server = LocalServer(responder: ServerResponder(store: store, pipeline: pipeline, configuration: configuration))
        port = try await server.start()
    }

    func stop() async {
        try? await server.shutdown()
        try? FileManager.default.removeItem(atPath: folder)
    }
}

@Suite("satchel serve over real sockets", .serialized)
struct ServerTests {
    @Test("origin mode with Host, keep-alive for several requests, and pipelining in order")
    func keepAliveAndPipelining() async throws {
        let fixture = try await ServerFixture()
        let client = try RawClient(port: fixture.port)
        client.send("GET / HTTP/1.1\r\nHost: m.shop.example\r\n\r\n")
        let first = client.responses(1)
        try #require(first.count == 1)
        #expect(first[0].status == 200)
        #expect(String(decoding: first[0].body, as: UTF8.self).contains("home"))
        client.send("GET /app.js HTTP/1.1\r\nHost: m.shop.example\r\n\r\nGET /missing.png HTTP/1.1\r\nHost: m.shop.example\r\n\r\nHEAD /app.js HTTP/1.1\r\nHost: m.shop.example\r\n\r\n")
        let pipelined = client.responses(3, heads: [2])
        try #require(pipelined.count == 3)
        // The miss goes to the network, where no host is allowed: 403, never an open proxy.
        #expect(pipelined.map(\.status) == [200, 403, 200])
        #expect(String(decoding: pipelined[0].body, as: UTF8.self) == "console.log(1)")
        #expect(pipelined[2].body.isEmpty)
        await fixture.stop()
    }
}
