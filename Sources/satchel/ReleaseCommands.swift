import ArgumentParser
import Foundation
import SatchelBundle
import SatchelCore
import SatchelPublishing
import SatchelEngine
import SatchelHTTP
import SatchelNetwork
import SatchelOptions
import SatchelStore
import SatchelUpdate

/// A duration such as `90s`, `45m`, `12h`, `30d` or `2w`.
struct ExpiryDuration: ExpressibleByArgument {
    let seconds: Int64

    init?(argument: String) {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800]
        guard let unit = argument.last, let scale = units[unit], let count = Int64(argument.dropLast()), count > 0,
            count <= Int64.max / scale / 2
        else { return nil }
        seconds = count * scale
    }

    static var defaultCompletionKind: CompletionKind { .default }
}

extension Satchel {
    struct CatalogCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "catalog",
            abstract: "Write catalog.json for a folder of bundles and deltas (and catalog.json.sig with a key).",
            discussion: """
                Every bundle is verified first (manifest, every file's hash); deltas are attached to the version they \
                lead to. URLs are <base-url><file name>; a relative base URL (such as ./) makes them relative to the \
                catalog. The same pass writes, in the bundle folder, each file content once as an object \
                (objects/<xx>/<sha256>[.gz]), each version's manifest patches (patches/<id>/<version>/) and per-file \
                diffs from older versions and built-ins (diffs/<xx>/<from>-<to>, listed in patches/<id>/<version>/diffs-<hash>.json.gz), \
                and, for each package's newest version, one-download steps from its predecessor and the built-ins \
                (steps/<id>/<version>/from-<base>-<hash>.step), \
                published under the same base URL, so an updater can fetch only what its device lacks. --expires-in counts from now; --expires fixes the instant, so a catalog can be rebuilt byte \
                for byte (SOURCE_DATE_EPOCH is deliberately not used: it is usually the commit time, and a catalog \
                expiring relative to it would be stale on arrival).
                """)

        @Argument(help: "The folder holding the release's bundles (.zip, .tar.gz) and deltas.", completion: .directory)
        var bundles: String
        @Option(help: "The URL the bundles are published under (prefix of every entry's url).")
        var baseURL: String
        @Option(
            name: .customLong("sign-key"),
            help: "Sign the catalog with this Ed25519 private key file (writes <output>.sig); repeatable: with two or more, every key also signs <output>.sigs.",
            completion: .file())
        var signKeys: [String] = []
        @Option(
            help: ArgumentHelp(
                "A trust folder (satchel trust init/update): the catalog names its newest version, and every version is published in trust/ beside production's catalog.",
                valueName: "dir"),
            completion: .directory)
        var trust: String?
        @Option(help: "How long updaters may trust the catalog: 90s, 45m, 12h, 30d, 2w.")
        var expiresIn: ExpiryDuration = ExpiryDuration(argument: "30d")!
        @Option(help: "Expire at this RFC 3339 UTC instant instead (e.g. 2027-01-31T00:00:00Z).")
        var expires: String?
        @Option(help: "Where to write catalog.json (production's; another channel's goes to channels/<name>/catalog.json beside it).", completion: .file())
        var output: String
        @Option(help: "Publish this channel's catalog (default production, at --output itself). A relative --base-url stays relative to --output's folder.")
        var channel: String?
        @Option(help: "The catalog's serial (default: one more than the catalog already at the output path, or the current Unix time if larger).")
        var serial: Int64?
        @Option(help: "Where devices POST their reports (written into the catalog).")
        var reportURL: String?
        @Option(
            name: .customLong("built-in"),
            help: ArgumentHelp(
                "A version apps ship as a built-in (repeatable): every newer version of its package gets per-file diffs from it, however far back. Its full bundle must be in the folder.",
                valueName: "id@version"))
        var builtIns: [String] = []
        @Flag(help: "Print the catalog's summary as JSON.")
        var json = false

        func run() throws {
            let keys = try signKeys.map { try KeyFile.signingKey($0) }
            let shipped: [ReleaseFolder.BuiltIn]
            do { shipped = try builtIns.map { text throws(FieldError) in try ReleaseFolder.BuiltIn(parsing: text) } } catch {
                throw ValidationError("--built-in: \(error)")
            }
            let expiry: Timestamp
            if let expires {
                do { expiry = try Timestamp(rfc3339: expires) } catch { throw ValidationError("--expires \(expires): must be RFC 3339 UTC, like 2027-01-31T00:00:00Z") }
            } else {
                expiry = Timestamp(secondsSinceEpoch: CatalogFile.now().secondsSinceEpoch + expiresIn.seconds)
            }
            let releaseChannel: ReleaseChannel
            do { releaseChannel = try channel.map { try ReleaseChannel($0) } ?? .production } catch { throw ValidationError("--channel: \(error)") }
            var base = baseURL.isEmpty || baseURL.hasSuffix("/") ? baseURL : baseURL + "/"
            let output = CatalogFile.path(of: releaseChannel, beside: self.output)
            if releaseChannel != .production, !base.contains("://"), !base.hasPrefix("/") {
                base = "../../" + (base == "./" ? "" : base)  // the channel's catalog sits two folders below production's
            }
            let trustDocument = try trust.map { try TrustFolder.publish(from: $0, into: CatalogFile.productionFolder(of: self.output)) }
            // A version staged, halted or revoked in the catalog being replaced stays so: publishing the next release
            // must not roll an earlier one out to everyone. A watched release stays watched, from when it was released.
            let previous = FileManager.default.fileExists(atPath: output) ? try CatalogFile.read(output) : nil
            let kept = Dictionary(uniqueKeysWithValues: (previous?.rollouts ?? []).map { ("\($0.entry.id) \($0.entry.version)", $0) })
            let release: ReleaseFolder.Contents
            do { release = try ReleaseFolder.read(bundles, baseURL: base, builtIns: shipped, staged: Set(kept.keys)) } catch {
                throw Output.failure(error.description)
            }
            for path in release.staleSignatures {
                Output.warning("\(path) was made for another manifest than its bundle's (packed again since?): left out of the catalog")
            }
            var packages: [CatalogEntry] = []
            var rollouts: [Rollout] = []
            for entry in release.entries {
                if var rollout = kept["\(entry.id) \(entry.version)"] {
                    rollout.entry = entry
                    rollouts.append(rollout)
                } else {
                    packages.append(entry)
                }
            }
            let catalog: Catalog
            do {
                catalog = try Catalog(
                    expires: expiry, packages: packages, serial: serial ?? max((previous?.serial ?? 0) + 1, CatalogFile.now().secondsSinceEpoch), reportURL: reportURL,
                    rollouts: rollouts, watches: (previous?.watches ?? []).filter { watch in packages.contains(where: watch.watches) },
                    trust: trustDocument?.version ?? previous?.trust)
            } catch {
                throw Output.failure(error.description)
            }
            guard !catalog.packages.isEmpty || !catalog.rollouts.isEmpty else {
                throw Output.failure("no bundles in \(bundles)")
            }
            try CatalogFile.write(catalog, to: output, keys: keys)
            CatalogFile.warnShortOfThreshold(catalog, at: output, keys: keys, trust: trustDocument)
            struct Summary: Encodable {
                let catalog: String
                let signature: String?
                let signatures: String?
                let trust: Int64?
                let expires: String
                let packages: Int
                let deltas: Int
                let objects: Int
                let patches: Int
                let diffs: Int
                let diffBytes: Int64
                let diffsEncoded: Int
                let steps: Int
                let stepBytes: Int64
            }
            let summary = Summary(
                catalog: output, signature: keys.isEmpty ? nil : output + ".sig", signatures: keys.count > 1 ? output + SignatureFile.suffix : nil,
                trust: catalog.trust, expires: catalog.expires.description,
                packages: catalog.packages.count, deltas: catalog.packages.reduce(0) { $0 + $1.deltas.count }, objects: release.objects,
                patches: release.patches, diffs: release.diffs, diffBytes: release.diffBytes, diffsEncoded: release.diffsEncoded,
                steps: release.steps, stepBytes: release.stepBytes)
            if json {
                Output.json(summary)
            } else {
                let signed = keys.isEmpty ? "unsigned" : keys.count == 1 ? "signed" : "signed by \(keys.count) keys"
                let trust = catalog.trust.map { ", trust version \($0)" } ?? ""
                Output.line("wrote \(output) (\(signed)): \(summary.packages) bundle\(summary.packages == 1 ? "" : "s"), \(summary.deltas) delta\(summary.deltas == 1 ? "" : "s"), \(summary.objects) objects, \(summary.patches) manifest patches, \(summary.diffs) diff\(summary.diffs == 1 ? "" : "s") (\(summary.diffsEncoded) new), \(summary.steps) step\(summary.steps == 1 ? "" : "s") (\(Output.bytes(summary.stepBytes)))\(trust), expires \(summary.expires)")
            }
        }
    }

    struct Diff: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Build the delta bundle <id>-<from>-<to>.zip between two full bundles of one package.",
            discussion: "The delta carries the new bundle's own satchel.json and satchel.sig, satchel-delta.json, and only the added and changed files.")

        @Argument(help: "The installed (older) bundle.", completion: .file())
        var old: String
        @Argument(help: "The new bundle.", completion: .file())
        var new: String
        @Option(help: "The folder to write the delta into.", completion: .directory)
        var output: String
        @Flag(help: "Print one JSON object.")
        var json = false

        func run() throws {
            let result: DeltaResult
            do { result = try DeltaBuilder.build(from: old, to: new, outputFolder: output) } catch {
                throw Output.failure(error.description)
            }
            if json {
                Output.json(result)
            } else {
                let full = (try? FileManager.default.attributesOfItem(atPath: new)[.size] as? Int64) ?? nil
                let share = full.map { String(format: " (%.2f %% of the full bundle)", 100 * Double(result.size) / Double(max(1, $0))) } ?? ""
                Output.line("wrote \(result.delta): \(result.id) \(result.from) -> \(result.to), \(result.added) added, \(result.changed) changed, \(result.deleted) deleted, \(result.unchanged) unchanged, \(Output.bytes(result.size))\(share)")
            }
        }
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Update installed packages from a catalog: download (resumable), verify, install as trial.",
            discussion: """
                The catalog must be signed by a --public-key when one is given (the same keys check the bundles), and \
                is refused once expired. With --root-public-key, the trust documents trust/<n>.json beside production's catalog \
                are walked to the version the catalog names, and the catalog and each bundle need a threshold of that version's \
                catalog and bundles keys. A delta is used when its base is installed and it is smaller; the objects the device \
                lacks when they weigh less than that (bytes + 25,000 per request), fetched --concurrency at a time. Exit 0 when \
                every package is up to date or updated, 1 when any failed (each failed package is left as it was).
                """)

        @OptionGroup var options: StoreOptions
        @Option(help: "The catalog URL (http or https).")
        var catalog: String
        @Option(help: "The Satchel runtime to update for (default: this one's); entries whose minRuntime is above it are skipped.")
        var runtime: String?
        @Flag(help: "Accept a catalog whose newest version is older than the active one.")
        var allowDowngrade = false
        @Option(name: .customLong("package"), help: "Update (or first install) only this package (repeatable). Default: every installed package in the catalog.")
        var packages: [String] = []
        @Option(help: "Attempts per download before giving up (with exponential backoff).")
        var attempts: Int = 4
        @Option(help: "Objects downloaded at once (1 or more).")
        var concurrency: Int = UpdatePlan.requestsInFlight
        @Option(
            name: .customLong("trust-root"),
            help: ArgumentHelp("A PEM file of certificate authorities to trust for an https catalog, besides the system's (repeatable).", valueName: "pem-file"))
        var trustRoots: [String] = []
        @Option(help: "Follow this release channel (remembered by the store; default: the one it followed last, else production).")
        var channel: String?
        @Flag(help: "Send no device report (neither catalog request headers nor the POST to the catalog's report URL).")
        var noReports = false
        @Flag(help: "Print one JSON object.")
        var json = false

        func run() async throws {
            let store = try options.openForCommand()
            let runtimeVersion = try runtime.map(parseVersion) ?? SatchelRuntime.version
            let releaseChannel: ReleaseChannel?
            do { releaseChannel = try channel.map { try ReleaseChannel($0) } } catch { throw ValidationError("--channel: \(error)") }
            let ids = try packages.map(parseID)
            guard concurrency >= 1 else { throw ValidationError("--concurrency must be 1 or more, not \(concurrency)") }
            // The NIO fetcher: real backpressure on Linux and header fields as sent (see SatchelNetwork).
            let fetcher: NIOFetcher
            do throws(FetchError) { fetcher = try NIOFetcher(additionalTrustRoots: trustRoots) } catch {
                throw Output.failure("--trust-root: \(error.reason)")
            }
            let updater = Updater(store: store, fetcher: fetcher, options: UpdaterOptions(
                catalogURL: catalog, trustedKeys: store.configuration.trustedKeys, runtime: runtimeVersion,
                allowDowngrade: allowDowngrade, packages: ids, retry: RetryPolicy(attempts: attempts), channel: releaseChannel,
                sendsReports: !noReports, concurrency: concurrency))
            let bar = LockedProgressBar(enabled: !json)
            let report: UpdateReport
            do {
                report = try await updater.run { event in bar.show(event) }
                try? await fetcher.shutdown()
            } catch {
                try? await fetcher.shutdown()
                bar.clear()
                throw Output.failure(error.description)
            }
            bar.clear()
            if json {
                struct Failure: Encodable { let id: String; let error: String }
                struct Wire: Encodable {
                    let catalog: String
                    let channel: String
                    let serial: Int64
                    let expires: String
                    let signed: Bool
                    let notModified: Bool
                    let trust: Int64?
                    let report: String?
                    let outcomes: [UpdateOutcome]
                    let failures: [Failure]
                }
                Output.json(Wire(
                    catalog: report.catalog.url, channel: report.channel.name, serial: report.catalog.catalog.serial,
                    expires: report.catalog.catalog.expires.description, signed: report.catalog.signed,
                    notModified: report.catalog.notModified, trust: report.catalog.trustVersion, report: report.reportPost, outcomes: report.outcomes,
                    failures: report.failures.map { Failure(id: $0.id, error: $0.error.description) }))
            } else {
                if !report.catalog.signed { Output.note("warning: the catalog is not signature-checked (no --public-key or --root-public-key)") }
                for outcome in report.outcomes {
                    let standing = outcome.decision.map { decision in
                        decision == .outsideRollout || decision == .halted
                            ? " (\(outcome.release ?? "?") is \(decision.rawValue); this device's cohort is \(outcome.cohort.map(String.init) ?? "?"))" : ""
                    } ?? ""
                    switch outcome.action {
                    case .upToDate: Output.line("\(outcome.id) \(outcome.to) is up to date\(standing)")
                    case .rolledBack: Output.line("\(outcome.id) \(outcome.from ?? "?") was revoked: back to \(outcome.to), nothing downloaded")
                    case .installed:
                        let from = outcome.from.map { " (from \($0))" } ?? ""
                        let resumed = outcome.resumed ? ", resumed" : ""
                        let fallback = (outcome.stepFallback.map { "; step not usable: \($0)" } ?? "")
                            + (outcome.diffIndexFallback.map { "; diff index not usable: \($0)" } ?? "")
                            + (outcome.objectsFallback.map { "; objects not usable: \($0)" } ?? "")
                            + (outcome.deltaFallback.map { "; delta not usable: \($0)" } ?? "")
                        let diffs = outcome.diffs.map { diffs in
                            ", \(diffs) as diffs" + (outcome.diffsFallback.map { $0 > 0 ? " (\($0) refused, fetched as objects)" : "" } ?? "")
                        } ?? ""
                        let via: String
                        switch outcome.via {
                        case .step?:
                            let refused = (outcome.diffsFallback ?? 0) > 0 ? ", \(outcome.diffsFallback!) refused and fetched as objects" : ""
                            via = "step from \(outcome.stepFrom ?? "?") (\(outcome.diffs ?? 0) as diffs, \(outcome.objects ?? 0) whole\(refused))"
                        case .objects?:
                            via = "objects (\(outcome.objects ?? 0) fetched\(diffs), manifest patched from \(outcome.patchFrom ?? "?"))"
                        case let other?: via = other.rawValue
                        case nil: via = "?"
                        }
                        Output.line("installed \(outcome.id) \(outcome.to)\(from) via \(via), downloaded \(Output.bytes(outcome.downloadedBytes))\(resumed), on trial\(fallback)\(standing)")
                    }
                }
                for failure in report.failures { Output.error("\(failure.id): \(failure.error)") }
            }
            if !report.failures.isEmpty { throw ExitCode.failure }
        }
    }
}

/// The progress bar behind a lock: the updater reports from whatever task is downloading.
final class LockedProgressBar: @unchecked Sendable {
    private let lock = NSLock()
    private let bar: ProgressBar

    init(enabled: Bool) { bar = ProgressBar(enabled: enabled) }

    func show(_ event: UpdateProgress) {
        lock.withLock {
            switch event {
            case .downloading(let id, let version, let received, let total): bar.update(label: "\(id) \(version)", done: received, total: total)
            case .installing, .finished: bar.clear()
            case .catalog, .planned: break
            }
        }
    }

    func clear() { lock.withLock { bar.clear() } }
}
