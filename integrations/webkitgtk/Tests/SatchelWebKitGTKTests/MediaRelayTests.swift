import CWebKitGTK
import Foundation
import Glibc
import SatchelCore
import SatchelEngine
import SatchelHTTP
import SatchelHost
import SatchelWebKit
import Testing
@testable import SatchelWebKitGTK

/// An HTTP/1.1 exchange over a raw socket, on a thread of its own: sends `request`, reads until the server closes (or,
/// with `closeAfter`, closes itself once that many bytes arrived).
func rawExchange(port: Int, _ request: String, closeAfter: Int? = nil) async throws -> [UInt8] {
    struct Failed: Error { let what: String }
    return try await withCheckedThrowingContinuation { continuation in
        Thread {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else { return continuation.resume(throwing: Failed(what: "connect: errno \(errno)")) }
            let bytes = Array(request.utf8)
            guard send(fd, bytes, bytes.count, 0) == bytes.count else { return continuation.resume(throwing: Failed(what: "send")) }
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            while true {
                let count = recv(fd, &buffer, buffer.count, 0)
                if count <= 0 { break }
                received += buffer[0..<count]
                if let closeAfter, received.count >= closeAfter { break }
            }
            continuation.resume(returning: received)
        }.start()
    }
}

/// Status, lower-cased header fields and body of a raw response.
func parseResponse(_ bytes: [UInt8]) -> (status: Int, headers: [String: String], body: [UInt8]) {
    guard let end = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else { return (0, [:], []) }
    let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
    let status = Int(head.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
    var headers: [String: String] = [:]
    for line in head.dropFirst() {
        let parts = line.split(separator: ":", maxSplits: 1)
        if parts.count == 2 { headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces) }
    }
    return (status, headers, Array(bytes[end.upperBound...]))
}

@Suite("The media relay: the engine over loopback HTTP for WebKitGTK's media player")
struct MediaRelayTests {
    /// A relay on its own main context, its port, and the path prefix that holds its token.
    /// `/live/` goes to `upstream` (a network-only route).
    func withRelay(upstream: any NetworkFetcher = EndlessUpstream(), _ body: (MediaRelay, _ port: Int, _ prefix: String) async throws -> Void) async throws {
        let package = try TestPackage(routes: ["/live/=network-only"])
        defer { package.remove() }
        let loop = MainContextThread()
        defer { loop.stop() }
        let policy = NetworkPolicy(allowedHosts: [try HostPattern("app.example")])
        let driver = SchemeTaskDriver(layer: RequestLayer(loader: ResourceLoader(engine: package.engine, fetcher: upstream, policy: policy), configuration: .webKit(hook: nil, cookies: nil)), executor: loop.executor, chunkSize: 64 << 10)
        let relay = try await loop.run { Result { try MediaRelay(driver: driver) } }.get()
        let base = try #require(URLComponents(string: relay.baseURL))
        #expect(base.host == "127.0.0.1")
        try await body(relay, try #require(base.port), base.path)
        await loop.run { relay.close() }
    }

    @Test("a custom-scheme URL maps to the relay and back; anything else does not")
    func mapping() async throws {
        try await withRelay { relay, _, prefix in
            let url = try #require(relay.relayURL(for: "satchel://app.example/media/a%20b.webm?v=2"))
            #expect(url == relay.baseURL + "satchel/app.example/media/a%20b.webm?v=2")
            #expect(relay.engineURL(path: prefix + "satchel/app.example/media/a%20b.webm", query: "v=2") == "satchel://app.example/media/a%20b.webm?v=2")
            #expect(relay.engineURL(path: prefix + "satchel/app.example", query: nil) == "satchel://app.example/")
            #expect(prefix.count == 34, "/ + 32 hex digits + /")
            #expect(relay.relayURL(for: "https://app.example/x") == nil)
            #expect(relay.engineURL(path: "/" + String(repeating: "0", count: 32) + "/satchel/app.example/index.html", query: nil) == nil, "another token")
            #expect(relay.engineURL(path: prefix + "https/app.example/index.html", query: nil) == nil, "not a custom scheme")
            #expect(relay.engineURL(path: prefix + "satchel//index.html", query: nil) == nil, "no host")
        }
    }

    @Test("GET, a Range and HEAD are answered by the engine, byte-exact; another token is 404 and POST is 405")
    func answers() async throws {
        try await withRelay { _, port, prefix in
            let file = TestPackage.files["large.bin"]!
            let full = parseResponse(try await rawExchange(port: port, "GET \(prefix)satchel/app.example/large.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"))
            #expect(full.status == 200)
            #expect(full.headers["content-length"] == String(file.count))
            #expect(full.headers["accept-ranges"] == "bytes")
            #expect(full.body == file, "\(full.body.count) bytes")
            let range = parseResponse(try await rawExchange(port: port, "GET \(prefix)satchel/app.example/large.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: bytes=1000000-1000099\r\nConnection: close\r\n\r\n"))
            #expect(range.status == 206)
            #expect(range.headers["content-range"] == "bytes 1000000-1000099/\(file.count)")
            #expect(range.body == Array(file[1_000_000..<1_000_100]))
            let head = parseResponse(try await rawExchange(port: port, "HEAD \(prefix)satchel/app.example/large.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"))
            #expect(head.status == 200 && head.headers["content-length"] == String(file.count) && head.body.isEmpty)
            let otherToken = parseResponse(try await rawExchange(port: port, "GET /\(String(repeating: "0", count: 32))/satchel/app.example/large.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"))
            #expect(otherToken.status == 404 && otherToken.body == Array("not found\n".utf8))
            let post = parseResponse(try await rawExchange(port: port, "POST \(prefix)satchel/app.example/large.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
            #expect(post.status == 405 && post.headers["allow"] == "GET, HEAD")
        }
    }

    @Test("a player that closes the connection mid-body (as on a seek) stops the driver's task and cancels the upstream body")
    func disconnect() async throws {
        let upstream = EndlessUpstream()
        try await withRelay(upstream: upstream) { relay, port, prefix in
            // The upstream body never ends: only the stop can end this task.
            let partial = try await rawExchange(port: port, "GET \(prefix)satchel/app.example/live/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", closeAfter: 1 << 20)
            let response = parseResponse(partial)
            #expect(response.status == 200 && response.headers["transfer-encoding"] == "chunked")
            try await waitUntil { relay.driver.activeTaskCount == 0 && upstream.cancelled }
            #expect(relay.driver.startedTaskCount == 1)
            #expect(relay.driver.activeTaskCount == 0, "the task outlived its connection")
            #expect(upstream.cancelled, "the upstream body was not cancelled")
        }
    }
}
