import NIOCore
import NIOHTTP1
import SatchelCore
import SatchelEngine
import SatchelHTTP
@testable import SatchelServer
import Testing

@Suite("Response heads written by hand")
struct ResponseEncodingTests {
    func encode(_ response: ResourceResponse, isHead: Bool = false, version: HTTPVersion = .http1_1, keepAlive: Bool = true) -> (String, BodyFraming, Bool) {
        var buffer = ByteBufferAllocator().buffer(capacity: 256)
        let (framing, open) = ResponseEncoding.writeHead(response, isHead: isHead, version: version, keepAlive: keepAlive, into: &buffer)
        return (buffer.readString(length: buffer.readableBytes) ?? "", framing, open)
    }

    @Test func framingFollowsRFC9112() {
        let bytes = ResourceResponse(status: 200, headers: ["Content-Type": "text/plain", "Content-Length": "5"], body: .bytes(Array("hello".utf8)))
        #expect(encode(bytes) == ("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\n", .length(5), true))
        // HEAD keeps the entity's Content-Length but sends no body; 304 and 204 never have one.
        #expect(encode(bytes, isHead: true).1 == .none)
        #expect(encode(ResourceResponse(status: 304, headers: ["ETag": "\"a\""])).0 == "HTTP/1.1 304 Not Modified\r\nETag: \"a\"\r\n\r\n")
        // A known length without the header gets one; a stream of unknown length is chunked on 1.1 ...
        #expect(encode(ResourceResponse(status: 200, body: .bytes([1, 2, 3]))).0 == "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n")
        let stream = ResourceResponse(status: 200, headers: ["Transfer-Encoding": "gzip"], body: .stream(BodyStream(AsyncThrowingStream { $0.finish() })))
        #expect(encode(stream) == ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", .chunked, true))
        // ... and delimited by closing the connection on 1.0.
        #expect(encode(stream, version: .http1_0) == ("HTTP/1.0 200 OK\r\nConnection: close\r\n\r\n", .untilClose, false))
        // Connection is the server's to decide: a response's own header is replaced.
        let closing = ResourceResponse(status: 404, headers: ["Connection": "keep-alive", "Content-Length": "0"])
        #expect(encode(closing, keepAlive: false).0 == "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        #expect(encode(ResourceResponse(status: 200, headers: ["Content-Length": "0"]), version: .http1_0).0 == "HTTP/1.0 200 OK\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n")
        var chunk = ByteBufferAllocator().buffer(capacity: 32)
        ResponseEncoding.writeChunk(Array(repeating: 0x61, count: 26), into: &chunk)
        #expect(chunk.readString(length: chunk.readableBytes) == "1a\r\n" + String(repeating: "a", count: 26) + "\r\n")
    }

    @Test("fields go out in order, as they are (obs-text, an empty value, a long value), past a small buffer's capacity")
    func fieldsAsTheyAre() {
        let long = String(repeating: "x", count: 600)
        let response = ResourceResponse(status: 200, headers: [
            "Content-Length": "0", "X-Empty": "", "Content-Disposition": "attachment; filename=\"café.txt\"", "Transfer-Encoding": "chunked",
            "X-Long": long, "set-cookie": "a=1", "Set-Cookie": "b=2",
        ])
        var buffer = ByteBufferAllocator().buffer(capacity: 16)
        buffer.writeString("before|")
        _ = ResponseEncoding.writeHead(response, isHead: false, version: .http1_1, keepAlive: true, into: &buffer)
        #expect(buffer.readString(length: buffer.readableBytes) == "before|HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Empty: \r\n"
            + "Content-Disposition: attachment; filename=\"café.txt\"\r\nX-Long: \(long)\r\nset-cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n")
        // A head whose only fields are the connection's own.
        var bare = ByteBufferAllocator().buffer(capacity: 0)
        _ = ResponseEncoding.writeHead(ResourceResponse(status: 204, headers: ["Connection": "close"]), isHead: false, version: .http1_1, keepAlive: true, into: &bare)
        #expect(bare.readString(length: bare.readableBytes) == "HTTP/1.1 204 No Content\r\n\r\n")
    }
}
