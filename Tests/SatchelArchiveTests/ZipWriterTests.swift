@testable import SatchelArchive
import Foundation
import SatchelTestSupport
import Testing

@Suite("The device's own zip: ZipWriter writes it, ZipReader streams it back, Info-ZIP agrees")
struct ZipWriterTests {
    /// Names and bytes of every shape a device writes: empty, UTF-8 names, one entry larger than the writer's buffer.
    static let files: [(String, [UInt8])] = [
        ("satchel.json", Array(#"{"schema":1}"#.utf8)),
        ("empty.txt", []),
        ("café/名前.html", Array("<h1>名前</h1>".utf8)),
        ("big.bin", (0..<700_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }),
        ("a/b/c.js", Array(String(repeating: "let x = 1;\n", count: 300).utf8)),
    ]

    static func write(_ path: String, _ files: [(String, [UInt8])]) throws {
        let writer = try ZipWriter(creating: path)
        for (name, bytes) in files {
            if bytes.count > 100_000 {
                // Streamed in pieces, as a device copies a file.
                try writer.beginEntry(name, size: Int64(bytes.count))
                for start in stride(from: 0, to: bytes.count, by: 65_536) {
                    try bytes[start..<min(start + 65_536, bytes.count)].withUnsafeBytes { try writer.writeEntryData($0) }
                }
            } else {
                try writer.add(name, bytes: bytes)
            }
        }
        try writer.finish()
    }

    @Test("what ZipWriter writes, the strict directory parser and ZipReader read back byte for byte, in order")
    func roundTrip() async throws {
        try await withTemporaryFolder { folder async throws in
            let path = folder + "/out.zip"
            try Self.write(path, Self.files)
            let directory = try ZipDirectory.read(path: path)
            #expect(directory.entries.map(\.name) == Self.files.map(\.0))
            #expect(directory.entries.allSatisfy { $0.method == .stored })
            let reader = try ZipReader(path: path)
            var read: [(String, [UInt8])] = []
            while let entry = try reader.nextEntry() {
                #expect(entry.kind == .regular)
                var bytes: [UInt8] = []
                try reader.readData { bytes.append(contentsOf: $0) }
                read.append((entry.path, bytes))
            }
            #expect(read.map(\.0) == Self.files.map(\.0))
            #expect(zip(read, Self.files).allSatisfy { $0.1 == $1.1 })
            // Deterministic: the same entries give the same bytes.
            try Self.write(folder + "/again.zip", Self.files)
            #expect(try readBytes(path) == readBytes(folder + "/again.zip"))
        }
    }

    @Test("Info-ZIP tests the archive clean: CRCs, sizes and headers as another reader sees them")
    func infoZipAgrees() async throws {
        try await withTemporaryFolder { folder async throws in
            let path = folder + "/out.zip"
            try Self.write(path, Self.files)
            let tested = try await runProcess("/usr/bin/unzip", ["-t", path])
            #expect(tested.status == 0, "\(tested.stdout)\(tested.stderr)")
            #expect(tested.stdout.contains("No errors detected"))
            try FileManager.default.createDirectory(atPath: folder + "/x", withIntermediateDirectories: true)
            _ = try await run("/usr/bin/unzip", ["-q", path, "-d", folder + "/x"])
            #expect(try readBytes(folder + "/x/big.bin") == Self.files[3].1)
        }
    }

    @Test("70,000 entries need ZIP64's end records: written, parsed and listed by Info-ZIP")
    func zip64EntryCount() async throws {
        try await withTemporaryFolder { folder async throws in
            let path = folder + "/many.zip"
            let writer = try ZipWriter(creating: path)
            for index in 0..<70_000 { try writer.add("f/\(index)", bytes: [UInt8(truncatingIfNeeded: index)]) }
            try writer.finish()
            let directory = try ZipDirectory.read(path: path)
            #expect(directory.entries.count == 70_000)
            #expect(directory.entries.last?.name == "f/69999")
            let listed = try await runProcess("/usr/bin/unzip", ["-l", path])
            #expect(listed.status == 0, "\(listed.stderr)")
            #expect(listed.stdout.contains("70000 files"))
        }
    }

    @Test("an entry given more or fewer bytes than it declared is refused, naming it")
    func declaredSizes() async throws {
        try await withTemporaryFolder { folder async throws in
            let over = try ZipWriter(creating: folder + "/over.zip")
            try over.beginEntry("a.txt", size: 2)
            #expect(throws: ArchiveError.writeFailed(entry: "a.txt", reason: "more data than the 2 bytes declared")) {
                try [UInt8](repeating: 1, count: 3).withUnsafeBytes { try over.writeEntryData($0) }
            }
            let under = try ZipWriter(creating: folder + "/under.zip")
            try under.beginEntry("b.txt", size: 5)
            try [UInt8](repeating: 1, count: 4).withUnsafeBytes { try under.writeEntryData($0) }
            #expect(throws: ArchiveError.writeFailed(entry: "b.txt", reason: "4 bytes written of 5 declared")) { try under.finish() }
            #expect(throws: ArchiveError.self) { try ZipWriter(creating: folder + "/over.zip") }
        }
    }
}
