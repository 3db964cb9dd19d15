// A fleet of simulated devices for tools/e2e-rollout: each its own small store (the shop's 1.0.0 built in), all
// updating through the library's Updater against one catalog, in one process.
//
//   satchel-fleet --root <dir> --devices 1000 --catalog <url> --public-key <file> --built-in <bundle>
//                 [--concurrency 24] [--fail <version>] [--channel <name>]
//
// After its update each device launches its app: a version on trial is confirmed, unless it is `--fail`'s version,
// whose trial then runs out of launches (a crash loop), so the store falls back and the next check reports it failed.
// Prints one JSON object: {"devices": [{device, cohort, release, action, decision, from, to, downloaded, active,
// serial, error?}], "seconds"}.
import Foundation
import SatchelCore
import SatchelNetwork
import SatchelOptions
import SatchelStore
import SatchelUpdate

struct Arguments {
    var root = ""
    var devices = 1000
    var catalog = ""
    var publicKey = ""
    var builtIn = ""
    var concurrency = 24
    var fail: SemanticVersion?
    var channel: ReleaseChannel?

    init(_ arguments: [String]) throws {
        var index = 0
        func value() throws -> String {
            index += 1
            guard index < arguments.count else { throw FleetError.usage("\(arguments[index - 1]) needs a value") }
            return arguments[index]
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--root": root = try value()
            case "--devices": devices = Int(try value()) ?? -1
            case "--catalog": catalog = try value()
            case "--public-key": publicKey = try value()
            case "--built-in": builtIn = try value()
            case "--concurrency": concurrency = Int(try value()) ?? -1
            case "--fail": fail = try SemanticVersion(try value())
            case "--channel": channel = try ReleaseChannel(try value())
            default: throw FleetError.usage("unknown argument \(arguments[index])")
            }
            index += 1
        }
        guard !root.isEmpty, !catalog.isEmpty, !publicKey.isEmpty, !builtIn.isEmpty, devices > 0, concurrency > 0 else {
            throw FleetError.usage("--root, --catalog, --public-key and --built-in are required; --devices and --concurrency positive")
        }
    }
}

enum FleetError: Error, CustomStringConvertible {
    case usage(String)
    var description: String {
        switch self {
        case .usage(let why): "satchel-fleet: \(why)"
        }
    }
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
    /// The serial of the catalog the device got (a CDN may hand a few devices the previous one while it refreshes).
    var serial: Int64?
    var error: String?
}

func simulate(_ device: Int, _ arguments: Arguments, key: VerifyingKey, fetcher: NIOFetcher) async -> DeviceResult {
    var result = DeviceResult(device: device, downloaded: 0)
    do {
        let store = try PackageStore(
            root: arguments.root + "/device-\(device)", configuration: StoreConfiguration(trustedKeys: [key], builtIns: [arguments.builtIn]))
        let updater = Updater(store: store, fetcher: fetcher, options: UpdaterOptions(
            catalogURL: arguments.catalog, trustedKeys: [key], retry: RetryPolicy(attempts: 3, initialDelay: .milliseconds(20), maxDelay: .milliseconds(200)),
            channel: arguments.channel))
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
        // The app starts: a trial is confirmed, or crashes until its launches run out.
        for id in try store.packageIDs() {
            guard let state = try store.state(of: id), state.trial != nil else { continue }
            if state.active == arguments.fail {
                for _ in 0...store.configuration.maxTrialLaunches { _ = try store.beginLaunch() }
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

let started = Date()
do {
    let arguments = try Arguments(Array(CommandLine.arguments.dropFirst()))
    let key = try KeyFile.verifyingKey(arguments.publicKey)
    let fetcher = try NIOFetcher(additionalTrustRoots: [])
    var results: [DeviceResult] = []
    await withTaskGroup(of: DeviceResult.self) { group in
        var next = 0
        while next < min(arguments.concurrency, arguments.devices) {
            let device = next
            group.addTask { await simulate(device, arguments, key: key, fetcher: fetcher) }
            next += 1
        }
        for await result in group {
            results.append(result)
            if next < arguments.devices {
                let device = next
                group.addTask { await simulate(device, arguments, key: key, fetcher: fetcher) }
                next += 1
            }
        }
    }
    try? await fetcher.shutdown()
    struct Wire: Encodable { let devices: [DeviceResult]; let seconds: Double }
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    let data = try encoder.encode(Wire(devices: results.sorted { $0.device < $1.device }, seconds: Date().timeIntervalSince(started)))
    FileHandle.standardOutput.write(data)
    FileHandle.standardOutput.write(Data("\n".utf8))
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(64)
}
