import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A plain TCP client for server tests: writes exact bytes, reads what comes back, sees closes.
final class RawClient {
    let descriptor: Int32

    private var open = true

    /// - Parameter receiveBuffer: a small kernel receive buffer makes a client that stops reading hold the
    ///   server back sooner (loopback buffers otherwise grow to megabytes).
    /// - Parameter timeout: how long a read may wait for the next bytes.
    init(port: Int, receiveBuffer: Int? = nil, timeout: Int = 10) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer.map(Int32.init) {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var limit = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close() }

    /// Closes the connection (the server sees the client go away).
    func close() {
        guard open else { return }
        open = false
        Glibc.close(descriptor)
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + offset, bytes.count - offset) }
            if written <= 0 { return }
            offset += written
        }
    }

    /// Reads until `done` says the bytes so far are enough, the peer closes, or the timeout passes. Runs on a
    /// thread of its own: a blocking recv on the cooperative pool would starve the server under test.
    func read(until done: @escaping @Sendable ([UInt8]) -> Bool = { _ in false }) async -> (bytes: [UInt8], closed: Bool) {
        await withCheckedContinuation { continuation in
            let client = UncheckedBox(self)
            Thread.detachNewThread { continuation.resume(returning: client.value.readBlocking(until: done)) }
        }
    }

    func readBlocking(until done: ([UInt8]) -> Bool) -> (bytes: [UInt8], closed: Bool) {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        repeat {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress!, $0.count, 0) }
            if count == 0 { return (data, true) }
            if count < 0 { return (data, errno == ECONNRESET) }
            data += buffer[..<count]
        } while !done(data)
        return (data, false)
    }

    /// Reads `count` complete responses (heads plus Content-Length bodies).
    /// - Parameter heads: indexes of responses to HEAD requests, which have no body whatever their length says.
    func responses(_ count: Int, heads: Set<Int> = []) async -> [RawResponse] {
        var parsed: [RawResponse] = []
        var pending: [UInt8] = []
        while parsed.count < count {
            if let (response, rest) = Self.parse(pending, head: heads.contains(parsed.count)) {
                parsed.append(response)
                pending = rest
                continue
            }
            let (more, closed) = await read { _ in true }
            if more.isEmpty { break }  // closed, reset or timed out
            _ = closed
            pending += more
        }
        return parsed
    }

    static func parse(_ bytes: [UInt8], head isHead: Bool = false) -> (RawResponse, [UInt8])? {
        guard let end = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else { return nil }
        let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        let status = Int(head[0].split(separator: " ")[1]) ?? 0
        var headers: [String: String] = [:]
        var fields: [(name: String, value: String)] = []
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[line[..<colon].lowercased()] = value
            fields.append((String(line[..<colon]), value))
        }
        if !isHead, headers["transfer-encoding"]?.lowercased() == "chunked" {
            // size CRLF data CRLF ... 0 CRLF CRLF
            var cursor = end.upperBound
            var body: [UInt8] = []
            while true {
                guard let lineEnd = bytes[cursor...].firstRange(of: Array("\r\n".utf8)) else { return nil }
                let size = Int(String(decoding: bytes[cursor..<lineEnd.lowerBound], as: UTF8.self), radix: 16) ?? 0
                let dataStart = lineEnd.upperBound
                guard bytes.count >= dataStart + size + 2 else { return nil }
                if size == 0 { return (RawResponse(status: status, headers: headers, fields: fields, body: body), Array(bytes[(dataStart + 2)...])) }
                body += bytes[dataStart..<dataStart + size]
                cursor = dataStart + size + 2
            }
        }
        let length = isHead ? 0 : Int(headers["content-length"] ?? "0") ?? 0
        let bodyStart = end.upperBound
        guard bytes.count - bodyStart >= length else { return nil }
        return (RawResponse(status: status, headers: headers, fields: fields, body: Array(bytes[bodyStart..<bodyStart + length])), Array(bytes[(bodyStart + length)...]))
    }
}

/// One parsed response: `headers` by lower-case name (the last of repeated fields), `fields` every line as sent.
struct RawResponse {
    let status: Int
    let headers: [String: String]
    let fields: [(name: String, value: String)]
    let body: [UInt8]

    /// Every value of a field, in order, compared case-insensitively.
    func values(_ name: String) -> [String] { fields.filter { $0.name.lowercased() == name.lowercased() }.map(\.value) }
}

/// A response's body as text ("" when there is no response).
func bodyText(_ response: RawResponse?) -> String {
    String(decoding: response?.body ?? [], as: UTF8.self)
}

/// Carries a non-Sendable value to another thread that is its only user for the moment.
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
