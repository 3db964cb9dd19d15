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

    static func write(_ catalog: Catalog, to path: String, key: SigningKey?) throws {
        let bytes = catalog.canonicalBytes
        do {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: path), options: .atomic)
            if let key {
                try Data(try key.signature(for: bytes).base64.utf8).write(to: URL(fileURLWithPath: path + ".sig"), options: .atomic)
            } else if FileManager.default.fileExists(atPath: path + ".sig") {
                // An old signature beside a changed catalog would only make every updater refuse it.
                try FileManager.default.removeItem(atPath: path + ".sig")
            }
        } catch {
            throw Output.failure("cannot write \(path): \(error.localizedDescription)")
        }
    }

    static func now() -> Timestamp { Timestamp(secondsSinceEpoch: Int64(Date().timeIntervalSince1970)) }
}
