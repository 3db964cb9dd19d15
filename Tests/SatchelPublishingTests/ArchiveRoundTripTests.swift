import Foundation
import SatchelTestSupport
import Testing
@testable import SatchelArchive
@testable import SatchelPublishing

@Suite("Archive writer and reader")
struct ArchiveRoundTripTests {
    static let names = ["satchel.json", "a.txt", "café/名前.html", "offline packages/index.html", "img/pixel.png", "empty"]

    static func write(_ path: String, format: ArchiveFormat, time: Int64 = 1_700_000_000) async throws {
        let writer = try ArchiveWriter(creating: path, format: format)
        for (index, name) in names.enumerated() {
            let bytes = name == "empty" ? [] : Array(repeating: UInt8(index + 65), count: 1000 * (index + 1))
            try writer.add(
                ArchiveEntryHeader(path: name, size: Int64(bytes.count), modificationTime: time, compress: !name.hasSuffix(".png")),
                bytes: bytes)
        }
        try writer.finish()
    }

    static func read(_ path: String) async throws -> [(String, ArchiveEntryKind, [UInt8])] {
        let reader = try ArchiveReader(path: path)
        var entries: [(String, ArchiveEntryKind, [UInt8])] = []
        while let entry = try reader.nextEntry() {
            entries.append((entry.path, entry.kind, try reader.readAll(maxBytes: 1 << 20)))
        }
        return entries
    }

    @Test("entries come back in order with their bytes and UTF-8 names", arguments: ArchiveFormat.allCases)
    func roundTrip(_ format: ArchiveFormat) async throws {
        try await withTemporaryFolder { folder async throws in
            let path = folder + "/a." + format.fileExtension
            try await Self.write(path, format: format)
            let entries = try await Self.read(path)
            #expect(entries.map(\.0) == Self.names)
            #expect(entries.allSatisfy { $0.1 == .regular })
            for (index, entry) in entries.enumerated() {
                let expected = entry.0 == "empty" ? 0 : 1000 * (index + 1)
                #expect(entry.2.count == expected)
                #expect(entry.2.allSatisfy { $0 == UInt8(index + 65) })
            }
        }
    }

    @Test("the same entries give the same bytes; another time changes them", arguments: ArchiveFormat.allCases)
    func deterministic(_ format: ArchiveFormat) async throws {
        try await withTemporaryFolder { folder async throws in
            try await Self.write(folder + "/1", format: format)
            try await Self.write(folder + "/2", format: format)
            try await Self.write(folder + "/3", format: format, time: 1_700_000_002)
            #expect(try readBytes(folder + "/1") == readBytes(folder + "/2"))
            #expect(try readBytes(folder + "/1") != readBytes(folder + "/3"))
        }
    }

    @Test("zip stores what it is told to store and deflates the rest")
    func zipMethods() async throws {
        try await withTemporaryFolder { folder async throws in
            try await Self.write(folder + "/a.zip", format: .zip)
            let listing = try await run("/usr/bin/zipinfo", [folder + "/a.zip"])
            let png = listing.split(separator: "\n").first { $0.hasSuffix("img/pixel.png") }
            let text = listing.split(separator: "\n").first { $0.hasSuffix(" a.txt") }
            #expect(png?.contains("stor") == true)
            #expect(text?.contains("defN") == true || text?.contains("defX") == true)
            // Another unzip (Info-ZIP) reads the UTF-8 names and the data.
            _ = try await run("/usr/bin/unzip", ["-q", "-t", folder + "/a.zip"])
        }
    }

    @Test("the gzip header carries no time stamp and the OS byte 255")
    func gzipHeader() async throws {
        try await withTemporaryFolder { folder async throws in
            try await Self.write(folder + "/a.tar.gz", format: .tarGzip)
            let bytes = try readBytes(folder + "/a.tar.gz")
            #expect(Array(bytes[0..<4]) == [0x1F, 0x8B, 8, 0])
            #expect(Array(bytes[4..<8]) == [0, 0, 0, 0])
            #expect(bytes[9] == 255)
            _ = try await run("/bin/tar", ["tzf", folder + "/a.tar.gz"])
        }
    }

    @Test("a file streamed from disk is observed chunk by chunk and must keep its declared size")
    func streamsFromDisk() async throws {
        try await withTemporaryFolder { folder async throws in
            let source = folder + "/big.bin"
            let data = Data((0..<(1 << 20) + 17).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            try data.write(to: URL(fileURLWithPath: source))
            let writer = try ArchiveWriter(creating: folder + "/a.zip", format: .zip)
            var observed = 0
            try writer.add(ArchiveEntryHeader(path: "big.bin", size: Int64(data.count), modificationTime: 0, compress: true), contentsOf: source) {
                observed += $0.count
            }
            #expect(observed == data.count)
            #expect(throws: ArchiveError.self) {
                try writer.add(ArchiveEntryHeader(path: "wrong.bin", size: 10, modificationTime: 0, compress: true), contentsOf: source)
            }
            #expect(throws: ArchiveError.io(operation: "open", path: folder + "/missing", errno: ENOENT)) {
                try writer.add(ArchiveEntryHeader(path: "m", size: 1, modificationTime: 0, compress: true), contentsOf: folder + "/missing")
            }
        }
    }

    @Test("an existing output is never overwritten")
    func refusesExistingOutput() async throws {
        try await withTemporaryFolder { folder async throws in
            _ = FileManager.default.createFile(atPath: folder + "/a.zip", contents: Data("keep".utf8))
            #expect(throws: ArchiveError.io(operation: "create", path: folder + "/a.zip", errno: EEXIST)) {
                try ArchiveWriter(creating: folder + "/a.zip", format: .zip)
            }
            #expect(try readBytes(folder + "/a.zip") == Array("keep".utf8))
        }
    }
}
