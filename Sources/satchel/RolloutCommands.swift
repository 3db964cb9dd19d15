import ArgumentParser
import Foundation
import SatchelCore
import SatchelOptions
import SatchelReports
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The options every command that changes a catalog in place takes.
struct CatalogEditOptions: ParsableArguments {
    @Option(help: "The catalog.json to change in place (its serial grows by one).", completion: .file())
    var catalog: String
    @Option(
        name: .customLong("sign-key"),
        help: "Re-sign it with this Ed25519 private key file (writes <catalog>.sig); repeatable: with two or more, every key also signs <catalog>.sigs.",
        completion: .file())
    var signKeys: [String] = []
    @Option(help: "Also move its expiry to this long from now: 90s, 45m, 12h, 30d, 2w.")
    var expiresIn: ExpiryDuration?
    @Option(
        help: ArgumentHelp(
            "A trust folder: the catalog names its newest version (published in trust/ beside production's catalog) instead of the one it named.",
            valueName: "dir"),
        completion: .directory)
    var trust: String?

    func save(_ catalog: Catalog) throws {
        let keys = try signKeys.map { try KeyFile.signingKey($0) }
        if keys.isEmpty, FileManager.default.fileExists(atPath: self.catalog + ".sig") {
            throw Output.failure("\(self.catalog) is signed (\(self.catalog).sig); pass --sign-key to sign the changed catalog")
        }
        let trustDocument = try trust.map { try TrustFolder.publish(from: $0, into: CatalogFile.productionFolder(of: self.catalog)) }
        var result = catalog
        do {
            if let expiresIn { result = try result.with(expires: Timestamp(secondsSinceEpoch: CatalogFile.now().secondsSinceEpoch + expiresIn.seconds)) }
            // The trust version the catalog named is kept unless --trust names another.
            if let trustDocument { result = try result.with(trust: trustDocument.version) }
        } catch {
            throw Output.failure(error.description)
        }
        try CatalogFile.write(result, to: self.catalog, keys: keys)
        CatalogFile.warnShortOfThreshold(result, at: self.catalog, keys: keys, trust: trustDocument)
    }
}

extension Satchel {
    struct RolloutCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rollout",
            abstract: "Stage, halt or revoke a version in a catalog, and watch or advance its rollout from device reports.",
            discussion: """
                Staged, halted and revoked versions live in the catalog's rollouts, which updaters from before rollouts \
                never read: they only ever get versions released to everyone (docs/formats.md, "Rollouts"). A version \
                released to everyone is watched (the catalog's watches) until rollout advance has seen enough devices \
                confirm it, and halted like a staged one if it fails.
                """,
            subcommands: [Set.self, Halt.self, Revoke.self, Status.self, Advance.self, Report.self])

        struct Target: ParsableArguments {
            @Argument(help: "The package id.")
            var id: String
            @Argument(help: "The version.")
            var version: String

            func find(in catalog: Catalog) throws -> (entry: CatalogEntry, rollout: Rollout?) {
                let id = try parseID(self.id)
                let version = try parseVersion(self.version)
                if let entry = catalog.packages.first(where: { $0.id == id && $0.version == version }) { return (entry, nil) }
                if let rollout = catalog.rollouts.first(where: { $0.entry.id == id && $0.entry.version == version }) { return (rollout.entry, rollout) }
                throw Output.failure("the catalog does not list \(id) \(version)")
            }
        }

        /// `target` moved to `state` at `permille` (released to everyone when staged at 1000, and watched from now), a
        /// new serial. A hand-made decision replaces the automatic one, so any watch on the version ends.
        static func change(_ catalog: Catalog, _ target: (entry: CatalogEntry, rollout: Rollout?), state: RolloutState, permille: Int) throws -> Catalog {
            let same = { (entry: CatalogEntry) in entry.id == target.entry.id && entry.version == target.entry.version }
            var packages = catalog.packages.filter { !same($0) }
            var rollouts = catalog.rollouts.filter { !same($0.entry) }
            var watches = catalog.watches.filter { !$0.watches(target.entry) }
            let now = CatalogFile.now()
            if state == .staged, permille >= 1000 {
                packages.append(target.entry)
                watches.append(ReleaseWatch(id: target.entry.id, version: target.entry.version, since: now))
            } else {
                rollouts.append(Rollout(entry: target.entry, permille: permille, state: state, since: now))
            }
            do { return try catalog.with(packages: packages, rollouts: rollouts, watches: watches, serial: catalog.serial + 1) } catch {
                throw Output.failure(error.description)
            }
        }

        struct Set: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Offer a version to a share of devices (sticky cohorts per release); 100 releases it to every device.",
                discussion: """
                    Raising the share never takes the version from a device that has it. Setting a share on a halted or \
                    revoked version stages it again. 100 also starts a watch: rollout advance halts the released version \
                    if it fails, until enough devices confirmed it.
                    """)
            @OptionGroup var target: Target
            @Option(help: "The share of devices, 0-100, tenths allowed (0.5, 12.5).")
            var percent: String
            @OptionGroup var edit: CatalogEditOptions

            func run() throws {
                guard let permille = Rollout.permille(fromPercent: percent) else { throw ValidationError("--percent \(percent): must be 0-100 with at most one decimal") }
                let catalog = try CatalogFile.read(edit.catalog)
                let found = try target.find(in: catalog)
                try edit.save(try RolloutCommand.change(catalog, found, state: .staged, permille: permille))
                Output.line(permille >= 1000 ? "released \(found.entry.id) \(found.entry.version) to every device" : "staged \(found.entry.id) \(found.entry.version) at \(Rollout.percentText(permille: permille)) %")
            }
        }

        struct Halt: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "No new device gets the version; devices that have it keep it.")
            @OptionGroup var target: Target
            @OptionGroup var edit: CatalogEditOptions

            func run() throws {
                let catalog = try CatalogFile.read(edit.catalog)
                let found = try target.find(in: catalog)
                try edit.save(try RolloutCommand.change(catalog, found, state: .halted, permille: found.rollout?.permille ?? 1000))
                Output.line("halted \(found.entry.id) \(found.entry.version)")
            }
        }

        struct Revoke: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Devices on the version go back to their fallback at their next update check, downloading nothing.")
            @OptionGroup var target: Target
            @OptionGroup var edit: CatalogEditOptions

            func run() throws {
                let catalog = try CatalogFile.read(edit.catalog)
                let found = try target.find(in: catalog)
                try edit.save(try RolloutCommand.change(catalog, found, state: .revoked, permille: found.rollout?.permille ?? 1000))
                Output.line("revoked \(found.entry.id) \(found.entry.version)")
            }
        }

        struct ReportOptions: ParsableArguments {
            @Option(
                help: ArgumentHelp(
                    "A reports file: JSON lines (satchel serve --reports) or an access log's lines in the nginx format of docs/formats.md; gzip when it ends in .gz. Repeat it for rotated logs.",
                    valueName: "file"),
                completion: .file())
            var reports: [String] = []
            /// The counting as it was before reports were streamed: every file in memory, every line parsed by
            /// `ReportRecord.parse`, `VersionStatus.compute` over the records. Kept for tools/bench-rollout, which
            /// checks the two give the same output; not documented.
            @Flag(name: .customLong("reference-count"), help: .hidden)
            var referenceCount = false

            func validate() throws {
                guard !reports.isEmpty else { throw ValidationError("give at least one --reports file") }
            }

            var named: String { reports.joined(separator: ", ") }

            /// Every record that parses, by the reference parser; the other lines counted.
            func referenceRecords() throws -> (records: [ReportRecord], skipped: Int) {
                var records: [ReportRecord] = []
                var skipped = 0
                for path in reports {
                    let data = try Output.failing { () throws(ReportInputError) in try ReportReader.contents(path) }
                    for line in data.split(separator: 0x0A) where !line.isEmpty {
                        if let record = try? ReportRecord.parse(line: Array(line)) { records.append(record) } else { skipped += 1 }
                    }
                }
                return (records, skipped)
            }

            /// The reports counted (after the state at `state`, when given, which is then brought up to date).
            func count(_ catalog: Catalog, state: String? = nil) throws -> (statuses: [VersionStatus], records: Int, skipped: Int, save: () throws -> Void) {
                if referenceCount {
                    guard state == nil else { throw ValidationError("--reference-count reads every line; it takes no --state") }
                    let (records, skipped) = try referenceRecords()
                    return (VersionStatus.compute(catalog, records: records), records.count, skipped, {})
                }
                let result = try Output.failing { () throws(ReportInputError) in try ReportReader.read(reports, state: state) }
                for note in result.notes { Output.note(note) }
                let save = {
                    guard let state else { return }
                    try Output.failing { () throws(ReportInputError) in try ReportReader.save(result, to: state) }
                }
                return (result.tally.statuses(catalog), result.tally.records, result.tally.skipped, save)
            }
        }

        struct Status: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Per version: rollout share and state, devices offered, installed, confirmed and failed, the failure rate with its 95 % interval, and the failures by reason.")
            @Option(help: "The catalog.json.", completion: .file())
            var catalog: String
            @OptionGroup var reports: ReportOptions
            @Option(help: "Keep the counts in this file between runs, so the next run reads only what the reports files gained (created when missing).", completion: .file())
            var state: String?
            @Flag(help: "Print one JSON object: {versions: [{id, version, percent, state, offered, installed, confirmed, failed, failureRate, interval, failuresByReason, since?, watched}], records, skipped}.")
            var json = false

            func run() throws {
                let catalog = try CatalogFile.read(self.catalog)
                let (rows, records, skipped, save) = try reports.count(catalog, state: state)
                try save()
                if json {
                    struct Wire: Encodable { let versions: [VersionStatus]; let records: Int; let skipped: Int }
                    Output.json(Wire(versions: rows, records: records, skipped: skipped))
                    return
                }
                Output.line("id          version     percent  state     offered  installed  confirmed  failed  failure rate (95 % interval)  failures by reason")
                for row in rows {
                    // A watched release is still `released` to updaters; the mark says rollout advance may yet halt it.
                    let state = row.state + (row.watched ? "*" : "")
                    Output.line(
                        row.id.padding(toLength: 12, withPad: " ", startingAt: 0) + row.version.padding(toLength: 12, withPad: " ", startingAt: 0)
                            + (Rollout.percentText(row.percent) + " %").padding(toLength: 9, withPad: " ", startingAt: 0) + state.padding(toLength: 10, withPad: " ", startingAt: 0)
                            + String(format: "%7d  %9d  %9d  %6d  %.4f [%.4f, %.4f]", row.offered, row.installed, row.confirmed, row.failed, row.failureRate, row.interval[0], row.interval[1])
                            + (row.failuresByReason.isEmpty ? "" : "  " + row.reasonsText))
                }
                if rows.contains(where: \.watched) { Output.line("* watched: rollout advance may still halt it") }
                if skipped > 0 { Output.note("\(skipped) line\(skipped == 1 ? "" : "s") of \(reports.named) did not parse as a report") }
            }
        }

        struct Advance: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Raise each staged version one step while its failure rate is clearly below the threshold, halt it (or a watched release) once clearly above, else wait.",
                discussion: """
                    Counts only reports received since the version's current step began, or since it was released for a \
                    watched version (the catalog records when), so a second run on the same reports changes nothing. A \
                    halted release leaves packages for rollouts (halted at 100 %), so no updater, older ones included, \
                    offers it to a new device. Meant to run in CI on a timer; writes and signs the catalog only when a step \
                    was taken.
                    """)
            @OptionGroup var edit: CatalogEditOptions
            @OptionGroup var reports: ReportOptions
            @Option(help: "The shares to step through, in percent (e.g. 1,5,25,100).")
            var schedule: String
            @Option(help: "The highest acceptable failure rate, 0-1 (e.g. 0.02).")
            var maxFailureRate: Double
            @Option(help: "Devices that must have tried the version before it is raised.")
            var minDevices: Int = 100
            @Option(help: "Devices that must have confirmed a watched release, with no halt, before its watch ends.")
            var confirmations: Int = 1000
            @Option(help: "Append one JSON line per decision to this file (created when missing).", completion: .file())
            var log: String?
            @Option(help: "Keep the counts in this file between runs, so the next run reads only what the reports files gained (created when missing).", completion: .file())
            var state: String?
            @Flag(help: "Print one JSON object: {changed, serial, steps: [{id, version, action, to?, reason?, status}]}.")
            var json = false

            struct Step: Encodable {
                let id: String
                let version: String
                let action: String
                let to: Double?
                let reason: String?
                let status: VersionStatus
            }

            func run() throws {
                let steps = schedule.split(separator: ",").map { Rollout.permille(fromPercent: $0.trimmingCharacters(in: .whitespaces)) }
                guard !steps.isEmpty, steps.allSatisfy({ $0 != nil }), steps.map({ $0! }) == steps.map({ $0! }).sorted() else {
                    throw ValidationError("--schedule \(schedule): must be increasing percentages such as 1,5,25,100")
                }
                guard (0...1).contains(maxFailureRate) else { throw ValidationError("--max-failure-rate must be between 0 and 1") }
                guard confirmations > 0 else { throw ValidationError("--confirmations must be positive") }
                // Opened before anything changes: a decision taken must never go unlogged because the log cannot be written.
                let logFile = try log.map { try DecisionLog(path: $0) }
                let start = try CatalogFile.read(edit.catalog)
                var catalog = start
                let (statuses, _, _, saveState) = try reports.count(catalog, state: state)
                func status(_ id: PackageID, _ version: SemanticVersion) -> VersionStatus? {
                    statuses.first { $0.id == id.value && $0.version == version.description }
                }
                let now = CatalogFile.now()
                var taken: [Step] = []
                var changed = false
                func take(_ next: Catalog?) {
                    guard let next else { return }
                    catalog = next
                    changed = true
                }
                let haltReason = { (status: VersionStatus) in
                    String(format: "failure rate's interval [%.4f, %.4f] is above %.4f", status.interval[0], status.interval[1], maxFailureRate)
                }
                for rollout in start.rollouts where rollout.state == .staged {
                    guard let status = status(rollout.entry.id, rollout.entry.version) else { continue }
                    let step = RolloutStep.decide(rollout, status: status, schedule: steps.map { $0! }, maxFailureRate: maxFailureRate, minDevices: minDevices)
                    do { take(try RolloutStep.apply(step, to: rollout, in: catalog, now: now)) } catch { throw Output.failure(error.description) }
                    let (action, to, reason): (String, Double?, String?) = switch step {
                    case .advance(let permille): ("advanced", Double(permille) / 10, nil)
                    case .release: ("released", 100, nil)
                    case .halt: ("halted", nil, haltReason(status))
                    case .wait(let why): ("waiting", nil, why)
                    }
                    taken.append(Step(id: rollout.entry.id.value, version: rollout.entry.version.description, action: action, to: to, reason: reason, status: status))
                }
                // Only the watches the run began with: one released just now has no reports since its release yet.
                for watch in start.watches {
                    guard let status = status(watch.id, watch.version) else { continue }
                    let step = WatchStep.decide(watch, status: status, maxFailureRate: maxFailureRate, confirmations: confirmations)
                    do { take(try WatchStep.apply(step, to: watch, in: catalog, now: now)) } catch { throw Output.failure(error.description) }
                    let (action, reason): (String, String?) = switch step {
                    case .halt: ("halted", haltReason(status))
                    case .end: ("watch-ended", "\(status.confirmed) devices confirmed it")
                    case .watch(let why): ("watching", why)
                    }
                    taken.append(Step(id: watch.id.value, version: watch.version.description, action: action, to: nil, reason: reason, status: status))
                }
                if changed { try edit.save(catalog) }
                if let logFile {
                    for step in taken {
                        try logFile.append(DecisionLog.Line(at: now, serial: catalog.serial, step: step, maxFailureRate: maxFailureRate))
                    }
                }
                // Last: the counts hold for any step's start, so the state is the same whether or not a step was taken,
                // and a run that failed before here leaves the previous state, which the next run reads on from.
                try saveState()
                if json {
                    struct Wire: Encodable { let changed: Bool; let serial: Int64; let steps: [Step] }
                    Output.json(Wire(changed: changed, serial: catalog.serial, steps: taken))
                } else {
                    if taken.isEmpty { Output.line("no staged or watched version in \(edit.catalog)") }
                    for step in taken {
                        Output.line("\(step.id) \(step.version): \(step.action)\(step.to.map { " to \(Rollout.percentText($0)) %" } ?? "")\(step.reason.map { " (\($0))" } ?? "")")
                    }
                }
            }
        }

        /// `rollout advance --log`: JSON lines other tools read (a report page among them), so the shape is fixed and
        /// every key is always present (`to` and `reason` as null). Each line is one `write` to a file opened for
        /// appending, so a reader, or another run appending, never sees half a line.
        final class DecisionLog {
            struct Line: Encodable {
                let at: Timestamp
                let serial: Int64
                let step: Advance.Step
                let maxFailureRate: Double

                enum Key: String, CodingKey { case at, serial, id, version, action, to, reason, maxFailureRate, status }

                func encode(to encoder: Encoder) throws {
                    var container = encoder.container(keyedBy: Key.self)
                    try container.encode(at.description, forKey: .at)
                    try container.encode(serial, forKey: .serial)
                    try container.encode(step.id, forKey: .id)
                    try container.encode(step.version, forKey: .version)
                    try container.encode(step.action, forKey: .action)
                    if let to = step.to { try container.encode(to, forKey: .to) } else { try container.encodeNil(forKey: .to) }
                    if let reason = step.reason { try container.encode(reason, forKey: .reason) } else { try container.encodeNil(forKey: .reason) }
                    try container.encode(maxFailureRate, forKey: .maxFailureRate)
                    try container.encode(step.status, forKey: .status)
                }
            }

            let path: String
            private let descriptor: Int32

            init(path: String) throws {
                descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
                guard descriptor >= 0 else { throw Output.failure("cannot open the log \(path): \(String(cString: strerror(errno)))") }
                self.path = path
            }

            deinit { close(descriptor) }

            func append(_ line: Line) throws {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                let bytes = Array(try encoder.encode(line)) + [0x0A]
                let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                guard written == bytes.count else {
                    throw Output.failure("cannot append to the log \(path): \(written < 0 ? String(cString: strerror(errno)) : "wrote \(written) of \(bytes.count) bytes")")
                }
            }
        }
    }
}
