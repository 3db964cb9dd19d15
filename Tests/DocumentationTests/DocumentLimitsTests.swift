import Foundation
import SatchelCore
import Testing

/// The size limits of docs/formats.md's table (under "Conventions") against ``DocumentLimits``, row by row, and the
/// readers' own constants against ``DocumentLimits``: a limit changed in one place and not the other fails here.
@Suite("docs/formats.md's size limits are DocumentLimits")
struct DocumentLimitsTests {
    /// Each document the table names, as it names it, and the constant that must equal its limit.
    static let expected: [String: Int] = [
        "`satchel.json`": DocumentLimits.manifest,
        "`satchel.sig`, `catalog.json.sig`": DocumentLimits.legacySignature,
        "`satchel-delta.json`": DocumentLimits.deltaManifest,
        "`builtins/<id>.json`, `builtins/<id>.content.json`": DocumentLimits.builtInRecord,
        "`catalog.json`": DocumentLimits.catalog,
        "`state.json`, `store.json`": DocumentLimits.storeState,
        "pin file": DocumentLimits.pinFile,
        "`diffs-<hash>.json.gz` (the diff index, uncompressed)": DocumentLimits.diffIndex,
        "`trust/<n>.json`, `catalog.json.sigs`, `<bundle>.sigs`": DocumentLimits.trustDocument,
        "a step's header (uncompressed)": DocumentLimits.stepHeader,
    ]

    /// `16 MiB`, `64 KiB`, `1,024 bytes` as a byte count.
    static func bytes(_ text: String) -> Int? {
        let parts = text.split(separator: " ")
        guard parts.count == 2, let number = Int(parts[0].replacingOccurrences(of: ",", with: "")) else { return nil }
        switch parts[1] {
        case "bytes": return number
        case "KiB": return number << 10
        case "MiB": return number << 20
        case "GiB": return number << 30
        default: return nil
        }
    }

    /// The (document, limit) pairs of the table: each row holds two.
    static func table() throws -> [(document: String, limit: String)] {
        let text = try Repository.text("docs/formats.md")
        let start = try #require(text.range(of: "| document | limit | document | limit |"))
        var pairs: [(String, String)] = []
        for line in text[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false).dropFirst(2) {
            guard line.hasPrefix("|") else { break }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast().map { $0.trimmingCharacters(in: .whitespaces) }
            for index in stride(from: 0, to: cells.count - 1, by: 2) where !cells[index].isEmpty {
                pairs.append((cells[index], cells[index + 1]))
            }
        }
        return pairs
    }

    @Test("every row of the table names a document DocumentLimits holds, with the same limit; every limit has its row")
    func tableMatches() throws {
        let rows = try Self.table()
        #expect(rows.count == Self.expected.count, "\(rows.map(\.document))")
        for (document, limit) in rows {
            let constant = try #require(Self.expected[document], "formats.md lists \(document), which DocumentLimitsTests does not know")
            #expect(Self.bytes(limit) == constant, "\(document): formats.md says \(limit), DocumentLimits says \(constant) bytes")
        }
        #expect(DocumentLimits.signatureFile == DocumentLimits.trustDocument, "formats.md gives .sigs files and trust documents one row")
    }

    @Test("the readers' limits are DocumentLimits'")
    func readersUseThem() {
        #expect(Manifest.maxBytes == DocumentLimits.manifest)
        #expect(DeltaManifest.maxBytes == DocumentLimits.deltaManifest)
        #expect(Catalog.maxBytes == DocumentLimits.catalog)
        #expect(FileDiffIndex.maxBytes == DocumentLimits.diffIndex)
        #expect(UpdateStep.maxHeaderBytes == DocumentLimits.stepHeader)
        #expect(TrustDocument.maxBytes == DocumentLimits.trustDocument)
        #expect(SignatureFile.maxBytes == DocumentLimits.signatureFile)
    }

    @Test("a legacy signature file above its limit is no signature")
    func legacyLimit() throws {
        let signature = try SigningKey.generate().signature(for: [1, 2, 3])
        let text = Array(signature.base64.utf8)
        #expect(SignatureFile.legacySignature(text) == signature)
        let padded = text + [UInt8](repeating: 0x20, count: DocumentLimits.legacySignature - text.count)
        #expect(SignatureFile.legacySignature(padded) == signature)
        #expect(SignatureFile.legacySignature(padded + [0x20]) == nil)
    }
}
