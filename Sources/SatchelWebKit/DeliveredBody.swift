import Foundation

/// The body WebKit delivered with an intercepted request, when it delivered one. Older WebKit dropped every body;
/// recent releases deliver some: form submissions as `httpBody`, some fetch and XHR bodies as `httpBodyStream`. A body
/// WebKit did deliver is used (the hook's channels cover what it drops, and ``BodyRestorer`` checks a body that
/// arrives both ways is the same one).
public enum DeliveredBody {
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        case tooLarge(limit: Int)
        case unreadable(String)

        public var description: String {
            switch self {
            case .tooLarge(let limit): "the request body WebKit delivered is larger than \(limit) bytes"
            case .unreadable(let reason): "the request body WebKit delivered cannot be read: \(reason)"
            }
        }
    }

    /// `body` when WebKit set it, else everything `stream` yields (read to its end, at most `limit` bytes); nil when
    /// WebKit delivered neither.
    public static func read(body: Data?, stream: InputStream?, limit: Int = 64 << 20) throws(Failure) -> [UInt8]? {
        if let body {
            guard body.count <= limit else { throw .tooLarge(limit: limit) }
            return Array(body)
        }
        guard let stream else { return nil }
        stream.open()
        defer { stream.close() }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBufferPointer { stream.read($0.baseAddress!, maxLength: $0.count) }
            if count < 0 { throw .unreadable(stream.streamError.map { "\($0)" } ?? "read failed") }
            if count == 0 { return bytes }
            guard bytes.count + count <= limit else { throw .tooLarge(limit: limit) }
            bytes.append(contentsOf: chunk[..<count])
        }
    }
}
