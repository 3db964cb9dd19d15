import Foundation
import SatchelCore
import SatchelHTTP

/// An in-memory HTTP origin behind the NetworkFetcher seam: serves files with strong ETags, honours Range and
/// If-Range (RFC 9110 14.2 and 13.1.5) and If-None-Match, logs every request, and can cut a response short
/// the way a dropped connection does.
final class FakeOrigin: AsyncNetworkFetcher, @unchecked Sendable {
    struct File {
        var bytes: [UInt8]
        var etag: String
    }
    struct Logged: Sendable {
        var url: String
        var headers: HTTPHeaders
        var status: Int
    }

    private let lock = NSLock()
    private var files: [String: File] = [:]
    private var cuts: [String: Int] = [:]
    private var failures: [String: Int] = [:]
    private var statuses: [String: Int] = [:]
    private var replacements: [String: [UInt8]] = [:]
    private(set) var log: [Logged] = []

    func put(_ url: String, _ bytes: [UInt8], etag: String? = nil) {
        lock.withLock { files[url] = File(bytes: bytes, etag: etag ?? "\"\(Digests.sha256Hex(bytes))\"") }
    }

    /// Every file under `folder`, at `base` + its path in the folder (a release folder uploaded to a CDN).
    func putFiles(of folder: String, at base: String) throws {
        let enumerator = FileManager.default.enumerator(atPath: folder)!
        while let relative = enumerator.nextObject() as? String {
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: folder + "/" + relative, isDirectory: &isFolder), !isFolder.boolValue {
                put(base + relative, Array(try Data(contentsOf: URL(fileURLWithPath: folder + "/" + relative))))
            }
        }
    }

    /// `url` is answered with `status` and no body from now on (an object store's 403 for a missing key, a 410, a 500).
    func answer(_ url: String, status: Int) { lock.withLock { statuses[url] = status } }

    /// The next request for `url` gets what it holds now; every later one gets `bytes` (a CDN refreshing one file).
    func put(_ url: String, afterNext bytes: [UInt8]) { lock.withLock { replacements[url] = bytes } }

    /// `url` is gone: answered 404 from now on.
    func remove(_ url: String) { lock.withLock { files[url] = nil } }

    /// The next response for `url` stops after `bytes` body bytes with a connection error.
    func cutNext(_ url: String, after bytes: Int) { lock.withLock { cuts[url] = bytes } }

    /// The next `count` requests for `url` fail before any response, as when the network is down.
    func failNext(_ url: String, count: Int) { lock.withLock { failures[url] = count } }

    var requests: [Logged] { lock.withLock { log } }

    private var holds: [String: String] = [:]
    private var heldTooLong: Set<String> = []

    /// Requests for `url` are answered only once a request for `other` has arrived (two downloads that must be in flight
    /// together): after 60 s without it, answered anyway and named in ``releasedByTimeout``.
    func hold(_ url: String, until other: String) { lock.withLock { holds[url] = other } }

    /// The held URLs answered because their other request never came.
    var releasedByTimeout: Set<String> { lock.withLock { heldTooLong } }

    func fetchResponse(_ request: ResourceRequest, timeouts: FetchTimeouts) async throws -> ResourceResponse {
        if let other = lock.withLock({ holds[request.url] }) {
            let started = ContinuousClock.now
            while !lock.withLock({ log.contains { $0.url == other } }) {
                if ContinuousClock.now - started > .seconds(60) {
                    lock.withLock { _ = heldTooLong.insert(request.url) }
                    break
                }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        let (file, cut, fail, forced): (File?, Int?, Bool, Int?) = lock.withLock {
            let fail = (failures[request.url] ?? 0) > 0
            if fail { failures[request.url]! -= 1 }
            let cut = cuts.removeValue(forKey: request.url)
            let file = files[request.url]
            if let next = replacements.removeValue(forKey: request.url) { files[request.url] = File(bytes: next, etag: "\"\(Digests.sha256Hex(next))\"") }
            return (file, cut, fail, statuses[request.url])
        }
        if let forced {
            record(request, forced)
            return ResourceResponse(status: forced)
        }
        if fail {
            record(request, 0)
            throw FetchError.connectionFailed("connection refused")
        }
        guard let file else {
            record(request, 404)
            return ResourceResponse(status: 404)
        }
        if let tags = request.headers["If-None-Match"], tags == file.etag {
            record(request, 304)
            return ResourceResponse(status: 304, headers: ["ETag": file.etag])
        }
        var status = 200
        var body = file.bytes[...]
        var headers: HTTPHeaders = ["ETag": file.etag, "Accept-Ranges": "bytes"]
        if let range = request.headers["Range"], request.headers["If-Range"].map({ $0 == file.etag }) ?? true,
            range.hasPrefix("bytes="), range.hasSuffix("-"), let start = Int(range.dropFirst(6).dropLast())
        {
            guard start < file.bytes.count else {
                record(request, 416)
                return ResourceResponse(status: 416, headers: ["Content-Range": "bytes */\(file.bytes.count)"])
            }
            status = 206
            body = file.bytes[start...]
            headers.add("Content-Range", "bytes \(start)-\(file.bytes.count - 1)/\(file.bytes.count)")
        }
        record(request, status)
        let chunks = Array(body)
        let stream = AsyncThrowingStream<[UInt8], any Error> { continuation in
            if let cut {
                continuation.yield(Array(chunks.prefix(cut)))
                continuation.finish(throwing: FetchError.connectionFailed("connection reset by peer"))
            } else {
                var index = 0
                while index < chunks.count {
                    continuation.yield(Array(chunks[index..<min(chunks.count, index + 65536)]))
                    index += 65536
                }
                continuation.finish()
            }
        }
        return ResourceResponse(status: status, headers: headers, body: .stream(BodyStream(stream)))
    }

    private func record(_ request: ResourceRequest, _ status: Int) {
        lock.withLock { log.append(Logged(url: request.url, headers: request.headers, status: status)) }
    }
}
