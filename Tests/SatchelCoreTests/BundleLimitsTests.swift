import Foundation
import Testing
@testable import SatchelCore

@Suite("Bundle limits: one set, checked from the file list before any work")
struct BundleLimitsTests {
    /// `count` files under `a/`, plus index.html, each `size` bytes.
    func files(_ count: Int, size: Int64 = 1, pathPadding: Int = 0) -> [FileRecord] {
        let pad = String(repeating: "p", count: pathPadding)
        return [Fixture.record("index.html")] + (0..<(count - 1)).map { Fixture.record("a/\(pad)\($0).js", size: size) }
    }

    @Test("the limit's own count of files is a manifest; one more is refused naming the limit")
    func fileCount() throws {
        let atLimit = try Fixture.manifest(files: files(BundleLimits.maxFiles))
        #expect(atLimit.files.count == BundleLimits.maxFiles)
        // Read back: the bytes a writer makes at the limit, a reader takes.
        #expect(try Manifest.decode(atLimit.canonicalBytes) == atLimit)
        #expect(throws: ManifestError.limit(.tooManyFiles(count: BundleLimits.maxFiles + 1, limit: BundleLimits.maxFiles))) {
            try Fixture.manifest(files: files(BundleLimits.maxFiles + 1))
        }
        // Read from bytes another tool wrote: refused by count, before a JSON tree is built (the count is the same).
        var object = Fixture.json(atLimit)
        var records = object["files"] as! [[String: Any]]
        records.append(["mime": "text/javascript", "path": "zz.js", "sha256": Fixture.hello, "size": 6])
        object["files"] = records
        #expect(throws: ManifestError.limit(.tooManyFiles(count: BundleLimits.maxFiles + 1, limit: BundleLimits.maxFiles))) {
            try Manifest.decode(Fixture.bytes(object))
        }
    }

    @Test("one file past its size, or all of them past the total, is refused naming the file or the total")
    func sizes() throws {
        var big = files(3)
        big[1] = Fixture.record("a/big.webm", size: BundleLimits.maxFileBytes + 1)
        #expect(throws: ManifestError.limit(.fileTooLarge(path: "a/big.webm", size: BundleLimits.maxFileBytes + 1, limit: BundleLimits.maxFileBytes))) {
            try Fixture.manifest(files: big)
        }
        let three = [Fixture.record("index.html")] + (0..<3).map { Fixture.record("a/\($0).webm", size: BundleLimits.maxFileBytes) }
        #expect(throws: ManifestError.limit(.tooManyBytes(total: 3 * BundleLimits.maxFileBytes + 6, limit: BundleLimits.maxTotalBytes))) {
            try Fixture.manifest(files: three)
        }
    }

    @Test("a manifest whose bytes would pass what a reader reads is not built, naming its size")
    func manifestBytes() throws {
        // 100,000 records with 60-byte names come to about 17 MB: past the 16 MiB a reader takes.
        do {
            _ = try Fixture.manifest(files: files(BundleLimits.maxFiles, pathPadding: 60))
            Issue.record("built a manifest past Manifest.maxBytes")
        } catch let error as ManifestError {
            if case .limit(.manifestTooLarge(let bytes, let limit)) = error {
                #expect(bytes > limit && limit == Manifest.maxBytes)
            } else {
                Issue.record("\(error)")
            }
        }
    }
}
