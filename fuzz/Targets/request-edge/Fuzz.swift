// The server's request edge fed raw bytes: whatever a client sends, the server does not crash, every byte it
// sends back is a well-formed sequence of HTTP/1.1 responses, and the connection ends (no hang). A real server
// on loopback (the NIO decoder, RequestTarget, ConnectionStateMachine, the responder), started once; each input
// is one connection that writes the bytes and then half-closes.
import FuzzDriver
import Foundation
import SatchelBundle
import SatchelPublishing
import SatchelCore
import SatchelEngine
import SatchelHTTP
import SatchelServer
import SatchelStore

final class Fixture: Sendable {
    let port: Int
    let server: LocalServer

    init() {
        let folder = NSTemporaryDirectory() + "satchel-fuzz-edge-\(getpid())"
        try? FileManager.default.removeItem(atPath: folder)
        try! FileManager.default.createDirectory(atPath: folder + "/src/docs", withIntermediateDirectories: true)
        try! Data("<!doctype html><head><title>t</title></head>home".utf8).write(to: URL(fileURLWithPath: folder + "/src/index.html"))
        try! Data(String(repeating: "console.log(1);\n", count: 500).utf8).write(to: URL(fileURLWithPath: folder + "/src/app.js"))
        try! Data("docs".utf8).write(to: URL(fileURLWithPath: folder + "/src/docs/index.html"))
        let options = PackOptions(id: try! PackageID("shop"), version: try! SemanticVersion("1.0.0"), scope: try! Scope(hosts: [HostPattern("m.shop.example")]))
        let bundle = try! Packer.pack(source: folder + "/src", options: options, outputFolder: folder + "/out").bundle
        let store = try! PackageStore(root: folder + "/store")
        try! store.install(bundle: bundle)
        let engine = try! ResourceEngine(source: store, configuration: EngineConfiguration(activation: .immediate))
        var configuration = ServerConfiguration(port: 0, defaultHost: "m.shop.example", injectHook: true, threads: 1, accessLog: false)
        configuration.limits.readTimeout = .seconds(2)
        server = try! LocalServer(store: store, engine: engine, policy: NetworkPolicy(allowedHosts: []), configuration: configuration)
        let started = DispatchSemaphore(value: 0)
        // The semaphore orders the write before the read.
        final class Port: @unchecked Sendable { var value = 0 }
        let port = Port()
        Task { [server] in
            port.value = try! await server.start()
            started.signal()
        }
        started.wait()
        self.port = port.value
    }
}

let fixture = Fixture()

@_cdecl("request_edge_main")
public func entry(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 { FuzzDriver.run(argc, argv, fuzz) }

public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(socket) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(fixture.port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    // A connect that the watchdog's SIGALRM interrupts goes on in the background: ask again until it is done.
    while true {
        let result = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        if result == 0 || errno == EISCONN { break }
        if errno == EINTR || errno == EALREADY { usleep(100); continue }
        fatalError("cannot connect to the server under test: errno \(errno) (\(String(cString: strerror(errno))))")
    }
    var timeout = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var sent = 0
    // libFuzzer's -timeout watchdog is a SIGALRM every few seconds, and a socket call with SO_RCVTIMEO that it
    // interrupts fails with EINTR whatever SA_RESTART says (signal(7)): retried, or a busy machine fails the run.
    while sent < size {
        let count = send(socket, data + sent, size - sent, Int32(MSG_NOSIGNAL))
        if count < 0 && errno == EINTR { continue }
        if count <= 0 { break }  // the server may close early (a refusal); what it answered is still checked
        sent += count
    }
    shutdown(socket, Int32(SHUT_WR))
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress!, $0.count, 0) }
        if count == 0 || (count < 0 && errno == ECONNRESET) { break }
        if count < 0 && errno == EINTR { continue }
        if count < 0 {
            fatalError("the server neither answered nor closed within 5 s (errno \(errno), sent \(sent) of \(size) bytes); received so far: \(String(decoding: received.prefix(400), as: UTF8.self).debugDescription)")
        }
        received += buffer[..<count]
    }
    checkResponses(received)
    return 0
}

/// The bytes are zero or more complete HTTP/1.x responses (a last one may be delimited by the close).
func checkResponses(_ bytes: [UInt8]) {
    var rest = bytes[...]
    while !rest.isEmpty {
        guard let end = rest.firstRange(of: Array("\r\n\r\n".utf8)) else { fatalError("a response head without its end: \(String(decoding: rest.prefix(200), as: UTF8.self))") }
        let head = String(decoding: rest[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        let statusLine = head[0].split(separator: " ", maxSplits: 2)
        require(statusLine.count >= 2 && (statusLine[0] == "HTTP/1.1" || statusLine[0] == "HTTP/1.0"), "not a status line: \(head[0])")
        let status = Int(statusLine[1]) ?? 0
        require((100...599).contains(status), "bad status \(statusLine[1])")
        var fields: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { fatalError("a header line without a colon: \(line)") }
            require(!line.contains("\r") && !line.contains("\n"), "a header line with a line break")
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        rest = rest[end.upperBound...]
        if status == 304 || status == 204 { continue }
        if let length = fields["content-length"].flatMap(Int.init) {
            let afterBody = rest.dropFirst(length)
            if rest.count >= length, afterBody.isEmpty || afterBody.starts(with: Array("HTTP/1.".utf8)) {
                rest = afterBody
            } else if rest.isEmpty || rest.starts(with: Array("HTTP/1.".utf8)) {
                continue  // an answer to HEAD: the length of a body it does not send
            } else {
                fatalError("a body that does not match its Content-Length \(length): \(rest.count) bytes follow")
            }
        } else if fields["transfer-encoding"] == "chunked" {
            while true {
                guard let lineEnd = rest.firstRange(of: Array("\r\n".utf8)), let chunk = Int(String(decoding: rest[..<lineEnd.lowerBound], as: UTF8.self), radix: 16) else { return }
                rest = rest[lineEnd.upperBound...].dropFirst(chunk + 2)
                if chunk == 0 { break }
            }
        } else {
            return  // delimited by the close
        }
    }
}
