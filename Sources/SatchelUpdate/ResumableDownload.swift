import Foundation
import SatchelArchive
import SatchelBundle
import SatchelCore
import SatchelHTTP
import SatchelPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One file to download, as the catalog describes it.
public struct DownloadTarget: Sendable, Equatable {
    public var url: String
    public var size: Int64
    public var sha256: String

    public init(url: String, size: Int64, sha256: String) {
        self.url = url
        self.size = size
        self.sha256 = sha256
    }
}

/// What a download took.
public struct DownloadReport: Sendable, Equatable, Codable {
    public var path: String
    /// Bytes received over the network in this run (less than the size when a partial file was resumed).
    public var received: Int64
    public var resumed: Bool
    public var attempts: Int
}

/// Downloads a file to `<folder>/<sha256>.part`, resuming where an earlier attempt (in this run or an earlier
/// one) stopped, then checks size and SHA-256 against the catalog before handing back `<sha256>.zip`.
///
/// Resume is safe only against the same representation, so the partial file's validator (a strong ETag, else
/// Last-Modified) is kept beside it in `.part.validator`, and a resume sends `Range: bytes=<have>-` with
/// `If-Range: <validator>`. A 206 whose `Content-Range` starts where we stopped is appended; a 200 means the
/// file changed (or the server ignores ranges) and the partial is replaced, never appended to; a partial
/// without a validator is never resumed.
public struct ResumableDownload: Sendable {
    public let fetcher: any NetworkFetcher
    public let timeouts: FetchTimeouts
    public let retry: RetryPolicy

    public init(fetcher: any NetworkFetcher, timeouts: FetchTimeouts = FetchTimeouts(), retry: RetryPolicy = RetryPolicy()) {
        self.fetcher = fetcher
        self.timeouts = timeouts
        self.retry = retry
    }

    public func download(
        _ target: DownloadTarget, into folder: String, progress: @Sendable (Int64, Int64) -> Void = { _, _ in }
    ) async throws(UpdateError) -> DownloadReport {
        var spent: Int64 = 0
        return try await download(target, into: folder, counting: &spent, progress: progress)
    }

    /// As above, adding every byte received to `spent` as it arrives, so that a download that ends in an error (a
    /// refused hash, say) still counts what it cost.
    public func download(
        _ target: DownloadTarget, into folder: String, counting spent: inout Int64, progress: @Sendable (Int64, Int64) -> Void = { _, _ in }
    ) async throws(UpdateError) -> DownloadReport {
        var received: Int64 = 0
        defer { spent += received }
        try Self.makeFolder(folder)
        let finished = "\(folder)/\(target.sha256).zip"
        let partial = "\(folder)/\(target.sha256).part"
        let validatorFile = partial + ".validator"
        // A file verified by an earlier run whose install did not happen: check it again and reuse it.
        if let digest = try? FileDigest.sha256(ofFile: finished), digest.size == target.size, digest.sha256 == target.sha256 {
            return DownloadReport(path: finished, received: 0, resumed: false, attempts: 0)
        }
        var resumed = false
        var attempt = 0
        var restartedAfterMismatch = false
        var lastError: UpdateError?
        while attempt < retry.attempts {
            attempt += 1
            if attempt > 1, lastError != nil {
                do { try await Task.sleep(for: retry.delay(beforeAttempt: attempt)) } catch { throw .cancelled }
            }
            if Task.isCancelled { throw .cancelled }
            var have = Self.size(of: partial)
            var validator = try? String(contentsOfFile: validatorFile, encoding: .utf8)
            if have > target.size || (have > 0 && validator == nil) {
                try Self.reset(partial, validatorFile)
                have = 0
                validator = nil
            }
            if have < target.size {
                do {
                    let appended = try await fetch(
                        target, into: partial, validatorFile: validatorFile, have: have, validator: validator, received: &received,
                        progress: progress)
                    resumed = resumed || appended
                    lastError = nil
                } catch {
                    lastError = error
                    guard Self.isRetryable(error) else { throw error }
                    continue
                }
            }
            let digest: (size: Int64, sha256: String)
            do { digest = try FileDigest.sha256(ofFile: partial) } catch { throw .system(error.operation, error.path, error.errno) }
            if digest.size != target.size {
                lastError = .sizeMismatch(url: target.url, expected: target.size, actual: digest.size)
                continue
            }
            guard digest.sha256 == target.sha256 else {
                try Self.reset(partial, validatorFile)
                // A resumed file may have joined two different representations behind an unchanged validator:
                // try once more from zero before calling the server's file corrupt.
                if resumed, !restartedAfterMismatch {
                    restartedAfterMismatch = true
                    resumed = false
                    lastError = nil
                    attempt -= 1
                    continue
                }
                throw .checksumMismatch(url: target.url, expected: target.sha256, actual: digest.sha256)
            }
            guard rename(partial, finished) == 0 else { throw .system("rename", partial) }
            unlink(validatorFile)
            return DownloadReport(path: finished, received: received, resumed: resumed, attempts: attempt)
        }
        throw lastError ?? .httpStatus(url: target.url, status: 0)
    }

    /// One request: appends to (206) or replaces (200) the partial file. Returns whether it appended; bytes
    /// are counted in `received` as they are written, so a dropped attempt still counts what it brought.
    private func fetch(
        _ target: DownloadTarget, into partial: String, validatorFile: String, have: Int64, validator: String?,
        received: inout Int64, progress: @Sendable (Int64, Int64) -> Void
    ) async throws(UpdateError) -> Bool {
        var headers = HTTPHeaders()
        if have > 0, let validator {
            headers.add("Range", "bytes=\(have)-")
            headers.add("If-Range", validator)
        }
        let response: ResourceResponse
        do {
            response = try await fetcher.fetch(ResourceRequest(method: .get, url: target.url, headers: headers), timeouts: timeouts)
        } catch let error as FetchError {
            throw .network(url: target.url, error, attempts: 1)
        } catch is CancellationError {
            throw .cancelled
        } catch {
            throw .network(url: target.url, .connectionFailed("\(error)"), attempts: 1)
        }
        var offset: Int64
        let append: Bool
        switch response.status {
        case 206:
            guard have > 0, let range = ContentRange(response.headers["Content-Range"]), range.start == have,
                range.total == nil || range.total == target.size
            else {
                // A range we did not ask for: start over rather than guess.
                try Self.reset(partial, validatorFile)
                throw .httpStatus(url: target.url, status: 206)
            }
            offset = have
            append = true
        case 200:
            offset = 0
            append = false
            let newValidator = Self.validator(of: response.headers)
            do {
                if let newValidator {
                    try newValidator.write(toFile: validatorFile, atomically: true, encoding: .utf8)
                } else {
                    unlink(validatorFile)
                }
            } catch { throw .system("write", validatorFile, EIO) }
        case 416:
            try Self.reset(partial, validatorFile)
            throw .httpStatus(url: target.url, status: 416)
        default:
            throw .httpStatus(url: target.url, status: response.status)
        }
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC)
        let descriptor = open(partial, flags, 0o644)
        guard descriptor >= 0 else { throw .system("open", partial) }
        defer { close(descriptor) }
        do {
            for try await chunk in response.body.chunks() {
                received += Int64(chunk.count)  // received, whether kept or refused
                guard offset + Int64(chunk.count) <= target.size else {
                    throw UpdateError.sizeMismatch(url: target.url, expected: target.size, actual: offset + Int64(chunk.count))
                }
                try Self.writeAll(descriptor, chunk, path: partial)
                offset += Int64(chunk.count)
                progress(offset, target.size)
            }
        } catch let error as UpdateError {
            throw error
        } catch is CancellationError {
            throw .cancelled
        } catch let error as FetchError {
            throw .network(url: target.url, error, attempts: 1)
        } catch {
            throw .network(url: target.url, .connectionFailed("the connection dropped after \(offset) of \(target.size) bytes: \(error)"), attempts: 1)
        }
        return append
    }

    static func isRetryable(_ error: UpdateError) -> Bool {
        switch error {
        case .network: true
        case .httpStatus(_, let status): status >= 500 || status == 408 || status == 429 || status == 416 || status == 206
        case .sizeMismatch: true
        default: false
        }
    }

    /// The validator to resume against: a strong ETag (If-Range needs one), else Last-Modified.
    static func validator(of headers: HTTPHeaders) -> String? {
        if let tag = headers["ETag"], !tag.hasPrefix("W/"), !tag.isEmpty { return tag }
        if let date = headers["Last-Modified"], !date.isEmpty { return date }
        return nil
    }

    static func size(of path: String) -> Int64 {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : 0
    }

    static func reset(_ partial: String, _ validatorFile: String) throws(UpdateError) {
        if unlink(partial) != 0, errno != ENOENT { throw .system("unlink", partial) }
        unlink(validatorFile)
    }

    static func makeFolder(_ path: String) throws(UpdateError) {
        do { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) } catch {
            throw .system("mkdir", path, (error as NSError).code == 0 ? EIO : Int32(truncatingIfNeeded: (error as NSError).code))
        }
    }

    static func writeAll(_ descriptor: Int32, _ bytes: [UInt8], path: String) throws(UpdateError) {
        if let code = POSIXIO.writeAll(bytes, to: descriptor) { throw .system("write", path, code) }
    }
}

/// `Content-Range: bytes <start>-<end>/<total or *>` of a 206.
struct ContentRange: Equatable {
    var start: Int64
    var end: Int64
    var total: Int64?

    init?(_ text: String?) {
        guard let text, text.hasPrefix("bytes ") else { return nil }
        let spec = text.dropFirst(6)
        let halves = spec.split(separator: "/", maxSplits: 1)
        guard halves.count == 2 else { return nil }
        let bounds = halves[0].split(separator: "-", maxSplits: 1)
        guard bounds.count == 2, let start = Int64(bounds[0]), let end = Int64(bounds[1]), start <= end else { return nil }
        self.start = start
        self.end = end
        if halves[1] == "*" {
            total = nil
        } else {
            guard let total = Int64(halves[1]), total > end else { return nil }
            self.total = total
        }
    }
}
