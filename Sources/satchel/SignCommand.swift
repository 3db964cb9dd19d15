import ArgumentParser
import Foundation
import SatchelBundle
import SatchelCore
import SatchelOptions
import SatchelPublishing

extension Satchel {
    struct Sign: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a signature offline: to a trust document, to catalog.json.sigs, or to <bundle>.sigs.",
            discussion: """
                A trust document (<n>.json) gets the signature in its own signatures; the key must be a root key of that \
                version or of the one before it (<n-1>.json beside it). A catalog gets it in <catalog>.sigs, over the \
                catalog's bytes; a bundle (.zip, .tar.gz) in <bundle>.sigs, over its satchel.json, which satchel catalog \
                copies into the bundle's entry. Signing again with a key already there changes nothing; a .sigs file \
                made for other bytes (an earlier catalog) is started afresh. satchel.sig and catalog.json.sig are left as \
                they are: older runtimes read exactly one signature there.
                """)

        @Argument(help: "A bundle, a catalog.json or a trust document.", completion: .file())
        var file: String
        @Option(name: .customLong("sign-key"), help: ArgumentHelp("The private key to sign with; repeatable.", valueName: "private"), completion: .file())
        var signKeys: [String] = []
        @Flag(help: "Print what was signed as JSON.")
        var json = false

        func validate() throws {
            guard !signKeys.isEmpty else { throw ValidationError("give --sign-key <private>") }
        }

        struct Summary: Encodable {
            /// `trust`, `catalog` or `bundle`.
            let kind: String
            let file: String
            /// Where the signatures are: the trust document itself, or the .sigs file.
            let signatures: String
            /// The key ids signed with, and those of them that were not there before.
            let keyids: [String]
            let added: [String]
            /// Signatures the file holds now.
            let count: Int
            /// For a trust document: its root signatures, as trust update reports them.
            let root: TrustFolder.Summary.Count?
            let complete: Bool?
        }

        func run() throws {
            let keys = try signKeys.map { ($0, try KeyFile.signingKey($0)) }
            let summary: Summary
            if file.hasSuffix(".zip") || file.hasSuffix(".tar.gz") {
                let reader = try Output.failing(file) { try BundleReader.anyFormat(path: file) }
                summary = try signDetached(reader.manifestBytes, kind: "bundle", keys: keys)
            } else {
                guard let data = FileManager.default.contents(atPath: file) else { throw Output.failure("cannot read \(file)") }
                let bytes = Array(data)
                // A trust document is what parses as one (strictly, canonical form and all); then a catalog.
                let trustError: TrustError?
                do { _ = try TrustDocument.decode(bytes); trustError = nil } catch { trustError = error }
                if trustError == nil {
                    summary = try signTrust(keys: keys)
                } else {
                    do { _ = try Catalog.decode(bytes) } catch {
                        throw Output.failure("\(file) is neither a bundle (.zip, .tar.gz), a catalog (\(error)) nor a trust document (it \(trustError!))")
                    }
                    summary = try signDetached(bytes, kind: "catalog", keys: keys)
                }
            }
            if json {
                Output.json(summary)
            } else {
                let added = summary.added.isEmpty ? "already signed by \(summary.keyids.joined(separator: ", ")): unchanged" : "\(summary.added.count) added"
                var line = "signed \(file): \(summary.signatures) holds \(summary.count) signature\(summary.count == 1 ? "" : "s") (\(added))"
                if let root = summary.root, let complete = summary.complete {
                    line += ", root signatures \(root.have) of \(root.need) (\(complete ? "complete" : "incomplete"))"
                }
                Output.line(line)
            }
        }

        private func signTrust(keys: [(String, SigningKey)]) throws -> Summary {
            let document = try TrustFolder.read(file)
            let previous = try TrustFolder.previousRoots(of: document, at: file)
            var signed = document
            var added: [String] = []
            for (path, key) in keys {
                let id = key.keyID
                guard document.keys(of: .root)[id] != nil || previous?.keys[id] != nil else {
                    let hint = document.version > 1 && previous == nil
                        ? " (\(TrustFolder.path((file as NSString).deletingLastPathComponent, document.version - 1)) is not beside it: put it there to sign as one of its roots)"
                        : ""
                    throw Output.failure("--sign-key \(path): key not trusted: \(id) is not a root key of trust version \(document.version)\(document.version > 1 ? " or \(document.version - 1)" : "")\(hint)")
                }
                if signed.isSigned(by: key.verifyingKey) { continue }
                signed = try Output.failing { try signed.signed(by: key) }
                added.append(id.hex)
            }
            if !added.isEmpty { try TrustFolder.write(signed, to: file) }
            let tally = TrustFolder.Summary(signed, file: file, previous: previous)
            return Summary(
                kind: "trust", file: file, signatures: file, keyids: keys.map(\.1.keyID.hex), added: added, count: signed.signatures.count,
                root: tally.root, complete: tally.complete)
        }

        /// Adds to `<file>.sigs`, over `bytes` (the catalog's, or the bundle's satchel.json).
        private func signDetached(_ bytes: [UInt8], kind: String, keys: [(String, SigningKey)]) throws -> Summary {
            let path = file + SignatureFile.suffix
            var signatures = SignatureFile(for: bytes)
            if let data = FileManager.default.contents(atPath: path) {
                let existing: SignatureFile
                do { existing = try SignatureFile.decode(Array(data)) } catch { throw Output.failure("\(path) \(error); remove it to start afresh") }
                if existing.covers(bytes) {
                    signatures = existing
                } else if !existing.signatures.isEmpty {
                    Output.warning("\(path) was made for other bytes (an earlier \(kind == "bundle" ? "manifest" : "catalog")): its \(existing.signatures.count) signature\(existing.signatures.count == 1 ? "" : "s") no longer verify and are dropped")
                }
            }
            var added: [String] = []
            for (_, key) in keys where !signatures.isSigned(by: key.verifyingKey, over: bytes) {
                signatures = try Output.failing { try signatures.adding(key, over: bytes) }
                added.append(key.keyID.hex)
            }
            let unchanged = FileManager.default.contents(atPath: path).map { Array($0) == signatures.canonicalBytes } ?? false
            if !unchanged {
                try Output.failing("cannot write \(path)") { try Data(signatures.canonicalBytes).write(to: URL(fileURLWithPath: path), options: .atomic) }
            }
            return Summary(
                kind: kind, file: file, signatures: path, keyids: keys.map(\.1.keyID.hex), added: added, count: signatures.signatures.count,
                root: nil, complete: nil)
        }
    }
}
