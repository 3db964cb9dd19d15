// A fleet of simulated devices for tools/e2e-rollout: each its own small store (the shop's 1.0.0 built in), all
// updating through the library's Updater against one catalog, in one process.
//
//   satchel-fleet --root <dir> --devices 1000 --catalog <url> --public-key <file> --built-in <bundle>
//                 [--concurrency 24] [--fail <version> [--fail-why <word> ...] [--fail-share <percent>]] [--channel <name>]
//
// After its update each device launches its app: a version on trial is confirmed, unless it is `--fail`'s version on
// one of the failing devices (`--fail-share` of them, by device number: device % 100 below the share). Without
// `--fail-why` its trial runs out of launches (a crash loop, reported as `trial`); with it, the app judges the trial
// itself and rolls back with that reason (device n takes the n-th word, cycling), as a container does on a crash or a
// script error. Either way the store falls back and the next check reports it failed, with the reason.
// Prints one JSON object: {"devices": [{device, cohort, release, action, decision, from, to, downloaded, active,
// serial, error?}], "seconds"}.
import ArgumentParser
import Foundation
import SatchelCore
import SatchelNetwork
import SatchelOptions
import SatchelStore
import SatchelUpdate

@main
struct Fleet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "satchel-fleet", abstract: "Simulated devices updating through the library's Updater (tools/e2e-rollout).")

    @Option(help: "The folder the devices' stores go in (device-<n>).") var root: String
    @Option(help: "How many devices.") var devices: Int = 1000
    @Option(help: "The production catalog URL.") var catalog: String
    @Option(help: "The public key the catalog and bundles are checked with.") var publicKey: String
    @Option(help: "The bundle built into every device.") var builtIn: String
    @Option(help: "Devices updating at once.") var concurrency: Int = 24
    @Option(help: "A version that fails its trial on the failing devices.") var fail: String?
    @Option(help: "The reason the app rolls the failing version back with (a report word; repeat to spread devices over several); none: a crash loop.")
    var failWhy: [String] = []
    @Option(help: "The share of devices the version fails on, 0-100 (device % 100 below it).") var failShare: Int = 100
    @Option(help: "The channel the devices follow.") var channel: String?

    func validate() throws {
        guard devices > 0, concurrency > 0 else { throw ValidationError("--devices and --concurrency must be positive") }
        guard (0...100).contains(failShare) else { throw ValidationError("--fail-share must be 0-100") }
        for why in failWhy where !TrialFailure.isWord(why) { throw ValidationError("--fail-why \(why): \(TrialFailureError.notAWord(why))") }
    }

    func run() async throws {
        let started = Date()
        let settings = Settings(
            root: root, catalog: catalog, builtIn: builtIn, key: try KeyFile.verifyingKey(publicKey), fail: try fail.map { try SemanticVersion($0) },
            failReasons: try failWhy.map { try TrialFailure(why: $0) }, failShare: failShare, channel: try channel.map { try ReleaseChannel($0) })
        let fetcher = try NIOFetcher(additionalTrustRoots: [])
        var results: [DeviceResult] = []
        await withTaskGroup(of: DeviceResult.self) { group in
            var next = 0
            while next < min(concurrency, devices) {
                let device = next
                group.addTask { await simulate(device, settings, fetcher: fetcher) }
                next += 1
            }
            for await result in group {
                results.append(result)
                if next < devices {
                    let device = next
                    group.addTask { await simulate(device, settings, fetcher: fetcher) }
                    next += 1
                }
            }
        }
        try? await fetcher.shutdown()
        struct Wire: Encodable { let devices: [DeviceResult]; let seconds: Double }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(Wire(devices: results.sorted { $0.device < $1.device }, seconds: Date().timeIntervalSince(started)))
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }
}

/// What every device shares.
struct Settings: Sendable {
    let root: String
    let catalog: String
    let builtIn: String
    let key: VerifyingKey
    let fail: SemanticVersion?
    /// Empty: the failing version crash-loops until its trial runs out.
    let failReasons: [TrialFailure]
    let failShare: Int
    let channel: ReleaseChannel?

    func fails(_ device: Int, on version: SemanticVersion) -> Bool { version == fail && device % 100 < failShare }
}

struct DeviceResult: Encodable {
    var device: Int
    var cohort: Int?
    var release: String?
    var action: String?
    var decision: String?
    var from: String?
    var to: String?
    var downloaded: Int64
    var active: String?
    /// The reason the device's app rolled `--fail`'s version back with, this run.
    var failedWhy: String?
    /// The serial of the catalog the device got (a CDN may hand a few devices the previous one while it refreshes).
    var serial: Int64?
    var error: String?
}

func simulate(_ device: Int, _ settings: Settings, fetcher: NIOFetcher) async -> DeviceResult {
    var result = DeviceResult(device: device, downloaded: 0)
    do {
        let store = try PackageStore(
            root: settings.root + "/device-\(device)", configuration: StoreConfiguration(trustedKeys: [settings.key], builtIns: [settings.builtIn]))
        let updater = Updater(store: store, fetcher: fetcher, options: UpdaterOptions(
            catalogURL: settings.catalog, trustedKeys: [settings.key], retry: RetryPolicy(attempts: 3, initialDelay: .milliseconds(20), maxDelay: .milliseconds(200)),
            channel: settings.channel))
        let report = try await updater.run()
        result.serial = report.catalog.catalog.serial
        if let outcome = report.outcomes.first {
            result.cohort = outcome.cohort
            result.release = outcome.release
            result.action = outcome.action.rawValue
            result.decision = outcome.decision?.rawValue
            result.from = outcome.from
            result.to = outcome.to
            result.downloaded = outcome.downloadedBytes
        }
        if let failure = report.failures.first { result.error = "\(failure.id): \(failure.error)" }
        // The app starts: a trial is confirmed, or fails: judged by the app with a reason, or crashing until its
        // launches run out.
        for id in try store.packageIDs() {
            guard let state = try store.state(of: id), state.trial != nil else { continue }
            if settings.fails(device, on: state.active) {
                if settings.failReasons.isEmpty {
                    for _ in 0...store.configuration.maxTrialLaunches { _ = try store.beginLaunch() }
                } else {
                    let reason = settings.failReasons[device % settings.failReasons.count]
                    _ = try store.rollback(id, because: reason)
                    result.failedWhy = reason.why
                }
            } else {
                try store.confirm(id)
            }
        }
        result.active = try store.packageIDs().first.flatMap { try store.state(of: $0)?.active.description }
    } catch {
        result.error = "\(error)"
    }
    return result
}
