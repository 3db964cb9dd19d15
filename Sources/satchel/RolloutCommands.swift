import ArgumentParser
import Foundation
import SatchelCore
import SatchelOptions

/// The options every command that changes a catalog in place takes.
struct CatalogEditOptions: ParsableArguments {
    @Option(help: "The catalog.json to change in place (its serial grows by one).", completion: .file())
    var catalog: String
    @Option(help: "Re-sign it with this Ed25519 private key file (writes <catalog>.sig).", completion: .file())
    var signKey: String?
    @Option(help: "Also move its expiry to this long from now: 90s, 45m, 12h, 30d, 2w.")
    var expiresIn: ExpiryDuration?

    func save(_ catalog: Catalog) throws {
        let key = try signKey.map { try KeyFile.signingKey($0) }
        if key == nil, FileManager.default.fileExists(atPath: self.catalog + ".sig") {
            throw Output.failure("\(self.catalog) is signed (\(self.catalog).sig); pass --sign-key to sign the changed catalog")
        }
        var result = catalog
        if let expiresIn {
            do { result = try catalog.with(expires: Timestamp(secondsSinceEpoch: CatalogFile.now().secondsSinceEpoch + expiresIn.seconds)) } catch {
                throw Output.failure(error.description)
            }
        }
        try CatalogFile.write(result, to: self.catalog, key: key)
    }
}

extension Satchel {
    struct RolloutCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rollout",
            abstract: "Stage, halt or revoke a version in a catalog, and watch or advance its rollout from device reports.",
            discussion: """
                Staged, halted and revoked versions live in the catalog's rollouts, which updaters from before rollouts \
                never read: they only ever get versions released to everyone (docs/formats.md, "Rollouts").
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

        /// `target` moved to `state` at `permille` (released to everyone when staged at 1000), a new serial.
        static func change(_ catalog: Catalog, _ target: (entry: CatalogEntry, rollout: Rollout?), state: RolloutState, permille: Int) throws -> Catalog {
            let same = { (entry: CatalogEntry) in entry.id == target.entry.id && entry.version == target.entry.version }
            var packages = catalog.packages.filter { !same($0) }
            var rollouts = catalog.rollouts.filter { !same($0.entry) }
            if state == .staged, permille >= 1000 {
                packages.append(target.entry)
            } else {
                rollouts.append(Rollout(entry: target.entry, permille: permille, state: state, since: CatalogFile.now()))
            }
            do { return try catalog.with(packages: packages, rollouts: rollouts, serial: catalog.serial + 1) } catch { throw Output.failure(error.description) }
        }

        struct Set: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Offer a version to a share of devices (sticky cohorts per release); 100 releases it to every device.",
                discussion: "Raising the share never takes the version from a device that has it. Setting a share on a halted or revoked version stages it again.")
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
            @Option(help: "The reports file (JSON lines: satchel serve --reports, or an access log in the same shape).", completion: .file())
            var reports: String

            /// Every record that parses; the others are counted, never fatal (a log holds other lines too).
            func records() throws -> (records: [ReportRecord], skipped: Int) {
                guard let data = FileManager.default.contents(atPath: reports) else { throw Output.failure("cannot read reports \(reports)") }
                var records: [ReportRecord] = []
                var skipped = 0
                for line in data.split(separator: 0x0A) where !line.isEmpty {
                    if let record = try? ReportRecord.parse(line: Array(line)) { records.append(record) } else { skipped += 1 }
                }
                return (records, skipped)
            }
        }

        struct Status: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Per version: rollout share and state, devices offered, installed, confirmed and failed, and the failure rate with its 95 % interval.")
            @Option(help: "The catalog.json.", completion: .file())
            var catalog: String
            @OptionGroup var reports: ReportOptions
            @Flag(help: "Print one JSON object: {versions: [{id, version, percent, state, offered, installed, confirmed, failed, failureRate, interval}]}.")
            var json = false

            func run() throws {
                let catalog = try CatalogFile.read(self.catalog)
                let (records, skipped) = try reports.records()
                let rows = VersionStatus.compute(catalog, records: records)
                if json {
                    struct Wire: Encodable { let versions: [VersionStatus]; let records: Int; let skipped: Int }
                    Output.json(Wire(versions: rows, records: records.count, skipped: skipped))
                    return
                }
                Output.line("id          version     percent  state     offered  installed  confirmed  failed  failure rate (95 % interval)")
                for row in rows {
                    Output.line(
                        row.id.padding(toLength: 12, withPad: " ", startingAt: 0) + row.version.padding(toLength: 12, withPad: " ", startingAt: 0)
                            + (Rollout.percentText(row.percent) + " %").padding(toLength: 9, withPad: " ", startingAt: 0) + row.state.padding(toLength: 10, withPad: " ", startingAt: 0)
                            + String(format: "%7d  %9d  %9d  %6d  %.4f [%.4f, %.4f]", row.offered, row.installed, row.confirmed, row.failed, row.failureRate, row.interval[0], row.interval[1]))
                }
                if skipped > 0 { Output.note("\(skipped) line\(skipped == 1 ? "" : "s") of \(reports.reports) did not parse as a report") }
            }
        }

        struct Advance: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Raise each staged version one step while its failure rate is clearly below the threshold, halt it once clearly above, else wait.",
                discussion: """
                    Counts only reports received since the version's current step began (the catalog records when), so a \
                    second run on the same reports changes nothing. Meant to run in CI on a timer; writes and signs the \
                    catalog only when a step was taken.
                    """)
            @OptionGroup var edit: CatalogEditOptions
            @OptionGroup var reports: ReportOptions
            @Option(help: "The shares to step through, in percent (e.g. 1,5,25,100).")
            var schedule: String
            @Option(help: "The highest acceptable failure rate, 0-1 (e.g. 0.02).")
            var maxFailureRate: Double
            @Option(help: "Devices that must have tried the version before it is raised.")
            var minDevices: Int = 100
            @Flag(help: "Print one JSON object: {changed, serial, steps: [{id, version, action, to?, reason?, status}]}.")
            var json = false

            func run() throws {
                let steps = schedule.split(separator: ",").map { Rollout.permille(fromPercent: $0.trimmingCharacters(in: .whitespaces)) }
                guard !steps.isEmpty, steps.allSatisfy({ $0 != nil }), steps.map({ $0! }) == steps.map({ $0! }).sorted() else {
                    throw ValidationError("--schedule \(schedule): must be increasing percentages such as 1,5,25,100")
                }
                guard (0...1).contains(maxFailureRate) else { throw ValidationError("--max-failure-rate must be between 0 and 1") }
                var catalog = try CatalogFile.read(edit.catalog)
                let (records, _) = try reports.records()
                let statuses = VersionStatus.compute(catalog, records: records)
                struct Step: Encodable { let id: String; let version: String; let action: String; let to: Double?; let reason: String?; let status: VersionStatus }
                var taken: [Step] = []
                var changed = false
                for rollout in catalog.rollouts where rollout.state == .staged {
                    guard let status = statuses.first(where: { $0.id == rollout.entry.id.value && $0.version == rollout.entry.version.description }) else { continue }
                    let step = RolloutStep.decide(rollout, status: status, schedule: steps.map { $0! }, maxFailureRate: maxFailureRate, minDevices: minDevices)
                    let next: Catalog?
                    do { next = try RolloutStep.apply(step, to: rollout, in: catalog, now: CatalogFile.now()) } catch { throw Output.failure(error.description) }
                    if let next {
                        catalog = next
                        changed = true
                    }
                    let (action, to, reason): (String, Double?, String?) = switch step {
                    case .advance(let permille): ("advanced", Double(permille) / 10, nil)
                    case .release: ("released", 100, nil)
                    case .halt: ("halted", nil, String(format: "failure rate's interval [%.4f, %.4f] is above %.4f", status.interval[0], status.interval[1], maxFailureRate))
                    case .wait(let why): ("waiting", nil, why)
                    }
                    taken.append(Step(id: rollout.entry.id.value, version: rollout.entry.version.description, action: action, to: to, reason: reason, status: status))
                }
                if changed { try edit.save(catalog) }
                if json {
                    struct Wire: Encodable { let changed: Bool; let serial: Int64; let steps: [Step] }
                    Output.json(Wire(changed: changed, serial: catalog.serial, steps: taken))
                } else {
                    if taken.isEmpty { Output.line("no staged version in \(edit.catalog)") }
                    for step in taken {
                        Output.line("\(step.id) \(step.version): \(step.action)\(step.to.map { " to \(Rollout.percentText($0)) %" } ?? "")\(step.reason.map { " (\($0))" } ?? "")")
                    }
                }
            }
        }
    }
}
