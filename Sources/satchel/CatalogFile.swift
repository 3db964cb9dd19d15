import Foundation
import SatchelCore

/// Reading and writing a catalog file the way every command does: decoded with every rule, written canonically and
/// atomically, signed beside it when a key is given.
enum CatalogFile {
    static func path(of channel: ReleaseChannel, beside production: String) -> String {
        guard channel != .production else { return production }
        let folder = (production as NSString).deletingLastPathComponent
        return (folder.isEmpty ? "" : folder + "/") + channel.relativeCatalogPath
    }

    static func read(_ path: String) throws -> Catalog {
        guard let data = FileManager.default.contents(atPath: path) else { throw Output.failure("cannot read catalog \(path)") }
        do { return try Catalog.decode(Array(data)) } catch { throw Output.failure("\(path): \(error)") }
    }

    /// Writes the catalog; the first key signs `<path>.sig` (the one legacy signature older runtimes read), and with two
    /// or more every key signs `<path>.sigs` (docs/formats.md, "Threshold signatures"). A `.sig` or `.sigs` left from an
    /// earlier catalog is removed when not written again: it would not match these bytes.
    static func write(_ catalog: Catalog, to path: String, keys: [SigningKey]) throws {
        let bytes = catalog.canonicalBytes
        do {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: path), options: .atomic)
            if let key = keys.first {
                try Data(try key.signature(for: bytes).base64.utf8).write(to: URL(fileURLWithPath: path + ".sig"), options: .atomic)
            } else if FileManager.default.fileExists(atPath: path + ".sig") {
                // An old signature beside a changed catalog would only make every updater refuse it.
                try FileManager.default.removeItem(atPath: path + ".sig")
            }
            if keys.count > 1 {
                var file = SignatureFile(for: bytes)
                for key in keys { file = try file.adding(key, over: bytes) }
                try Data(file.canonicalBytes).write(to: URL(fileURLWithPath: path + SignatureFile.suffix), options: .atomic)
            } else if FileManager.default.fileExists(atPath: path + SignatureFile.suffix) {
                try FileManager.default.removeItem(atPath: path + SignatureFile.suffix)
            }
        } catch {
            throw Output.failure("cannot write \(path): \(error.localizedDescription)")
        }
    }

    /// Warns (on stderr; the catalog is written all the same: further signers may add theirs with satchel sign) when the
    /// keys at hand do not meet the catalog role of the trust version the catalog names.
    static func warnShortOfThreshold(_ catalog: Catalog, at path: String, keys: [SigningKey], trust document: TrustDocument?) {
        guard let document else { return }
        let bytes = catalog.canonicalBytes
        let tally = document.signers(.catalog).tally(bytes, signatures: keys.compactMap { try? KeyedSignature(signing: bytes, with: $0) })
        if !tally.isMet {
            let strangers = keys.filter { document.keys(of: .catalog)[$0.keyID] == nil }.map { "\($0.keyID)" }
            let why = strangers.isEmpty ? "" : " (not catalog keys of version \(document.version): \(strangers.joined(separator: ", ")))"
            Output.warning("the catalog names trust version \(document.version), whose catalog role needs \(tally.threshold) signature\(tally.threshold == 1 ? "" : "s"); the keys given make \(tally.have)\(why): each other catalog signer runs satchel sign \(path) --sign-key <their key> before it is published")
        }
    }

    /// The folder production's catalog is in, for a catalog at `path`: its own folder, or for a channel's
    /// (`channels/<name>/catalog.json`) the folder two above it. `trust/` is published there, for every channel.
    static func productionFolder(of path: String) -> String {
        let folder = (path as NSString).deletingLastPathComponent
        let channels = (folder as NSString).deletingLastPathComponent
        if (channels as NSString).lastPathComponent == "channels" {
            let production = (channels as NSString).deletingLastPathComponent
            return production.isEmpty ? "." : production
        }
        return folder.isEmpty ? "." : folder
    }

    static func now() -> Timestamp { Timestamp(secondsSinceEpoch: Int64(Date().timeIntervalSince1970)) }
}
