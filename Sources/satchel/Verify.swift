import ArgumentParser
import Foundation
import SatchelBundle
import SatchelCore
import SatchelPublishing
import SatchelOptions

extension Satchel {
    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check a bundle: every file's size and SHA-256, the contentHash, entry order, and the signature.",
            discussion: "Exit 0 when valid, 1 when invalid (the first bad file or field is named), 64 on a usage error.")

        @Argument(help: "The bundle (.zip or .tar.gz).", completion: .file())
        var bundle: String

        @Option(help: "Ed25519 public key file; the bundle must then be signed by it.", completion: .file())
        var publicKey: String?

        @Flag(help: "Print one JSON object.")
        var json = false

        struct Report: Encodable {
            var valid: Bool
            var bundle: String
            var id: String?
            var version: String?
            var fileCount: Int?
            var bytes: Int64?
            var contentHash: String?
            var signed: Bool?
            var signatureVerified: Bool?
            var error: String?
            var subject: String?
        }

        func run() throws {
            let keys = try publicKey.map { [try KeyFile.verifyingKey($0)] } ?? []
            do {
                let reader = try BundleReader.anyFormat(path: bundle, trustedKeys: keys)
                var sink = DiscardingSink()
                try reader.readFiles(into: &sink)
                let manifest = reader.manifest
                if json {
                    Output.json(Report(
                        valid: true, bundle: bundle, id: manifest.id.value, version: manifest.version.description,
                        fileCount: manifest.files.count, bytes: manifest.totalSize, contentHash: manifest.contentHash,
                        signed: reader.signature != nil, signatureVerified: reader.signatureVerified))
                } else {
                    let signature = reader.signatureVerified ? "signature verified" : reader.signature != nil ? "signed (no key given, signature not checked)" : "unsigned"
                    Output.line("valid: \(manifest.id) \(manifest.version), \(manifest.files.count) files, \(Output.bytes(manifest.totalSize)), \(signature)")
                }
            } catch {
                let subject = (error as? BundleError)?.subject
                if json {
                    Output.json(Report(valid: false, bundle: bundle, error: "\(error)", subject: subject))
                } else {
                    Output.line("invalid: \(error)")
                }
                throw ExitCode.failure
            }
        }
    }
}
