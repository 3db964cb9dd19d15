import ArgumentParser
import Foundation
import SatchelArchive
import SatchelBundle
import SatchelCore
import SatchelPublishing
import SatchelOptions

extension Satchel {
    struct Pack: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Pack a folder of web assets into a versioned, reproducible (optionally signed) bundle.",
            discussion: """
                Writes <output>/<id>-<version>.zip (or .tar.gz). Two packs of the same folder are byte-identical;
                createdAt comes from SOURCE_DATE_EPOCH when set, else from the newest file.
                Excluded always: .git/, .DS_Store, Thumbs.db.
                """)

        @Argument(help: "The folder to pack.", completion: .directory)
        var source: String

        @Option(help: "Package id, e.g. shop or com.example.shop.")
        var id: String

        @Option(help: "Semantic version, e.g. 1.4.0.")
        var version: String

        @Option(name: .customLong("host"), help: "A host the package serves (repeatable); '*.example.com' claims one label.")
        var hosts: [String] = []

        @Option(help: "URL path prefix the package is mounted at; starts and ends with '/'.")
        var prefix: String = "/"

        @Option(help: "The entry file, served for the prefix itself.")
        var entry: String = "index.html"

        @Flag(help: "Serve the entry for extension-less paths that match no file (single-page apps).")
        var spaFallback = false

        @Option(help: "A page of the package shown for navigations when both package and network fail.")
        var offlinePage: String?

        @Option(name: .customLong("route"), help: "<prefix>=<strategy>[:<timeoutMs>] (repeatable); strategies: offline-first, network-first, offline-only, network-only.")
        var routes: [String] = []

        @Option(name: .customLong("route-cache"), help: "<prefix>=<policy>[:<seconds>] (repeatable): how the network leg under a prefix uses the app's HTTP cache; policies: use-protocol-policy, reload-ignoring-cache, return-cache-else-load, return-cache-dont-load, reload-revalidating, stale-while-revalidate (the seconds: the oldest stored answer a cache-first policy uses). Sets --min-runtime to at least 0.2.0.")
        var routeCaches: [String] = []

        @Option(help: "The oldest app runtime version that can use this package.")
        var minRuntime: String?

        @Option(name: .customLong("exclude"), help: "A glob to leave out (repeatable): '*.map', 'drafts/', 'src/*.ts'.")
        var excludes: [String] = []

        @Option(help: "zip or tar.gz.")
        var format: String = "zip"

        @Option(
            name: .customLong("sign-key"),
            help: "Ed25519 private key file (from satchel keygen) to sign the manifest with; repeatable: the first signs satchel.sig inside the bundle, and with two or more every key signs <bundle>.sigs beside it.",
            completion: .file())
        var signKeys: [String] = []

        @Option(help: "Deflate level, 1 (fastest) to 9 (smallest).")
        var compressionLevel: Int = Packer.defaultCompressionLevel

        @Option(help: "The folder to write the bundle into (created when missing).", completion: .directory)
        var output: String

        @Flag(help: "Print one JSON object (bundle, size, sha256, fileCount, contentHash) and nothing else on stdout.")
        var json = false

        @Flag(help: "Print nothing but errors.")
        var quiet = false

        /// Every bad option is a usage error (exit 64), found before any work starts.
        func validate() throws { _ = try makeOptions() }

        private func makeOptions() throws -> PackOptions {
            do {
                guard !hosts.isEmpty else { throw ValidationError("at least one --host is required") }
                let scope = try Scope(
                    hosts: try hosts.map { try HostPattern($0.lowercased()) },
                    pathPrefix: try PathPrefix(prefix))
                guard let archiveFormat = ArchiveFormat(rawValue: format) else {
                    throw ValidationError("--format must be zip or tar.gz, not \(format.debugDescription)")
                }
                guard (1...9).contains(compressionLevel) else {
                    throw ValidationError("--compression-level must be between 1 and 9")
                }
                if !routeCaches.isEmpty, let minRuntime, let version = try? SemanticVersion(minRuntime), version < SatchelRuntime.cachePolicies {
                    throw ValidationError("--min-runtime \(minRuntime) is older than \(SatchelRuntime.cachePolicies), the first runtime that reads --route-cache (older ones refuse the manifest)")
                }
                let key = try signKeys.first.map { try KeyFile.signingKey($0) }
                return PackOptions(
                    id: try PackageID(id), version: try SemanticVersion(version), scope: scope,
                    entry: try safePath(entry, option: "--entry"), spaFallback: spaFallback,
                    offlinePage: try offlinePage.map { try safePath($0, option: "--offline-page") },
                    routes: try routes.map { try Route(parsing: $0) },
                    cachePolicies: try routeCaches.map { try CacheRoute(parsing: $0) },
                    minRuntime: try minRuntime.map { raw throws(FieldError) in
                        do throws(FieldError) { return try SemanticVersion(raw) } catch {
                            throw FieldError(field: "min-runtime", value: raw, reason: error.reason)
                        }
                    },
                    excludes: ExcludeRules(adding: excludes), format: archiveFormat, signingKey: key,
                    compressionLevel: compressionLevel)
            } catch let error as FieldError {
                throw ValidationError(error.description)
            }
        }

        private func safePath(_ raw: String, option: String) throws -> SafePath {
            do { return try SafePath(normalizing: raw) } catch {
                throw ValidationError("\(option): \(error)")
            }
        }

        func run() throws {
            var options = try makeOptions()
            let keys = try signKeys.map { try KeyFile.signingKey($0) }
            let bar = ProgressBar(enabled: !quiet)
            let plain = !quiet && !json && !Output.stderrIsTerminal
            let result: PackResult
            do {
                options.sourceDateEpoch = try PackOptions.sourceDateEpochFromEnvironment()
                result = try Packer.pack(source: source, options: options, outputFolder: output) { event in
                    switch event {
                    case .scanned(let files, let bytes):
                        if plain { Output.note("packing \(files) files, \(Output.bytes(bytes)), from \(source)") }
                    case .hashed(let done, let total): bar.update(label: "hashing", done: done, total: total)
                    case .written(let done, let total): bar.update(label: "writing", done: done, total: total)
                    case .finished: bar.clear()
                    }
                }
            } catch {
                bar.clear()
                throw Output.failure(error.description)
            }
            // Further bundle signers: every key over satchel.json, beside the bundle (docs/formats.md, "Threshold
            // signatures"); a .sigs there for the same manifest (a reproducible pack again) keeps its other signatures.
            let signatures = keys.count > 1 ? try Output.failing("cannot sign beside \(result.bundle)") { try signBeside(result.bundle, keys: keys) } : nil
            if json {
                Output.json(Summary(result, signatures: signatures))
            } else if !quiet {
                let extra = signatures.map { ", \($0.count) keyed signatures in \($0.file)" } ?? ""
                Output.line("\(result.bundle): \(result.fileCount) files, \(Output.bytes(result.size)), sha256 \(result.sha256)\(result.signed ? ", signed" : "")\(extra)")
            }
        }

        struct Summary: Encodable {
            let bundle: String
            let id: String
            let version: String
            let size: Int64
            let sha256: String
            let fileCount: Int
            let contentHash: String
            let signed: Bool
            /// `<bundle>.sigs`, when two or more keys signed.
            let signatures: String?

            init(_ result: PackResult, signatures: (file: String, count: Int)?) {
                bundle = result.bundle
                id = result.id
                version = result.version
                size = result.size
                sha256 = result.sha256
                fileCount = result.fileCount
                contentHash = result.contentHash
                signed = result.signed
                self.signatures = signatures?.file
            }
        }

        /// Writes `<bundle>.sigs` with each key's signature over the bundle's satchel.json.
        private func signBeside(_ bundle: String, keys: [SigningKey]) throws -> (file: String, count: Int) {
            let manifest = try BundleReader.anyFormat(path: bundle).manifestBytes
            let path = bundle + SignatureFile.suffix
            var file = SignatureFile(for: manifest)
            if let data = FileManager.default.contents(atPath: path), let existing = try? SignatureFile.decode(Array(data)), existing.covers(manifest) {
                file = existing
            }
            for key in keys { file = try file.adding(key, over: manifest) }
            try Data(file.canonicalBytes).write(to: URL(fileURLWithPath: path), options: .atomic)
            return (path, file.signatures.count)
        }
    }
}
