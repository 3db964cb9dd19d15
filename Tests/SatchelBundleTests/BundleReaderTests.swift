import Foundation
import SatchelTestSupport
import Testing
@testable import SatchelArchive
import SatchelBundle
import SatchelCore
@testable import SatchelPublishing

@Suite("Verifying bundles: tampering, hostile entries, signatures")
struct BundleReaderTests {
    /// Packs the sample app and returns its bundle path and entries.
    func packed(_ folder: String, key: SigningKey? = nil, format: ArchiveFormat = .zip) throws -> (String, [(name: String, bytes: [UInt8])]) {
        try makeTree(folder + "/src", sampleApp)
        let result = try Packer.pack(source: folder + "/src", options: options(format: format, key: key), outputFolder: folder + "/out")
        return (result.bundle, try entries(of: result.bundle))
    }

    func verify(_ path: String, keys: [VerifyingKey] = []) throws {
        let reader = try BundleReader.anyFormat(path: path, trustedKeys: keys)
        var sink = DiscardingSink()
        try reader.readFiles(into: &sink)
    }

    @Test("a packed bundle verifies, signed or not, in both formats", arguments: ArchiveFormat.allCases)
    func valid(_ format: ArchiveFormat) throws {
        try withTemporaryFolder { folder throws in
            let key = SigningKey.generate()
            let (path, _) = try packed(folder, key: key, format: format)
            try verify(path)
            try verify(path, keys: [key.verifyingKey])
            // Key rotation: any one trusted key is enough.
            try verify(path, keys: [SigningKey.generate().verifyingKey, key.verifyingKey])
        }
    }

    @Test("one flipped byte in a stored file's data names that file")
    func flippedByte() throws {
        try withTemporaryFolder { folder throws in
            let (path, _) = try packed(folder)
            var bytes = try readBytes(path)
            let payload = Array(sampleApp["img/photo.png"]!.utf8)
            let offset = bytes.firstRange(of: payload)!.lowerBound + 5
            bytes[offset] ^= 0x01
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let error = #expect(throws: BundleError.self) { try verify(path) }
            #expect(error?.subject == "img/photo.png")
        }
    }

    @Test("a file whose bytes differ from the manifest (same size, valid archive) names that file")
    func hashMismatch() throws {
        try withTemporaryFolder { folder throws in
            var (path, list) = try packed(folder)
            let index = list.firstIndex { $0.name == "js/cart.mjs" }!
            list[index].bytes[0] ^= 0x20
            try FileManager.default.removeItem(atPath: path)
            try writeArchive(path, list)
            let error = #expect(throws: BundleError.self) { try verify(path) }
            guard case .hashMismatch(let file, _, _) = error else { Issue.record("\(String(describing: error))"); return }
            #expect(file == "js/cart.mjs")
        }
    }

    @Test("a file of the wrong size names that file")
    func sizeMismatch() throws {
        try withTemporaryFolder { folder throws in
            var (path, list) = try packed(folder)
            let index = list.firstIndex { $0.name == "css/app.css" }!
            list[index].bytes.append(0x20)
            try FileManager.default.removeItem(atPath: path)
            try writeArchive(path, list)
            #expect(throws: BundleError.sizeMismatch(path: "css/app.css", expected: Int64(sampleApp["css/app.css"]!.utf8.count), actual: Int64(sampleApp["css/app.css"]!.utf8.count + 1))) {
                try verify(path)
            }
        }
    }

    @Test("the archive must hold exactly the manifest's files, in manifest order")
    func exactFiles() throws {
        try withTemporaryFolder { folder throws in
            let (path, list) = try packed(folder)
            func rewrite(_ change: (inout [(name: String, bytes: [UInt8])]) -> Void) throws -> String {
                var copy = list
                change(&copy)
                let out = folder + "/t-\(UUID().uuidString).zip"
                try writeArchive(out, copy)
                return out
            }
            #expect(throws: BundleError.unexpectedEntry("extra.js")) { try verify(try rewrite { $0.append(("extra.js", [1])) }) }
            #expect(throws: BundleError.missingFile("offline.html")) { try verify(try rewrite { $0.removeAll { $0.name == "offline.html" } }) }
            let last = list.last!.name
            #expect(throws: BundleError.missingFile(last)) { try verify(try rewrite { $0.removeLast() }) }
            // A zip's directory refuses a name held twice before any entry is read.
            #expect(throws: BundleError.directory(.duplicateName(list[2].name))) {
                try verify(try rewrite { $0.insert($0[2], at: 3) })
            }
            // Two listed files swapped: the later name comes first, so the one expected there is missing.
            #expect(throws: BundleError.missingFile(list[3].name)) { try verify(try rewrite { $0.swapAt(3, 4) }) }
            #expect(throws: BundleError.manifestNotFirst(found: list[2].name)) { try verify(try rewrite { $0.swapAt(0, 2) }) }
            #expect(throws: BundleError.unsafeEntryName(SafePathError(path: "../evil.js", reason: .dotSegment))) {
                try verify(try rewrite { $0.insert(("../evil.js", [1]), at: 3) })
            }
            _ = path
        }
    }

    @Test("links and special entries in place of files are refused by name", arguments: [
        ArchiveEntryKind.symlink(target: "/etc/passwd"), .hardlink(target: "index.html"), .directory, .fifo, .device,
    ])
    func specialEntries(_ kind: ArchiveEntryKind) throws {
        try withTemporaryFolder { folder throws in
            let (_, list) = try packed(folder, format: .tarGzip)
            let out = folder + "/hostile.tar.gz"
            let writer = try ArchiveWriter(creating: out, format: .tarGzip)
            for entry in list {
                if entry.name == "css/app.css" {
                    try writer.add(special: entry.name, kind: kind)
                } else {
                    try writer.add(ArchiveEntryHeader(path: entry.name, size: Int64(entry.bytes.count), modificationTime: 315_532_800, compress: true), bytes: entry.bytes)
                }
            }
            try writer.finish()
            let error = #expect(throws: BundleError.self) { try verify(out) }
            #expect(error?.subject == "css/app.css", "\(String(describing: error))")
            if case .notARegularFile = error {} else { Issue.record("expected notARegularFile, got \(String(describing: error))") }
        }
    }

    @Test("signatures: unsigned with a trusted key, wrong key, malformed, and a manifest changed after signing")
    func signatures() throws {
        try withTemporaryFolder { folder throws in
            let key = SigningKey.generate()
            let (signed, list) = try packed(folder, key: key)
            #expect(throws: BundleError.signatureMismatch) { try verify(signed, keys: [SigningKey.generate().verifyingKey]) }

            let unsigned = folder + "/unsigned.zip"
            try writeArchive(unsigned, list.filter { $0.name != "satchel.sig" })
            #expect(throws: BundleError.unsigned) { try verify(unsigned, keys: [key.verifyingKey]) }
            try verify(unsigned)

            let malformed = folder + "/malformed.zip"
            try writeArchive(malformed, list.map { $0.name == "satchel.sig" ? ($0.name, Array("not a signature".utf8)) : $0 })
            #expect(throws: BundleError.signatureMalformed) { try verify(malformed, keys: [key.verifyingKey]) }

            // Re-pack with another createdAt: a valid manifest, but not the one that was signed.
            let other = try Packer.pack(source: folder + "/src", options: options(epoch: 42), outputFolder: folder + "/other")
            var swapped = try entries(of: other.bundle)
            swapped.insert(list[1], at: 1)
            let resigned = folder + "/swapped.zip"
            try writeArchive(resigned, swapped)
            #expect(throws: BundleError.signatureMismatch) { try verify(resigned, keys: [key.verifyingKey]) }
        }
    }

    @Test("a manifest that is invalid or not canonical is refused before any file is read")
    func badManifest() throws {
        try withTemporaryFolder { folder throws in
            let (_, list) = try packed(folder)
            let pretty = String(decoding: list[0].bytes, as: UTF8.self).replacingOccurrences(of: ",\"", with: ", \"")
            let out = folder + "/pretty.zip"
            try writeArchive(out, [("satchel.json", Array(pretty.utf8))] + list.dropFirst())
            #expect(throws: BundleError.manifest(.notCanonical)) { try BundleReader.anyFormat(path: out) }
        }
    }
}
