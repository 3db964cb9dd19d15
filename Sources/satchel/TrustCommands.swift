import ArgumentParser
import Foundation
import SatchelCore
import SatchelOptions

/// A folder of trust documents as `satchel trust` writes it and the CDN serves it: `<n>.json` per version.
enum TrustFolder {
    /// The versions in `folder`: files named `<n>.json`, n a decimal without leading zeros, ascending.
    static func versions(in folder: String) -> [Int64] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.compactMap { name -> Int64? in
            guard name.hasSuffix(".json") else { return nil }
            let digits = name.dropLast(5)
            guard !digits.isEmpty, digits.first != "0", digits.allSatisfy(\.isASCII), let version = Int64(digits), version >= 1 else { return nil }
            return version
        }.sorted()
    }

    static func path(_ folder: String, _ version: Int64) -> String { (folder as NSString).appendingPathComponent("\(version).json") }

    /// Reads and checks a trust document (exit 1 naming the file and the rule when it breaks one).
    static func read(_ path: String) throws -> TrustDocument {
        guard let data = FileManager.default.contents(atPath: path) else { throw Output.failure("cannot read \(path)") }
        do { return try TrustDocument.decode(Array(data)) } catch { throw Output.failure("\(path) \(error)") }
    }

    static func write(_ document: TrustDocument, to path: String) throws {
        try Output.failing("cannot write \(path)") {
            try Data(document.canonicalBytes).write(to: URL(fileURLWithPath: path), options: .atomic)
        }
    }

    /// The root signers of the version before `document`, from `<version - 1>.json` beside `path`; nil for version 1 or
    /// when that file is not there.
    static func previousRoots(of document: TrustDocument, at path: String) throws -> SignerSet? {
        guard document.version > 1 else { return nil }
        let previous = Self.path((path as NSString).deletingLastPathComponent, document.version - 1)
        guard FileManager.default.fileExists(atPath: previous) else { return nil }
        return try read(previous).signers(.root)
    }

    /// `--expires-in` / `--expires` as every trust command takes them.
    static func expiry(_ expires: String?, _ expiresIn: ExpiryDuration?) throws -> Timestamp {
        if let expires {
            do { return try Timestamp(rfc3339: expires) } catch { throw ValidationError("--expires \(expires): must be RFC 3339 UTC, like 2028-01-31T00:00:00Z") }
        }
        return Timestamp(secondsSinceEpoch: CatalogFile.now().secondsSinceEpoch + (expiresIn ?? defaultLifetime).seconds)
    }

    static let defaultLifetime = ExpiryDuration(argument: "365d")!

    /// Signs `document` with each key, refusing (exit 1) a key that is a root of neither it nor `previous`.
    static func sign(_ document: TrustDocument, with keys: [(path: String, key: SigningKey)], previous: SignerSet?) throws -> TrustDocument {
        var signed = document
        let own = document.keys(of: .root)
        for (path, key) in keys {
            let id = key.keyID
            guard own[id] != nil || previous?.keys[id] != nil else {
                let versions = previous == nil ? "trust version \(document.version)" : "trust version \(document.version) or \(document.version - 1)"
                throw Output.failure("--sign-key \(path): key not trusted: \(id) is not a root key of \(versions)")
            }
            signed = try Output.failing { try signed.signed(by: key) }
        }
        return signed
    }

    /// `--trust <dir>` of `catalog` and `rollout`: the newest version in `dir`, after checking that every version chains
    /// as a device walks it (each one's number, and its root signatures complete: the previous version's threshold and its
    /// own) and that the newest has not expired; then every version is published in `trust/` beside production's
    /// catalog (`productionFolder`), where published versions never change: one there with other bytes is refused.
    static func publish(from dir: String, into productionFolder: String) throws -> TrustDocument {
        let versions = versions(in: dir)
        guard let newestVersion = versions.last else {
            throw Output.failure("--trust \(dir) holds no trust version (<n>.json); write the first with satchel trust init --output \(dir)")
        }
        guard versions == Array(1...newestVersion) else {
            throw Output.failure("--trust \(dir) lacks trust version \(Set(1...newestVersion).subtracting(versions).min()!): a device walks every version from 1")
        }
        var documents: [TrustDocument] = []
        for version in versions {
            let file = path(dir, version)
            let document = try read(file)
            guard document.version == version else { throw Output.failure("\(file) holds trust version \(document.version), not \(version)") }
            documents.append(document)
        }
        // The chain as a device walks it (TrustState, the one acceptance path); the counts only word the refusal.
        do { _ = try TrustState.publishedChain(documents) } catch {
            let file = path(dir, error.version)
            let document = documents[Int(error.version - 1)]
            let tally = document.rootTally(previous: error.version > 1 ? documents[Int(error.version - 2)].signers(.root) : nil)
            guard error.refusal.tally == nil else {
                throw Output.failure("\(file): threshold: trust version \(error.version) has root signatures \(tally.have) of \(tally.need); each other root holder runs satchel sign \(file) --sign-key <their key> before a catalog names it")
            }
            throw Output.failure("\(file): \(error.refusal)")
        }
        let document = documents.last!
        if document.expires <= CatalogFile.now() {
            throw Output.failure("\(path(dir, document.version)): expired: trust version \(document.version) expired at \(document.expires), and devices refuse every catalog while it is the newest they reach; write the next with satchel trust update \(dir)")
        }
        let published = (productionFolder as NSString).appendingPathComponent("trust")
        let resolved = { (path: String) in URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path }
        guard resolved(dir) != resolved(published) else { return document }
        try Output.failing("cannot create \(published)") { try FileManager.default.createDirectory(atPath: published, withIntermediateDirectories: true) }
        for version in versions {
            let source = path(dir, version)
            let target = path(published, version)
            let bytes = FileManager.default.contents(atPath: source) ?? Data()
            if let existing = FileManager.default.contents(atPath: target) {
                guard existing == bytes else {
                    throw Output.failure("\(target) is published with other bytes than \(source); a published trust version never changes (devices keep the copy they accepted): publish the change as the next version")
                }
                continue
            }
            try Output.failing("cannot write \(target)") { try bytes.write(to: URL(fileURLWithPath: target), options: .atomic) }
        }
        return document
    }

    /// What is legal but probably not meant: said on stderr, the document is written all the same.
    static func warnings(_ document: TrustDocument) {
        for id in Set(document.catalog.keyIDs).intersection(document.bundles.keyIDs).sorted() {
            Output.warning("key \(id) is both a catalog and a bundles key in trust version \(document.version): whoever holds it can ship code, not only catalogs")
        }
        if document.expires <= CatalogFile.now() {
            Output.warning("trust version \(document.version) expires at \(document.expires), which has passed: devices refuse every catalog while it is the newest version they reach")
        }
    }

    struct Summary: Encodable {
        struct Count: Encodable {
            let have: Int
            let need: Int
        }
        let version: Int64
        let file: String
        let root: Count
        let complete: Bool

        init(_ document: TrustDocument, file: String, previous: SignerSet?) {
            let tally = document.rootTally(previous: previous)
            version = document.version
            self.file = file
            root = Count(have: tally.have, need: tally.need)
            complete = tally.isComplete
        }

        var line: String {
            let state = complete
                ? "complete"
                : "incomplete: each other root holder runs satchel sign \(file) --sign-key <their key>; publish it once complete"
            return "root signatures \(root.have) of \(root.need) (\(state))"
        }
    }
}

extension Satchel {
    struct TrustCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "trust",
            abstract: "Write trust documents: which keys sign trust, catalogs and bundles, with what thresholds (trust/<n>.json).",
            discussion: """
                A trust folder holds one canonical document per version, <n>.json, published as trust/<n>.json beside \
                production's catalog. Version N+1 must be signed by a threshold of version N's root keys and of its own; \
                a second root holder adds their signature offline with satchel sign.
                """,
            subcommands: [Init.self, Update.self])

        struct Init: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Write <output>/1.json, the first trust document.",
                discussion: "Each <public> is a public key file (satchel.pub); each --sign-key a root's private key file.")

            @Option(name: .customLong("root"), help: ArgumentHelp("A root public key (signs trust documents); repeatable.", valueName: "public"), completion: .file())
            var roots: [String] = []
            @Option(help: ArgumentHelp("How many root keys must sign a trust document.", valueName: "k"))
            var rootThreshold = 1
            @Option(name: .customLong("bundle-signer"), help: ArgumentHelp("A public key that signs bundles; repeatable.", valueName: "public"), completion: .file())
            var bundleSigners: [String] = []
            @Option(help: ArgumentHelp("How many bundle keys must sign a bundle.", valueName: "k"))
            var bundleThreshold = 1
            @Option(name: .customLong("catalog-signer"), help: ArgumentHelp("A public key that signs catalogs; repeatable.", valueName: "public"), completion: .file())
            var catalogSigners: [String] = []
            @Option(help: ArgumentHelp("How many catalog keys must sign a catalog.", valueName: "k"))
            var catalogThreshold = 1
            @Option(help: "How long the document may be the newest a device relies on: 90s, 45m, 12h, 30d, 2w (default 365d).")
            var expiresIn: ExpiryDuration?
            @Option(help: "Expire at this RFC 3339 UTC instant instead.")
            var expires: String?
            @Option(name: .customLong("sign-key"), help: ArgumentHelp("A root private key to sign with; repeatable.", valueName: "private"), completion: .file())
            var signKeys: [String] = []
            @Option(help: "The trust folder to write 1.json into (created when missing).", completion: .directory)
            var output: String
            @Flag(help: "Print {version, file, root: {have, need}, complete}.")
            var json = false

            func validate() throws {
                for (option, keys) in [("--root", roots), ("--bundle-signer", bundleSigners), ("--catalog-signer", catalogSigners)] where keys.isEmpty {
                    throw ValidationError("give at least one \(option) <public>")
                }
                for (option, threshold) in [("--root-threshold", rootThreshold), ("--bundle-threshold", bundleThreshold), ("--catalog-threshold", catalogThreshold)]
                where threshold < 1 {
                    throw ValidationError("\(option) must be at least 1")
                }
            }

            func run() throws {
                func load(_ paths: [String], _ option: String) throws -> [VerifyingKey] { try paths.map { try KeyFile.verifyingKey($0, option: option) } }
                let roles: [TrustRole: RoleDefinition] = [
                    .root: RoleDefinition(keys: try load(roots, "--root"), threshold: rootThreshold),
                    .bundles: RoleDefinition(keys: try load(bundleSigners, "--bundle-signer"), threshold: bundleThreshold),
                    .catalog: RoleDefinition(keys: try load(catalogSigners, "--catalog-signer"), threshold: catalogThreshold),
                ]
                let keys = try signKeys.map { ($0, try KeyFile.signingKey($0)) }
                let expiry = try TrustFolder.expiry(expires, expiresIn)
                let file = TrustFolder.path(output, 1)
                if let newest = TrustFolder.versions(in: output).last {
                    throw Output.failure("\(output) already holds trust version \(newest); write the next one with satchel trust update \(output)")
                }
                let unsigned = try Output.failing(file) { () throws(TrustError) in try TrustDocument(version: 1, expires: expiry, roles: roles) }
                let document = try TrustFolder.sign(unsigned, with: keys, previous: nil)
                try Output.failing("cannot create \(output)") { try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true) }
                try TrustFolder.write(document, to: file)
                TrustFolder.warnings(document)
                let summary = TrustFolder.Summary(document, file: file, previous: nil)
                if json { Output.json(summary) } else { Output.line("wrote \(file): trust version 1, \(summary.line), expires \(document.expires)") }
            }
        }

        struct Update: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Write the next trust version into <directory>, from its newest.",
                discussion: """
                    Keys are added or removed per role; thresholds and expiry are given again or kept (expiry: 365d from \
                    now by default, so an update without changes renews). Root keys at hand sign with --sign-key: the \
                    previous version's roots and the new version's both count, each toward its own threshold. The file is \
                    written even when thresholds are still short (exit 0): the other root holders add theirs with satchel \
                    sign. Removing a key the newest version does not hold is refused; adding one it holds changes nothing.
                    """)

            @Argument(help: "The trust folder (holding 1.json … <n>.json).", completion: .directory)
            var directory: String
            @Option(name: .customLong("add-root"), help: ArgumentHelp("Add a root key; repeatable.", valueName: "public"), completion: .file())
            var addRoots: [String] = []
            @Option(name: .customLong("remove-root"), help: ArgumentHelp("Remove a root key; repeatable.", valueName: "public"), completion: .file())
            var removeRoots: [String] = []
            @Option(name: .customLong("add-bundle-signer"), help: ArgumentHelp("Add a bundle key; repeatable.", valueName: "public"), completion: .file())
            var addBundleSigners: [String] = []
            @Option(name: .customLong("remove-bundle-signer"), help: ArgumentHelp("Remove a bundle key; repeatable.", valueName: "public"), completion: .file())
            var removeBundleSigners: [String] = []
            @Option(name: .customLong("add-catalog-signer"), help: ArgumentHelp("Add a catalog key; repeatable.", valueName: "public"), completion: .file())
            var addCatalogSigners: [String] = []
            @Option(name: .customLong("remove-catalog-signer"), help: ArgumentHelp("Remove a catalog key (resets devices' catalog serial floor); repeatable.", valueName: "public"), completion: .file())
            var removeCatalogSigners: [String] = []
            @Option(help: ArgumentHelp("The new root threshold (default: the newest version's).", valueName: "k"))
            var rootThreshold: Int?
            @Option(help: ArgumentHelp("The new bundle threshold (default: the newest version's).", valueName: "k"))
            var bundleThreshold: Int?
            @Option(help: ArgumentHelp("The new catalog threshold (default: the newest version's).", valueName: "k"))
            var catalogThreshold: Int?
            @Option(help: "How long the new version may be the newest a device relies on: 90s, 45m, 12h, 30d, 2w (default 365d).")
            var expiresIn: ExpiryDuration?
            @Option(help: "Expire at this RFC 3339 UTC instant instead.")
            var expires: String?
            @Option(name: .customLong("sign-key"), help: ArgumentHelp("A root private key (old or new) to sign with; repeatable.", valueName: "private"), completion: .file())
            var signKeys: [String] = []
            @Flag(help: "Print {version, file, root: {have, need}, complete}.")
            var json = false

            func validate() throws {
                for (option, threshold) in [("--root-threshold", rootThreshold), ("--bundle-threshold", bundleThreshold), ("--catalog-threshold", catalogThreshold)] {
                    if let threshold, threshold < 1 { throw ValidationError("\(option) must be at least 1") }
                }
            }

            func run() throws {
                func load(_ paths: [String], _ option: String) throws -> [(String, VerifyingKey)] { try paths.map { ($0, try KeyFile.verifyingKey($0, option: option)) } }
                let changes: [(TrustRole, add: [(String, VerifyingKey)], remove: [(String, VerifyingKey)], removeOption: String, threshold: Int?)] = [
                    (.root, try load(addRoots, "--add-root"), try load(removeRoots, "--remove-root"), "--remove-root", rootThreshold),
                    (.bundles, try load(addBundleSigners, "--add-bundle-signer"), try load(removeBundleSigners, "--remove-bundle-signer"), "--remove-bundle-signer", bundleThreshold),
                    (.catalog, try load(addCatalogSigners, "--add-catalog-signer"), try load(removeCatalogSigners, "--remove-catalog-signer"), "--remove-catalog-signer", catalogThreshold),
                ]
                let keys = try signKeys.map { ($0, try KeyFile.signingKey($0)) }
                let expiry = try TrustFolder.expiry(expires, expiresIn)
                guard let newestVersion = TrustFolder.versions(in: directory).last else {
                    throw Output.failure("\(directory) holds no trust version (<n>.json); write the first with satchel trust init --output \(directory)")
                }
                let newestPath = TrustFolder.path(directory, newestVersion)
                let newest = try TrustFolder.read(newestPath)
                guard newest.version == newestVersion else {
                    throw Output.failure("\(newestPath) holds trust version \(newest.version), not \(newestVersion)")
                }
                // A version devices would refuse cannot lead anywhere: finish it before writing the next. Judged by the
                // acceptance path (against the version before it when it is beside it); the counts word the refusal.
                let previousRoots = try TrustFolder.previousRoots(of: newest, at: newestPath)
                let standing = newest.rootTally(previous: previousRoots)
                let previousDocument = previousRoots == nil ? nil : try TrustFolder.read(TrustFolder.path(directory, newestVersion - 1))
                let refusal: TrustRefusal?
                do { try TrustState.checkLink(newest, after: previousDocument); refusal = nil } catch { refusal = error }
                if let refusal, refusal.tally == nil { throw Output.failure("\(newestPath): \(refusal)") }
                guard refusal == nil else {
                    throw Output.failure("\(newestPath): threshold: trust version \(newestVersion) has root signatures \(standing.have) of \(standing.need); complete it with satchel sign before writing the next version")
                }
                var roles: [TrustRole: RoleDefinition] = [:]
                for change in changes {
                    var members = newest.keys(of: change.0)
                    for (path, key) in change.remove {
                        guard members.removeValue(forKey: key.keyID) != nil else {
                            throw Output.failure("\(change.removeOption) \(path): key \(key.keyID) is not a \(change.0) key of trust version \(newestVersion)")
                        }
                    }
                    for (_, key) in change.add { members[key.keyID] = key }
                    roles[change.0] = RoleDefinition(keys: members.keys.sorted().map { members[$0]! }, threshold: change.threshold ?? newest[change.0].threshold)
                }
                let version = newestVersion + 1
                let file = TrustFolder.path(directory, version)
                let unsigned = try Output.failing(file) { () throws(TrustError) in try TrustDocument(version: version, expires: expiry, roles: roles) }
                let previous = newest.signers(.root)
                let document = try TrustFolder.sign(unsigned, with: keys, previous: previous)
                guard !FileManager.default.fileExists(atPath: file) else { throw Output.failure("\(file) already exists") }
                try TrustFolder.write(document, to: file)
                TrustFolder.warnings(document)
                let summary = TrustFolder.Summary(document, file: file, previous: previous)
                if json { Output.json(summary) } else { Output.line("wrote \(file): trust version \(version), \(summary.line), expires \(document.expires)") }
            }
        }
    }
}
