import Foundation
import SatchelTestSupport
import Testing
@testable import SatchelArchive
@testable import SatchelPublishing

@Suite("Reading hostile and damaged archives")
struct HostileArchiveTests {
    @Test("links, folders, devices and FIFOs are reported as what they are", arguments: ArchiveFormat.allCases)
    func entryKinds(_ format: ArchiveFormat) throws {
        try withTemporaryFolder { folder throws in
            let path = folder + "/h." + format.fileExtension
            let writer = try ArchiveWriter(creating: path, format: format)
            try writer.add(ArchiveEntryHeader(path: "target.txt", size: 1, modificationTime: 0, compress: false), bytes: [1])
            try writer.add(special: "link", kind: .symlink(target: "/etc/passwd"))
            try writer.add(special: "hard", kind: .hardlink(target: "target.txt"))
            try writer.add(special: "dir/", kind: .directory)
            if format == .tarGzip {
                try writer.add(special: "dev", kind: .device)
                try writer.add(special: "fifo", kind: .fifo)
            }
            try writer.finish()
            let reader = try ArchiveReader(path: path)
            var kinds: [String: ArchiveEntryKind] = [:]
            while let entry = try reader.nextEntry() { kinds[entry.path] = entry.kind }
            #expect(kinds["target.txt"] == .regular)
            #expect(kinds["link"] == .symlink(target: "/etc/passwd"))
            if format == .tarGzip {
                // zip has no hard links; only tar can carry one.
                #expect(kinds["hard"] == .hardlink(target: "target.txt"))
            }
            #expect(kinds["dir/"] == .directory || kinds["dir"] == .directory)
            if format == .tarGzip {
                #expect(kinds["dev"] == .device)
                #expect(kinds["fifo"] == .fifo)
            }
        }
    }

    @Test("names are returned as stored, traversal included, for the caller to refuse", arguments: ArchiveFormat.allCases)
    func rawNames(_ format: ArchiveFormat) throws {
        try withTemporaryFolder { folder throws in
            let path = folder + "/t." + format.fileExtension
            let writer = try ArchiveWriter(creating: path, format: format)
            for name in ["../evil", "/abs", "a\\b"] {
                try writer.add(ArchiveEntryHeader(path: name, size: 0, modificationTime: 0, compress: false), bytes: [])
            }
            try writer.finish()
            let reader = try ArchiveReader(path: path)
            var names: [String] = []
            while let entry = try reader.nextEntry() { names.append(entry.path) }
            // libarchive's zip reader turns DOS backslashes into slashes; tar keeps the byte.
            #expect(names == ["../evil", "/abs", format == .zip ? "a/b" : "a\\b"])
        }
    }

    @Test("more entries than the cap are refused")
    func entryCap() throws {
        try withTemporaryFolder { folder throws in
            let writer = try ArchiveWriter(creating: folder + "/many.zip", format: .zip)
            for index in 0..<20 {
                try writer.add(ArchiveEntryHeader(path: "f\(index)", size: 0, modificationTime: 0, compress: false), bytes: [])
            }
            try writer.finish()
            let reader = try ArchiveReader(path: folder + "/many.zip", limits: ArchiveLimits(maxEntries: 10))
            #expect(throws: ArchiveError.tooManyEntries(limit: 10)) {
                while try reader.nextEntry() != nil {}
            }
        }
    }

    @Test("an entry or archive larger than its cap is refused", arguments: ArchiveFormat.allCases)
    func sizeCaps(_ format: ArchiveFormat) throws {
        try withTemporaryFolder { folder throws in
            let path = folder + "/big." + format.fileExtension
            let writer = try ArchiveWriter(creating: path, format: format)
            try writer.add(ArchiveEntryHeader(path: "a", size: 4096, modificationTime: 0, compress: true), bytes: Array(repeating: 1, count: 4096))
            try writer.add(ArchiveEntryHeader(path: "b", size: 4096, modificationTime: 0, compress: true), bytes: Array(repeating: 2, count: 4096))
            try writer.finish()
            let small = try ArchiveReader(path: path, limits: ArchiveLimits(maxEntryBytes: 1000))
            #expect(throws: ArchiveError.entryTooLarge(entry: "a", limit: 1000)) { _ = try small.nextEntry() }
            let total = try ArchiveReader(path: path, limits: ArchiveLimits(maxTotalBytes: 6000))
            #expect(throws: ArchiveError.archiveTooLarge(limit: 6000)) {
                while try total.nextEntry() != nil { try total.readData { _ in } }
            }
        }
    }

    @Test("a decompression bomb is stopped by the ratio cap", arguments: ArchiveFormat.allCases)
    func bomb(_ format: ArchiveFormat) throws {
        try withTemporaryFolder { folder throws in
            let path = folder + "/bomb." + format.fileExtension
            let zeros = Array(repeating: UInt8(0), count: 48 << 20)
            let writer = try ArchiveWriter(creating: path, format: format, compressionLevel: 1)
            try writer.add(ArchiveEntryHeader(path: "zeros", size: Int64(zeros.count), modificationTime: 0, compress: true), bytes: zeros)
            try writer.finish()
            let reader = try ArchiveReader(path: path, limits: ArchiveLimits(maxCompressionRatio: 100, ratioGraceBytes: 1 << 20))
            #expect(throws: ArchiveError.compressionRatioExceeded(entry: "zeros", limit: 100)) {
                _ = try reader.nextEntry()
                try reader.readData { _ in }
            }
        }
    }

    @Test("flipped data bytes are caught by the archive's own checks, naming the entry")
    func corruptData() throws {
        try withTemporaryFolder { folder throws in
            let path = folder + "/c.zip"
            let writer = try ArchiveWriter(creating: path, format: .zip)
            let payload = Array("0123456789abcdef".utf8)
            try writer.add(ArchiveEntryHeader(path: "data.bin", size: Int64(payload.count), modificationTime: 0, compress: false), bytes: payload)
            try writer.finish()
            var bytes = try readBytes(path)
            let offset = bytes.firstRange(of: payload)!.lowerBound + 3
            bytes[offset] ^= 0xFF
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let reader = try ArchiveReader(path: path)
            #expect(try reader.nextEntry()?.path == "data.bin")
            let error = #expect(throws: ArchiveError.self) { try reader.readData { _ in } }
            guard case .corrupt(let entry, _) = error else { Issue.record("expected corrupt, got \(String(describing: error))"); return }
            #expect(entry == "data.bin")
        }
    }

    @Test("a truncated archive is refused", arguments: ArchiveFormat.allCases)
    func truncated(_ format: ArchiveFormat) throws {
        try withTemporaryFolder { folder throws in
            let path = folder + "/t." + format.fileExtension
            let writer = try ArchiveWriter(creating: path, format: format)
            let payload = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7919 >> 3) }
            try writer.add(ArchiveEntryHeader(path: "a", size: Int64(payload.count), modificationTime: 0, compress: true), bytes: payload)
            try writer.finish()
            let bytes = try readBytes(path)
            try Data(bytes.prefix(bytes.count / 2)).write(to: URL(fileURLWithPath: path))
            #expect(throws: ArchiveError.self) {
                let reader = try ArchiveReader(path: path)
                while try reader.nextEntry() != nil { try reader.readData { _ in } }
            }
        }
    }

    @Test("a file that is no archive is refused when opened or read")
    func notAnArchive() throws {
        try withTemporaryFolder { folder throws in
            let path = folder + "/x.zip"
            try Data("just some text, not a zip".utf8).write(to: URL(fileURLWithPath: path))
            #expect(throws: ArchiveError.self) {
                let reader = try ArchiveReader(path: path)
                _ = try reader.nextEntry()
            }
        }
    }
}
