import ArgumentParser
import Foundation
import SatchelBundle
import SatchelCore
import SatchelPublishing

extension Satchel {
    struct Inspect: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a bundle's manifest, readable or as JSON (reads the manifest only; use verify to check files).")

        @Argument(help: "The bundle (.zip or .tar.gz).", completion: .file())
        var bundle: String

        @Flag(help: "Print the manifest's exact JSON bytes.")
        var json = false

        func run() throws {
            let reader = try Output.failing { try BundleReader.anyFormat(path: bundle) }
            let m = reader.manifest
            if json {
                FileHandle.standardOutput.write(Data(reader.manifestBytes + [0x0A]))
                return
            }
            var lines = [
                "\(m.id) \(m.version)",
                field("schema", "\(m.schema)"),
                field("created", m.createdAt.description),
                field("hosts", m.scope.hosts.map(\.value).joined(separator: ", ")),
                field("path prefix", m.scope.pathPrefix.value),
                field("entry", m.entry.value),
                field("spa fallback", m.spaFallback ? "yes" : "no"),
                field("offline page", m.offlinePage?.value ?? "none"),
                field("routes", m.routes.isEmpty ? "none (offline-first everywhere)" : m.routes.map { route in
                    "\(route.prefix) \(route.strategy.rawValue)" + (route.timeoutMs.map { " (\($0) ms)" } ?? "")
                }.joined(separator: "; ")),
                field("min runtime", m.minRuntime?.description ?? "any"),
                field("content hash", m.contentHash),
                field("signature", reader.signature == nil ? "none" : "present (check it with satchel verify --public-key)"),
                field("files", "\(m.files.count), \(Output.bytes(m.totalSize))"),
            ]
            let sizeWidth = m.files.map { String($0.size).count }.max() ?? 1
            let mimeWidth = m.files.map(\.mime.count).max() ?? 1
            for file in m.files {
                let size = String(file.size)
                lines.append("  " + String(repeating: " ", count: sizeWidth - size.count) + size + "  "
                    + file.mime + String(repeating: " ", count: mimeWidth - file.mime.count) + "  " + file.path.value)
            }
            Output.line(lines.joined(separator: "\n"))
        }

        private func field(_ name: String, _ value: String) -> String {
            name + String(repeating: " ", count: max(1, 14 - name.count)) + value
        }
    }
}
