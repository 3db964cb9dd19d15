@testable import SatchelArchive
import Foundation
import SatchelPublishing
import SatchelTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("Reading a zip's central directory and entries in place")
struct ZipDirectoryTests {
    /// A zip written by the real writer: deflated text, stored media, a UTF-8 name, an empty file.
    static func writeSample(_ path: String) throws -> [String: [UInt8]] {
        var files: [(String, [UInt8], Bool)] = [
            ("satchel.json", Array("{}".utf8), true),
            ("app.js", Array(String(repeating: "console.log('hello');\n", count: 4000).utf8), true),
            ("img/photo.png", (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 7919 &+ $0 >> 5) }, false),
            ("café/名前.html", Array("<h1>名前</h1>".utf8), true),
            ("empty", [], true),
        ]
        files.append(("big.css", Array(String(repeating: "body { margin: 0 }\n", count: 60_000).utf8), true))
        let writer = try ArchiveWriter(creating: path, format: .zip)
        for (name, bytes, compress) in files {
            try writer.add(ArchiveEntryHeader(path: name, size: Int64(bytes.count), modificationTime: 1_700_000_000, compress: compress), bytes: bytes)
        }
        try writer.finish()
        return Dictionary(uniqueKeysWithValues: files.map { ($0.0, $0.1) })
    }

    @Test("every entry of a real zip: offsets, sizes, methods; stored bytes lie as they are at the data offset")
    func realZip() throws {
        try withTemporaryFolder { folder throws in
            let path = folder + "/a.zip"
            let files = try Self.writeSample(path)
            let directory = try ZipDirectory.read(path: path)
            #expect(directory.entries.map(\.name) == ["satchel.json", "app.js", "img/photo.png", "café/名前.html", "empty", "big.css"])
            let archive = try readBytes(path)
            for entry in directory.entries {
                let expected = try #require(files[entry.name])
                #expect(entry.size == Int64(expected.count))
                #expect(entry.crc32 == crc32(expected), "\(entry.name)")
                if entry.name == "img/photo.png" {
                    #expect(entry.method == .stored)
                    #expect(Array(archive[Int(entry.dataOffset)..<Int(entry.dataOffset + entry.size)]) == expected)
                } else if entry.size > 0 {
                    #expect(entry.method == .deflated)
                }
                let reader = try ZipEntryReader(path: path, entry: entry)
                #expect(try reader.readAll() == expected, "\(entry.name)")
            }
        }
    }

    @Test("an entry read in small chunks, and after a skip, gives the same bytes; memory is one chunk")
    func chunksAndSkip() throws {
        try withTemporaryFolder { folder throws in
            let path = folder + "/a.zip"
            let files = try Self.writeSample(path)
            let entry = try #require(try ZipDirectory.read(path: path).entries.first { $0.name == "big.css" })
            let expected = try #require(files["big.css"])
            let reader = try ZipEntryReader(path: path, entry: entry)
            var collected: [UInt8] = []
            while !reader.isAtEnd {
                let chunk = try reader.read(upTo: 1000)
                #expect(chunk.count <= 1000)
                collected += chunk
            }
            #expect(collected == expected)
            #expect(try reader.read(upTo: 10).isEmpty)
            let skipping = try ZipEntryReader(path: path, entry: entry)
            try skipping.skip(500_001)
            #expect(try skipping.readAll() == Array(expected[500_001...]))
        }
    }

    @Test("the writer's MS-DOS times are UTC, whatever the time zone (APPNOTE 4.4.6: date and time fields)")
    func dosTimes() throws {
        try withTemporaryFolder { folder throws in
            let path = folder + "/a.zip"
            _ = try Self.writeSample(path)
            let archive = try readBytes(path)
            // 2023-11-14T22:13:20Z: date (2023-1980)<<9 | 11<<5 | 14 = 0x576E, time 22<<11 | 13<<5 | 20/2 = 0xB1AA.
            for entry in try ZipDirectory.read(path: path).entries {
                #expect(Array(archive[Int(entry.localHeaderOffset) + 10..<Int(entry.localHeaderOffset) + 14]) == [0xAA, 0xB1, 0x6E, 0x57])
                #expect(Array(archive[Int(entry.centralHeaderOffset) + 12..<Int(entry.centralHeaderOffset) + 16]) == [0xAA, 0xB1, 0x6E, 0x57])
            }
        }
    }

    @Test("MS-DOS date and time from Unix time", arguments: [
        (Int64(315_532_800), UInt32(0x0021_0000)),  // 1980-01-01T00:00:00Z, the format's first instant
        (0, 0x0021_0000),  // 1970: before the format's range, clamped to its floor
        (-86_400, 0x0021_0000),
        (1_700_000_000, 0x576E_B1AA),  // 2023-11-14T22:13:20Z
        (1_709_251_199, 0x585D_BF7D),  // 2024-02-29T23:59:59Z: leap day, odd second rounds down
        (4_354_819_200, 0xFF9F_BF7D),  // 2108-01-01: past the format's range, clamped to its ceiling
    ])
    func dosTime(_ unix: Int64, _ expected: UInt32) {
        #expect(ZipTime.dosDateTime(unixSeconds: unix) == expected)
    }

    @Test("archive code leaves the process's time zone and locale alone")
    func environmentUntouched() throws {
        try withTemporaryFolder { folder throws in
            let zip = folder + "/a.zip", tar = folder + "/a.tar.gz"
            _ = try Self.writeSample(zip)
            for (path, format) in [(tar, ArchiveFormat.tarGzip)] {
                let writer = try ArchiveWriter(creating: path, format: format)
                try writer.add(ArchiveEntryHeader(path: "café/名前.html", size: 1, modificationTime: 1_700_000_000, compress: true), bytes: [1])
                try writer.finish()
            }
            for path in [zip, tar] {
                let reader = try ArchiveReader(path: path)
                while let entry = try reader.nextEntry() { _ = try reader.readAll(maxBytes: 8 << 20); _ = entry }
            }
            // The environment the process was started with, as the kernel recorded it (setenv does not change it).
            let initial = (try? readBytes("/proc/self/environ")).map { bytes in
                bytes.split(separator: 0).compactMap { String(decoding: $0, as: UTF8.self) }.first { $0.hasPrefix("TZ=") }.map { String($0.dropFirst(3)) }
            } ?? nil
            #expect(getenv("TZ").map { String(cString: $0) } == initial)
            // No one in a Swift test process calls setlocale, so the character-type locale is still "C".
            #expect(String(cString: setlocale(LC_CTYPE, nil)) == "C")
        }
    }

    // MARK: Hostile directories

    static func valid() -> [ZipFixture.Entry] {
        [ZipFixture.Entry("satchel.json", Array("{}".utf8)), ZipFixture.Entry("a.txt", Array("hello".utf8)), ZipFixture.Entry("b/c.txt", Array("world!".utf8))]
    }

    @Test("a hand-built zip parses, classic and ZIP64 alike")
    func handBuilt() throws {
        for zip64 in [false, true] {
            var fixture = ZipFixture(Self.valid())
            fixture.zip64End = zip64
            if zip64 { fixture.entries[1].zip64 = true }
            let bytes = fixture.bytes()
            let directory = try ZipDirectory.parse(bytes)
            #expect(directory.entries.map(\.name) == ["satchel.json", "a.txt", "b/c.txt"])
            let a = directory.entries[1]
            #expect(Array(bytes[Int(a.dataOffset)..<Int(a.dataOffset + a.size)]) == Array("hello".utf8))
        }
    }

    /// A hostile variant of a valid zip and the error it must get.
    struct Hostile: CustomTestStringConvertible, Sendable {
        let label: String
        let make: @Sendable () -> [UInt8]
        let expected: @Sendable (ZipFormatError) -> Bool
        var testDescription: String { label }
    }

    static func fixture(_ change: @escaping @Sendable (inout ZipFixture) -> Void) -> @Sendable () -> [UInt8] {
        { var fixture = ZipFixture(valid()); change(&fixture); return fixture.bytes() }
    }

    static let hostile: [Hostile] = [
        Hostile(label: "empty file", make: { [] }, expected: { $0 == .tooShort(size: 0) }),
        Hostile(label: "no end record", make: { Array(repeating: 0, count: 100) }, expected: { $0 == .noEndOfCentralDirectory }),
        Hostile(label: "end record cut short", make: { Array(fixture { _ in }().dropLast(1)) }, expected: { $0 == .noEndOfCentralDirectory }),
        Hostile(label: "bytes after the comment", make: { fixture { _ in }() + [0] }, expected: { $0 == .noEndOfCentralDirectory }),
        Hostile(label: "several disks", make: fixture { $0.diskNumber = 1 }, expected: { $0 == .multiDisk }),
        Hostile(label: "entry count larger than the directory", make: fixture { $0.entryCountOverride = 4 }, expected: {
            if case .truncatedCentralDirectory = $0 { return true } else { return false }
        }),
        Hostile(label: "entry count smaller than the directory", make: fixture { $0.entryCountOverride = 2 }, expected: {
            if case .truncatedCentralDirectory = $0 { return true } else { return false }
        }),
        Hostile(label: "garbage between directory and end record", make: fixture { $0.directoryTrailer = [1, 2, 3] }, expected: {
            if case .truncatedCentralDirectory = $0 { return true } else { return false }
        }),
        Hostile(label: "encrypted entry", make: fixture { $0.entries[1].flags = 1 }, expected: { $0 == .unsupported(entry: "a.txt", feature: "encryption") }),
        Hostile(label: "unknown flag", make: fixture { $0.entries[1].flags = 0x0010 }, expected: { $0 == .unsupported(entry: "a.txt", feature: "flags 0x10") }),
        Hostile(label: "bzip2 method", make: fixture { $0.entries[1].method = 12 }, expected: { $0 == .unsupported(entry: "a.txt", feature: "compression method 12") }),
        Hostile(label: "folder entry", make: fixture { $0.entries[2] = ZipFixture.Entry("b/", []) }, expected: { $0 == .notARegularFile(entry: "b/") }),
        Hostile(label: "symlink by Unix mode", make: fixture { $0.entries[1].externalAttributes = 0o120777 << 16 }, expected: { $0 == .notARegularFile(entry: "a.txt") }),
        Hostile(label: "duplicate name", make: fixture { $0.entries[2].name = Array("a.txt".utf8) }, expected: { $0 == .duplicateName("a.txt") }),
        Hostile(label: "name not UTF-8", make: fixture { $0.entries[1].name = [0x61, 0xFF, 0x62] }, expected: { $0 == .badName(entry: 1, bytes: [0x61, 0xFF, 0x62]) }),
        Hostile(label: "NUL in name", make: fixture { $0.entries[1].name = [0x61, 0, 0x62] }, expected: { $0 == .badName(entry: 1, bytes: [0x61, 0, 0x62]) }),
        Hostile(label: "empty name", make: fixture { $0.entries[1].name = [] }, expected: { $0 == .badName(entry: 1, bytes: []) }),
        Hostile(label: "extra field overruns its area", make: fixture { $0.entries[1].centralExtra = le16(0x5455) + le16(9) + [1, 2] }, expected: {
            if case .badExtraField(entry: "a.txt", _) = $0 { return true } else { return false }
        }),
        Hostile(label: "extra field repeated", make: fixture { $0.entries[1].centralExtra = le16(0x5455) + le16(1) + [1] + le16(0x5455) + le16(1) + [1] }, expected: {
            if case .badExtraField(entry: "a.txt", _) = $0 { return true } else { return false }
        }),
        Hostile(label: "ZIP64 sizes without the ZIP64 field", make: fixture { $0.entries[1].size = 0xFFFF_FFFF }, expected: {
            if case .badExtraField(entry: "a.txt", _) = $0 { return true } else { return false }
        }),
        Hostile(label: "stored entry whose sizes differ", make: fixture { $0.entries[1].size = 4 }, expected: { $0 == .inconsistent(entry: "a.txt", field: "stored size") }),
        Hostile(label: "local header names another file", make: fixture { $0.entries[1].localName = Array("x.txt".utf8) }, expected: { $0 == .inconsistent(entry: "a.txt", field: "name") }),
        Hostile(label: "local header has another method", make: fixture { $0.entries[1].localMethod = 8 }, expected: { $0 == .inconsistent(entry: "a.txt", field: "compression method") }),
        Hostile(label: "local header has other flags", make: fixture { $0.entries[1].localFlags = 8 }, expected: { $0 == .inconsistent(entry: "a.txt", field: "flags") }),
        Hostile(label: "local header offset past the data", make: fixture { $0.entries[1].offsetOverride = 100_000 }, expected: { $0 == .outOfBounds(entry: "a.txt") }),
        Hostile(label: "local header offset not at a header", make: fixture { $0.entries[1].offsetOverride = 5 }, expected: {
            if case .badSignature = $0 { return true } else { return false }
        }),
        Hostile(label: "two entries sharing one local header (overlap bomb)", make: fixture { $0.entries[2].offsetOverride = 0; $0.entries[2].name = Array("satchel.json".utf8) + [0x32] }, expected: {
            if case .inconsistent(entry: "satchel.json2", field: "name") = $0 { return true } else { return false }
        }),
        Hostile(label: "ZIP64 end record that disagrees with the classic one", make: {
            var bytes = fixture { $0.zip64End = true }()
            // The classic count says 0xFFFF; make it a concrete, wrong number.
            for offset in [14, 12] { bytes[bytes.count - offset] = 7; bytes[bytes.count - offset + 1] = 0 }
            return bytes
        }, expected: {
            if case .badZip64 = $0 { return true } else { return false }
        }),
    ]

    @Test("hostile directories are refused, naming what is wrong", arguments: hostile)
    func refuses(_ hostile: Hostile) {
        do {
            let directory = try ZipDirectory.parse(hostile.make())
            Issue.record("accepted: \(directory.entries.map(\.name))")
        } catch {
            #expect(hostile.expected(error), "got \(error)")
        }
    }

    @Test("entries whose data overlap are refused")
    func overlap() throws {
        // Two directory records point at two local headers whose declared data spans the next header.
        var fixture = ZipFixture(Self.valid())
        fixture.entries[1].data = Array("hello".utf8)
        var bytes = fixture.bytes()
        let directory = try ZipDirectory.parse(bytes)
        let b = directory.entries[2]
        // Grow a.txt's stored size in the directory (and its local header's sizes are ignored) to reach into b's header.
        let aCentral = Int(directory.entries[1].centralHeaderOffset)
        let grown = UInt32(b.localHeaderOffset - directory.entries[1].dataOffset + 1)
        for (offset, byte) in (le32(grown) + le32(grown)).enumerated() { bytes[aCentral + 20 + offset] = byte }
        #expect(throws: ZipFormatError.overlapping(entry: "a.txt", other: "b/c.txt")) { try ZipDirectory.parse(bytes) }
    }

    @Test("limits: entries, entry size, total size")
    func limits() throws {
        let bytes = ZipFixture(Self.valid()).bytes()
        #expect(throws: ZipFormatError.tooManyEntries(limit: 2)) { try ZipDirectory.parse(bytes, limits: ArchiveLimits(maxEntries: 2)) }
        #expect(throws: ZipFormatError.entryTooLarge(entry: "a.txt", limit: 4)) { try ZipDirectory.parse(bytes, limits: ArchiveLimits(maxEntryBytes: 4)) }
        #expect(throws: ZipFormatError.archiveTooLarge(limit: 8)) { try ZipDirectory.parse(bytes, limits: ArchiveLimits(maxTotalBytes: 8)) }
    }

    @Test("every truncation of a valid zip is refused, never a crash")
    func truncations() throws {
        let bytes = ZipFixture(Self.valid()).bytes()
        for length in 0..<bytes.count {
            #expect(throws: ZipFormatError.self) { try ZipDirectory.parse(Array(bytes.prefix(length))) }
        }
    }

    @Test("every single-byte change of a valid zip's directory either parses consistently or is refused")
    func bitFlips() throws {
        let bytes = ZipFixture(Self.valid()).bytes()
        let directoryStart = Int(try ZipDirectory.parse(bytes).centralDirectoryOffset)
        for index in directoryStart..<bytes.count {
            for flip: UInt8 in [0x01, 0x80, 0xFF] {
                var copy = bytes
                copy[index] ^= flip
                guard let directory = try? ZipDirectory.parse(copy) else { continue }
                // Whatever is accepted must still describe data inside the archive, without overlaps.
                for entry in directory.entries {
                    #expect(entry.dataOffset + entry.compressedSize <= directory.centralDirectoryOffset)
                }
            }
        }
    }

    // MARK: Damaged data

    @Test("damaged deflate data, wrong sizes and a wrong CRC are caught while reading")
    func damagedData() throws {
        try withTemporaryFolder { folder throws in
            let path = folder + "/a.zip"
            _ = try Self.writeSample(path)
            let original = try readBytes(path)
            let entry = try #require(try ZipDirectory.read(path: path).entries.first { $0.name == "big.css" })
            func expectCorrupt(_ label: String, _ change: (inout [UInt8]) -> Void, entry changed: ZipEntry? = nil) throws {
                var bytes = original
                change(&bytes)
                let damaged = folder + "/\(UUID().uuidString).zip"
                try Data(bytes).write(to: URL(fileURLWithPath: damaged))
                let reader = try ZipEntryReader(path: damaged, entry: changed ?? entry)
                #expect(throws: ArchiveError.self, "\(label)") {
                    while !reader.isAtEnd { _ = try reader.read(upTo: 64 << 10) }
                    _ = try reader.read(upTo: 1)
                }
            }
            try expectCorrupt("flipped compressed byte", { $0[Int(entry.dataOffset + entry.compressedSize / 2)] ^= 0x55 })
            try expectCorrupt("declared size too small", { _ in }, entry: ZipEntry(
                name: entry.name, method: entry.method, crc32: entry.crc32, compressedSize: entry.compressedSize, size: entry.size - 10,
                localHeaderOffset: entry.localHeaderOffset, dataOffset: entry.dataOffset, centralHeaderOffset: entry.centralHeaderOffset))
            try expectCorrupt("declared size too large", { _ in }, entry: ZipEntry(
                name: entry.name, method: entry.method, crc32: entry.crc32, compressedSize: entry.compressedSize, size: entry.size + 10,
                localHeaderOffset: entry.localHeaderOffset, dataOffset: entry.dataOffset, centralHeaderOffset: entry.centralHeaderOffset))
            try expectCorrupt("wrong CRC", { _ in }, entry: ZipEntry(
                name: entry.name, method: entry.method, crc32: entry.crc32 ^ 1, compressedSize: entry.compressedSize, size: entry.size,
                localHeaderOffset: entry.localHeaderOffset, dataOffset: entry.dataOffset, centralHeaderOffset: entry.centralHeaderOffset))
            try expectCorrupt("compressed size cut short", { _ in }, entry: ZipEntry(
                name: entry.name, method: entry.method, crc32: entry.crc32, compressedSize: entry.compressedSize - 100, size: entry.size,
                localHeaderOffset: entry.localHeaderOffset, dataOffset: entry.dataOffset, centralHeaderOffset: entry.centralHeaderOffset))
        }
    }
}
