import Foundation
import SatchelCore
import SatchelTestSupport
import Testing
@testable import SatchelUpdate

private let fast = RetryPolicy(attempts: 3, initialDelay: .milliseconds(1), maxDelay: .milliseconds(5))

private func pattern(_ count: Int, seed: UInt8 = 7) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) } }

@Suite struct ResumableDownloadTests {
    let url = "https://cdn.example/shop-1.1.0.zip"

    @Test func resumesACutDownloadWithRangeAndIfRange() async throws {
        try await withTemporaryFolder { folder async throws in
            let origin = FakeOrigin()
            let bytes = pattern(300_000)
            origin.put(url, bytes)
            origin.cutNext(url, after: 120_000)
            let target = DownloadTarget(url: url, size: Int64(bytes.count), sha256: Digests.sha256Hex(bytes))
            let report = try await ResumableDownload(fetcher: origin, retry: fast).download(target, into: folder)
            #expect(try readBytes(report.path) == bytes)
            #expect(report.resumed && report.attempts == 2 && report.received == 300_000)
            let requests = origin.requests
            #expect(requests.count == 2)
            #expect(requests[0].headers["Range"] == nil)
            #expect(requests[1].headers["Range"] == "bytes=120000-")
            #expect(requests[1].headers["If-Range"] == "\"\(Digests.sha256Hex(bytes))\"")
            #expect(requests[1].status == 206)
            #expect(listing(folder) == ["\(target.sha256).zip"])
        }
    }

    @Test func neverAppendsToAPartialWhoseValidatorChanged() async throws {
        try await withTemporaryFolder { folder async throws in
            let origin = FakeOrigin()
            let old = pattern(200_000, seed: 1)
            let new = pattern(200_000, seed: 2)
            origin.put(url, old)
            origin.cutNext(url, after: 50_000)
            let target = DownloadTarget(url: url, size: Int64(new.count), sha256: Digests.sha256Hex(new))
            // The first attempt gets half of the old file, then the file is replaced on the server.
            let download = ResumableDownload(fetcher: origin, retry: RetryPolicy(attempts: 1))
            await #expect(throws: UpdateError.self) { try await download.download(target, into: folder) }
            origin.put(url, new)
            let report = try await ResumableDownload(fetcher: origin, retry: fast).download(target, into: folder)
            #expect(try readBytes(report.path) == new)
            let last = origin.requests.last!
            #expect(last.headers["If-Range"] == "\"\(Digests.sha256Hex(old))\"" && last.status == 200)
            #expect(!report.resumed && report.received == 200_000)
        }
    }

    @Test func corruptedDownloadIsRefusedAndNothingKept() async throws {
        try await withTemporaryFolder { folder async throws in
            let origin = FakeOrigin()
            var bytes = pattern(100_000)
            origin.put(url, bytes)
            bytes[500] ^= 0xFF
            let target = DownloadTarget(url: url, size: Int64(bytes.count), sha256: Digests.sha256Hex(bytes))
            await #expect(throws: UpdateError.checksumMismatch(url: url, expected: target.sha256, actual: Digests.sha256Hex(pattern(100_000)))) {
                try await ResumableDownload(fetcher: origin, retry: fast).download(target, into: folder)
            }
            #expect(listing(folder).isEmpty)
        }
    }

    @Test func networkDownAndHTTPErrorsAreTyped() async throws {
        try await withTemporaryFolder { folder async throws in
            let origin = FakeOrigin()
            origin.put(url, pattern(10))
            origin.failNext(url, count: 5)
            let target = DownloadTarget(url: url, size: 10, sha256: Digests.sha256Hex(pattern(10)))
            await #expect(throws: UpdateError.network(url: url, .connectionFailed("connection refused"), attempts: 1)) {
                try await ResumableDownload(fetcher: origin, retry: fast).download(target, into: folder)
            }
            #expect(origin.requests.count == 3)
            let missing = DownloadTarget(url: url + ".nope", size: 10, sha256: target.sha256)
            await #expect(throws: UpdateError.httpStatus(url: missing.url, status: 404)) {
                try await ResumableDownload(fetcher: origin, retry: fast).download(missing, into: folder)
            }
            // Two failures then success: the retry with backoff gets it.
            origin.failNext(url, count: 2)
            let report = try await ResumableDownload(fetcher: origin, retry: fast).download(target, into: folder)
            #expect(report.attempts == 3)
        }
    }

    @Test func backoffDoublesUpToTheCap() {
        let policy = RetryPolicy(attempts: 6, initialDelay: .milliseconds(100), maxDelay: .milliseconds(350))
        #expect((2...5).map { policy.delay(beforeAttempt: $0) } == [.milliseconds(100), .milliseconds(200), .milliseconds(350), .milliseconds(350)])
    }

    @Test func contentRangeParsing() {
        #expect(ContentRange("bytes 10-19/20") == ContentRange("bytes 10-19/20"))
        #expect(ContentRange("bytes 10-19/20")?.start == 10)
        #expect(ContentRange("bytes 10-19/*")?.total == nil)
        #expect(ContentRange("bytes 19-10/20") == nil)
        #expect(ContentRange("bytes 10-19/19") == nil)
        #expect(ContentRange("items 1-2/3") == nil)
    }
}

@Suite struct DownloadDiskFullTests {
    /// A download that does not fit is one typed error, fast, with no retry loop; the partial file is kept for
    /// a later resume (space may be freed). The mount must succeed (root is available here): a disk-full path
    /// that is never exercised is not tested.
    @Test func diskFullIsTypedAndNotRetried() async throws {
        try await withTemporaryFolder { folder async throws in
            let mountPoint = folder + "/small"
            try await withSmallFileSystem(at: mountPoint, size: "1m") { () async throws in
                let origin = FakeOrigin()
                let url = "https://cdn.example/big.zip"
                let bytes = pattern(3_000_000)
                origin.put(url, bytes)
                let target = DownloadTarget(url: url, size: Int64(bytes.count), sha256: Digests.sha256Hex(bytes))
                await #expect(throws: UpdateError.diskFull(path: mountPoint + "/downloads/\(target.sha256).part")) {
                    try await ResumableDownload(fetcher: origin, retry: RetryPolicy(attempts: 4, initialDelay: .seconds(5))).download(target, into: mountPoint + "/downloads")
                }
                #expect(origin.requests.count == 1)
            }
        }
    }
}
