import NIOCore
import NIOHTTP1
import SatchelCore
import SatchelEngine
import SatchelHTTP

/// How a response's body is framed on the wire.
enum BodyFraming: Equatable {
    /// No body bytes follow the head (HEAD, 1xx, 204, 304, or an empty body).
    case none
    /// Exactly this many bytes follow (`Content-Length`).
    case length(Int64)
    /// `Transfer-Encoding: chunked` (HTTP/1.1 streams of unknown length).
    case chunked
    /// The body ends when the connection closes (HTTP/1.0 streams of unknown length).
    case untilClose
}

/// Serialises response heads straight into a `ByteBuffer`, from Satchel's own header list. The server writes
/// the head and a small body as one buffer; NIO's `HTTPResponseEncoder` (with its `HTTPHeaders` copy and one
/// pipeline pass per part) was most of what stood between `satchel serve` and nginx for 4 KB files.
enum ResponseEncoding {
    /// Decides the framing and the connection's fate, and writes the head into `buffer`.
    /// - Returns: the framing, and whether the connection stays open afterwards.
    static func writeHead(
        _ response: ResourceResponse, isHead: Bool, version: HTTPVersion, keepAlive: Bool, into buffer: inout ByteBuffer
    ) -> (BodyFraming, keepAlive: Bool) {
        let status = response.status
        let bodiless = isHead || status < 200 || status == 204 || status == 304
        // The response's own fields are read in place (copying them to add or drop one is most of a small
        // answer's cost): framing is this connection's business, so `Transfer-Encoding` and `Connection` are
        // skipped as they are written, and the fields this connection adds follow the response's own.
        var keepAlive = keepAlive
        var framing: BodyFraming
        var lengthField: String?
        var codingField: StaticString?
        if bodiless {
            framing = .none
        } else if let length = response.headers["Content-Length"].flatMap(Int64.init) {
            framing = length == 0 ? .none : .length(length)
        } else if let known = response.body.knownLength {
            lengthField = String(known)
            framing = known == 0 ? .none : .length(known)
        } else if version.major == 1, version.minor >= 1 {
            codingField = "Transfer-Encoding: chunked\r\n"
            framing = .chunked
        } else {
            framing = .untilClose
            keepAlive = false
        }
        writeStatusLine(status, version: version, into: &buffer)
        writeFields(response.headers, into: &buffer)
        if let lengthField {
            buffer.writeStaticString("Content-Length: ")
            buffer.writeString(lengthField)
            buffer.writeStaticString("\r\n")
        }
        if let codingField { buffer.writeStaticString(codingField) }
        if !keepAlive {
            buffer.writeStaticString("Connection: close\r\n")
        } else if version.major == 1, version.minor == 0 {
            buffer.writeStaticString("Connection: keep-alive\r\n")
        }
        buffer.writeStaticString("\r\n")
        return (framing, keepAlive)
    }

    /// The response's own fields but `Connection` and `Transfer-Encoding`, as `name: value` lines: sized first, then
    /// copied in one write, since a write per name, separator, value and line end (four per field, each checking
    /// the buffer's capacity and uniqueness) was most of the cost of a head.
    static func writeFields(_ headers: SatchelCore.HTTPHeaders, into buffer: inout ByteBuffer) {
        func written(_ name: String) -> Bool {
            !HTTPHeaders.equalNames(name, "Connection") && !HTTPHeaders.equalNames(name, "Transfer-Encoding")
        }
        var size = 0
        for field in headers where written(field.name) { size += field.name.utf8.count + field.value.utf8.count + 4 }
        guard size > 0 else { return }
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { raw in
            var offset = 0
            func put(_ text: String) {
                if let copied = text.utf8.withContiguousStorageIfAvailable({ bytes -> Int in
                    UnsafeMutableRawBufferPointer(rebasing: raw[offset..<(offset + bytes.count)]).copyMemory(from: UnsafeRawBufferPointer(bytes))
                    return bytes.count
                }) {
                    offset += copied
                } else {
                    for byte in text.utf8 {
                        raw[offset] = byte
                        offset += 1
                    }
                }
            }
            for field in headers where written(field.name) {
                put(field.name)
                raw[offset] = UInt8(ascii: ":")
                raw[offset + 1] = UInt8(ascii: " ")
                offset += 2
                put(field.value)
                raw[offset] = UInt8(ascii: "\r")
                raw[offset + 1] = UInt8(ascii: "\n")
                offset += 2
            }
            return offset
        }
    }

    /// The common status lines are written as they are; the rest are formatted.
    private static func writeStatusLine(_ status: Int, version: HTTPVersion, into buffer: inout ByteBuffer) {
        if version.major == 1, version.minor == 1 {
            switch status {
            case 200: buffer.writeStaticString("HTTP/1.1 200 OK\r\n"); return
            case 206: buffer.writeStaticString("HTTP/1.1 206 Partial Content\r\n"); return
            case 304: buffer.writeStaticString("HTTP/1.1 304 Not Modified\r\n"); return
            case 404: buffer.writeStaticString("HTTP/1.1 404 Not Found\r\n"); return
            default: break
            }
        }
        buffer.writeString("HTTP/\(version.major).\(version.minor) \(status) \(HTTPResponseStatus(statusCode: status).reasonPhrase)\r\n")
    }

    /// One chunk of a chunked body: `<size hex>\r\n<bytes>\r\n`.
    static func writeChunk(_ bytes: [UInt8], into buffer: inout ByteBuffer) {
        buffer.writeString(String(bytes.count, radix: 16))
        buffer.writeStaticString("\r\n")
        buffer.writeBytes(bytes)
        buffer.writeStaticString("\r\n")
    }

    static let lastChunk: StaticString = "0\r\n\r\n"
}
