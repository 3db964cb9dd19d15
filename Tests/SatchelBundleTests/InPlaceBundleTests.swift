import Foundation
import SatchelTestSupport
import Testing
@testable import SatchelArchive
import SatchelBundle
import SatchelCore
import SatchelPublishing

@Suite("Reading bundles in place (built-ins)")
struct InPlaceBundleTests {
    func packed(_ folder: String, key: SigningKey? = nil, format: ArchiveFormat = .zip) throws -> (String, [(name: String, bytes: [UInt8])]) {
        try makeTree(folder + "/src", sampleApp)
        let result = try Packer.pack(source: folder + "/src", options: options(format: format, key: key), outputFolder: folder + "/out")
        return (result.bundle, try entries(of: result.bundle))
    }

    @Test("a packed zip opens in place: every file located, stored ones as regions of the archive, all verified")
    func valid() throws {
        try withTemporaryFolder { folder throws in
            let key = SigningKey.generate()
            let (path, list) = try packed(folder, key: key)
            let bundle = try InPlaceBundle(path: path, trustedKeys: [key.verifyingKey])
            #expect(bundle.signatureVerified)
            try bundle.verifyFiles()
            let archive = try readBytes(path)
            for file in bundle.manifest.files {
                let expected = try #require(list.first { $0.name == file.path.value }?.bytes)
                switch bundle.location(of: file) {
                case .region(let archivePath, let offset):
                    #expect(archivePath == path)
                    #expect(Array(archive[Int(offset)..<Int(offset) + expected.count]) == expected, "\(file.path)")
                case .encoded(let encoded):
                    #expect(try encoded.decodeAll() == expected, "\(file.path)")
                case nil: Issue.record("no location for \(file.path)")
                }
            }
            // The photo is stored (already compressed type), the CSS deflated.
            guard case .region = bundle.location(of: bundle.manifest.file(at: try SafePath(validating: "img/photo.png"))!) else { Issue.record("stored"); return }
            guard case .encoded = bundle.location(of: bundle.manifest.file(at: try SafePath(validating: "css/app.css"))!) else { Issue.record("deflated"); return }
        }
    }

    @Test("layouts a bundle never has are refused, naming the entry", arguments: [
        "reordered", "unlisted", "missing", "manifest second", "delta", "size",
    ])
    func layouts(_ variant: String) throws {
        try withTemporaryFolder { folder throws in
            let (path, list) = try packed(folder)
            var entries = list
            let expected: BundleError
            switch variant {
            case "reordered":
                // A later file where an earlier one belongs: the earlier one is missing at that point (as BundleReader says).
                entries.swapAt(2, 3)
                expected = .missingFile(entries[3].name)
            case "unlisted":
                entries.append(("zz-unlisted.js", [1]))
                expected = .unexpectedEntry("zz-unlisted.js")
            case "missing":
                let removed = entries.remove(at: 3)
                expected = .missingFile(removed.name)
            case "manifest second":
                entries.swapAt(0, 1)
                expected = .manifestNotFirst(found: entries[0].name)
            case "delta":
                entries.insert((DeltaManifest.fileName, Array(#"{"deleted":[],"from":"0.9.0","fromContentHash":"\#(String(repeating: "0", count: 64))"}"#.utf8)), at: 1)
                expected = .cannotServeInPlace(reason: "it is a delta, which holds only the files that changed")
            default:
                entries[3].bytes.append(0)
                expected = .sizeMismatch(path: entries[3].name, expected: Int64(list[3].bytes.count), actual: Int64(list[3].bytes.count + 1))
            }
            try FileManager.default.removeItem(atPath: path)
            try writeArchive(path, entries)
            #expect(throws: expected) { try InPlaceBundle(path: path) }
        }
    }

    @Test("bytes that differ from the manifest with a consistent zip (right CRC, same size) fail verification by name")
    func hashMismatch() throws {
        try withTemporaryFolder { folder throws in
            var (path, list) = try packed(folder)
            let index = list.firstIndex { $0.name == "js/cart.mjs" }!
            list[index].bytes[0] ^= 0x20
            try FileManager.default.removeItem(atPath: path)
            try writeArchive(path, list)
            let bundle = try InPlaceBundle(path: path)
            let error = #expect(throws: BundleError.self) { try bundle.verifyFiles() }
            guard case .hashMismatch(let file, _, _) = error else { Issue.record("\(String(describing: error))"); return }
            #expect(file == "js/cart.mjs")
        }
    }

    @Test("tar.gz, unsigned (when keys are trusted) and foreign-signed bundles are refused")
    func refusals() throws {
        try withTemporaryFolder { folder throws in
            let (tar, _) = try packed(folder + "/t", format: .tarGzip)
            #expect(throws: BundleError.cannotServeInPlace(reason: "it is a tar.gz; only a zip can be served without extracting it")) { try InPlaceBundle(path: tar) }
            let (unsigned, _) = try packed(folder + "/u")
            #expect(throws: BundleError.unsigned) { try InPlaceBundle(path: unsigned, trustedKeys: [SigningKey.generate().verifyingKey]) }
            let (foreign, _) = try packed(folder + "/f", key: SigningKey.generate())
            #expect(throws: BundleError.signatureMismatch) { try InPlaceBundle(path: foreign, trustedKeys: [SigningKey.generate().verifyingKey]) }
        }
    }
}
