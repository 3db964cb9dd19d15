import Foundation
import Testing
@testable import SatchelCore

private func v(_ raw: String) -> SemanticVersion { try! SemanticVersion(raw) }
private let shop = try! PackageID("shop")
private let sha = String(repeating: "a", count: 64)
private func entry(_ version: String, minRuntime: String? = nil) -> CatalogEntry {
    CatalogEntry(id: shop, version: v(version), url: "shop-\(version).zip", size: 1000, sha256: sha, minRuntime: minRuntime.map(v))
}
private let since = Timestamp(secondsSinceEpoch: 1_800_000_000)

@Suite("Cohorts, tokens and percentages")
struct CohortTests {
    @Test("a cohort is stable per install and release, differs across releases, and spreads evenly over 0-999")
    func cohorts() {
        let devices = (0..<4000).map { index in ReleaseCohort(installID: Array("device-\(index)".utf8)) }
        let first = devices.map { $0.cohort(shop, v("1.1.0")) }
        #expect(first == devices.map { $0.cohort(shop, v("1.1.0")) })
        #expect(first.allSatisfy { (0..<1000).contains($0) })
        // About 10 % below 100 (binomial: 400 ± 3 sigma of 19).
        let early = first.filter { $0 < 100 }.count
        #expect((343...457).contains(early), "\(early)")
        // The first 10 % of the next release are other devices: about a tenth of this release's first 10 %.
        let next = devices.map { $0.cohort(shop, v("1.2.0")) }
        let both = zip(first, next).filter { $0 < 100 && $1 < 100 }.count
        #expect(both < 80, "\(both) devices first in both releases")
        // Tokens: 16 hex digits, per release, unlinkable across releases.
        let token = devices[0].token(shop, v("1.1.0"))
        #expect(token.count == 16 && token != devices[0].token(shop, v("1.2.0")) && token != devices[1].token(shop, v("1.1.0")))
    }

    @Test("percentages with at most one decimal become permille; anything else is refused")
    func percentages() {
        #expect(Rollout.permille(fromPercent: "1") == 10 && Rollout.permille(fromPercent: "12.5") == 125 && Rollout.permille(fromPercent: "100") == 1000)
        #expect(Rollout.permille(fromPercent: "0.1") == 1 && Rollout.permille(fromPercent: "0") == 0)
        for bad in ["", "-1", "100.1", "1.25", "ten", "1.", ".5", "1e2"] { #expect(Rollout.permille(fromPercent: bad) == nil, "\(bad)") }
        #expect(Rollout(entry: entry("1.0.0"), permille: 125, state: .staged, since: since).percent == "12.5")
    }

    @Test("the Wilson interval: honest about small counts, narrowing with more devices")
    func wilson() {
        let none = WilsonInterval.bounds(failures: 0, trials: 0)
        #expect(none.low == 0 && none.high == 1)
        let small = WilsonInterval.bounds(failures: 0, trials: 3)
        #expect(small.low == 0 && small.high > 0.5)
        let large = WilsonInterval.bounds(failures: 50, trials: 1000)
        #expect(abs(large.low - 0.0382) < 0.001 && abs(large.high - 0.0653) < 0.001, "\(large)")
    }
}

@Suite("Catalog rollouts and serials")
struct CatalogRolloutTests {
    @Test("rollouts, serial and report URL round-trip canonically; a version is listed once; permille is bounded")
    func roundTrip() throws {
        let catalog = try Catalog(
            expires: since, packages: [entry("1.0.0")], serial: 42, reportURL: "https://r.example/reports",
            rollouts: [Rollout(entry: entry("1.1.0"), permille: 100, state: .staged, since: since)])
        #expect(try Catalog.decode(catalog.canonicalBytes) == catalog)
        let text = String(decoding: catalog.canonicalBytes, as: UTF8.self)
        #expect(text.contains(#""reports":"https://r.example/reports","rollouts":[{"entry":{"#) && text.contains(#""serial":42"#))
        #expect(catalog.packageIDs == [shop] && catalog.entries(for: shop).count == 1 && catalog.rollouts(for: shop).count == 1)
        #expect(throws: CatalogError.duplicateEntry(id: "shop", version: "1.0.0")) {
            try Catalog(expires: since, packages: [entry("1.0.0")], rollouts: [Rollout(entry: entry("1.0.0"), permille: 1, state: .staged, since: since)])
        }
        #expect(throws: CatalogError.self) {
            try Catalog(expires: since, packages: [], rollouts: [Rollout(entry: entry("1.1.0"), permille: 1000, state: .staged, since: since)])
        }
    }

    @Test("an updater from before rollouts reads only packages: staged, halted and revoked versions are invisible to it")
    func olderReadersSeeOnlyReleased() throws {
        let catalog = try Catalog(
            expires: since, packages: [entry("1.0.0")], serial: 3,
            rollouts: [Rollout(entry: entry("1.1.0"), permille: 500, state: .staged, since: since), Rollout(entry: entry("1.2.0"), permille: 0, state: .halted, since: since)])
        // The reader of today's schema 1 minus the rollouts field: what an older updater decodes.
        struct OldWire: Decodable {
            struct Entry: Decodable { let version: String }
            let schema: Int
            let packages: [Entry]
        }
        let old = try JSONDecoder().decode(OldWire.self, from: Data(catalog.canonicalBytes))
        #expect(old.schema == 1 && old.packages.map(\.version) == ["1.0.0"])
    }

    @Test("watches round-trip canonically after rollouts, are omitted when none, and only name versions in packages, once")
    func watches() throws {
        let watch = ReleaseWatch(id: shop, version: v("1.1.0"), since: since)
        let catalog = try Catalog(expires: since, packages: [entry("1.0.0"), entry("1.1.0")], serial: 7, watches: [watch])
        #expect(try Catalog.decode(catalog.canonicalBytes) == catalog)
        let text = String(decoding: catalog.canonicalBytes, as: UTF8.self)
        #expect(text.hasSuffix(#""serial":7,"watches":[{"id":"shop","since":"2027-01-15T08:00:00Z","version":"1.1.0"}]}"#), "\(text)")
        #expect(catalog.watch(of: entry("1.1.0")) == watch && catalog.watch(of: entry("1.0.0")) == nil)
        #expect(!String(decoding: try catalog.with(watches: []).canonicalBytes, as: UTF8.self).contains("watches"))
        // An updater of today decodes it and, as an older one, still reads the released version in packages.
        struct OldWire: Decodable {
            struct Entry: Decodable { let version: String }
            let schema: Int
            let packages: [Entry]
        }
        #expect(try JSONDecoder().decode(OldWire.self, from: Data(catalog.canonicalBytes)).packages.map(\.version) == ["1.0.0", "1.1.0"])
        #expect(throws: CatalogError.invalidEntry("shop 1.2.0", reason: "is watched but not in packages")) {
            try catalog.with(watches: [ReleaseWatch(id: shop, version: v("1.2.0"), since: since)])
        }
        #expect(throws: CatalogError.invalidEntry("shop 1.1.0", reason: "is watched twice")) { try catalog.with(watches: [watch, watch]) }
        // A staged version is judged by its rollout's step, not a watch.
        #expect(throws: CatalogError.invalidEntry("shop 1.2.0", reason: "is watched but not in packages")) {
            try catalog.with(rollouts: [Rollout(entry: entry("1.2.0"), permille: 10, state: .staged, since: since)],
                             watches: [watch, ReleaseWatch(id: shop, version: v("1.2.0"), since: since)])
        }
    }
}

@Suite("UpdatePlan with rollouts")
struct RolloutPlanTests {
    func catalog(_ rollouts: [Rollout], released: [String] = ["1.0.0"]) throws -> Catalog {
        try Catalog(expires: since, packages: released.map { entry($0) }, rollouts: rollouts)
    }

    func decide(_ catalog: Catalog, active: String?, cohort: Int) throws -> UpdatePlan.Choice {
        try UpdatePlan.decide(
            for: shop, in: catalog, installed: .init(active: active.map(v), versions: Set([active].compactMap { $0 }.map(v))), runtime: nil,
            allowDowngrade: false, cohort: { _, _ in cohort })
    }

    @Test("staged at 10 %: cohorts below 100 update, the rest stay and are told why; raising it keeps the first")
    func staged() throws {
        let ten = try catalog([Rollout(entry: entry("1.1.0"), permille: 100, state: .staged, since: since)])
        let inside = try decide(ten, active: "1.0.0", cohort: 99)
        #expect(inside.decision == .updated && inside.offered == v("1.1.0") && inside.cohort == 99)
        if case .install(let target, _, _) = inside.plan { #expect(target.version == v("1.1.0")) } else { Issue.record("\(inside)") }
        let outside = try decide(ten, active: "1.0.0", cohort: 100)
        #expect(outside.plan == .upToDate(shop, v("1.0.0")) && outside.decision == .outsideRollout && outside.cohort == 100)
        // A device that has it keeps it, whatever the share becomes (even lowered).
        let lowered = try catalog([Rollout(entry: entry("1.1.0"), permille: 10, state: .staged, since: since)])
        let kept = try decide(lowered, active: "1.1.0", cohort: 99)
        #expect(kept.plan == .upToDate(shop, v("1.1.0")) && kept.decision == .upToDate)
        // Nothing installed and nothing admitted: a clear refusal.
        #expect(throws: UpdatePlanError.nothingAdmitted(id: "shop", offered: "1.1.0", decision: "outside-rollout")) {
            try decide(try catalog([Rollout(entry: entry("1.1.0"), permille: 100, state: .staged, since: since)], released: []), active: nil, cohort: 500)
        }
        // No cohort at all (a device that cannot compute one): staged versions are out of reach.
        let none = try UpdatePlan.decide(for: shop, in: ten, installed: .init(active: v("1.0.0"), versions: [v("1.0.0")]), runtime: nil, allowDowngrade: false)
        #expect(none.decision == .outsideRollout)
    }

    @Test("halted: no new device gets it, devices on it keep it; revoked: devices on it go back, others are up to date")
    func haltedAndRevoked() throws {
        let halted = try catalog([Rollout(entry: entry("1.1.0"), permille: 100, state: .halted, since: since)])
        let new = try decide(halted, active: "1.0.0", cohort: 5)
        #expect(new.plan == .upToDate(shop, v("1.0.0")) && new.decision == .halted)
        let onIt = try decide(halted, active: "1.1.0", cohort: 5)
        #expect(onIt.plan == .upToDate(shop, v("1.1.0")) && onIt.decision == .upToDate)
        let revoked = try catalog([Rollout(entry: entry("1.1.0"), permille: 100, state: .revoked, since: since)])
        let back = try decide(revoked, active: "1.1.0", cohort: 5)
        #expect(back.plan == .revert(shop, v("1.1.0")) && back.decision == .revoked)
        let other = try decide(revoked, active: "1.0.0", cohort: 5)
        #expect(other.plan == .upToDate(shop, v("1.0.0")) && other.decision == .upToDate && other.offered == v("1.0.0"))
        // A fixed release for everyone after a halted one: every device gets it.
        let fixed = try catalog([Rollout(entry: entry("1.1.0"), permille: 100, state: .halted, since: since)], released: ["1.0.0", "1.2.0"])
        let fixedChoice = try decide(fixed, active: "1.1.0", cohort: 999)
        if case .install(let target, _, _) = fixedChoice.plan { #expect(target.version == v("1.2.0") && fixedChoice.decision == .updated) } else { Issue.record("\(fixedChoice)") }
    }
}

@Suite("Device reports")
struct DeviceReportTests {
    let report = DeviceReport(channel: try! ReleaseChannel("beta"), items: [
        .init(id: shop, role: .offered, version: v("1.2.0"), token: "0123456789abcdef", cohort: 437),
        .init(id: shop, role: .active, version: v("1.1.0"), token: "fedcba9876543210", state: "trial"),
        .init(id: shop, role: .failed, version: v("1.0.5"), token: "00112233445566aa", why: "install-store"),
    ])

    @Test("headers are RFC 9651 structured fields that parse back to the same report; JSON too")
    func roundTrips() throws {
        let fields = Dictionary(uniqueKeysWithValues: report.headerFields.map { ($0.name, $0.value) })
        #expect(fields["Satchel-Channel"] == #""beta""#)
        #expect(fields["Satchel-Report"] == #""shop";role=offered;version="1.2.0";token="0123456789abcdef";cohort=437, "shop";role=active;version="1.1.0";token="fedcba9876543210";state=trial, "shop";role=failed;version="1.0.5";token="00112233445566aa";why=install-store"#)
        #expect(try DeviceReport.parse(channel: fields["Satchel-Channel"], report: fields["Satchel-Report"]!) == report)
        #expect(try DeviceReport.decode(report.canonicalJSON.bytes) == report)
        let record = ReportRecord(at: since, via: "post", report: report)
        #expect(try ReportRecord.parse(line: Array(record.jsonLine.dropLast())) == record)
        // An access log line holding the raw headers (nginx escape=json) reads the same.
        let logged = #"{"at":"2027-01-15T08:00:00Z","channel":"\"beta\"","report":"\#(fields["Satchel-Report"]!.replacingOccurrences(of: "\"", with: "\\\""))"}"#
        #expect(try ReportRecord.parse(line: Array(logged.utf8)).report == report)
    }

    @Test("malformed reports are refused, naming the fault")
    func refusals() {
        let cases: [(String?, String)] = [
            (nil, "shop"), (nil, #""shop";role=active;version="1.0.0""#), (nil, #""shop";role=active;version="1.0.0";token="XYZ""#),
            (#""Beta!""#, #""shop";role=active;version="1.0.0";token="0123456789abcdef""#),
            (nil, #""shop";role=offered;version="1.0.0";token="0123456789abcdef";cohort=1000"#),
            (nil, #""shop";role=failed;version="1.0.0";token="0123456789abcdef";why="Not A Word""#),
            (nil, String(repeating: #""shop";role=active;version="1.0.0";token="0123456789abcdef", "#, count: 25) + #""x";role=active;version="1.0.0";token="0123456789abcdef""#),
        ]
        for (channel, value) in cases {
            #expect(throws: DeviceReportError.self, "\(value)") { try DeviceReport.parse(channel: channel, report: value) }
        }
    }
}

@Suite("Rollout status and the automatic step")
struct RolloutStatusTests {
    func record(_ at: Int64, _ items: [DeviceReport.Item]) -> ReportRecord {
        ReportRecord(at: Timestamp(secondsSinceEpoch: at), via: "post", report: DeviceReport(channel: .production, items: items))
    }

    func token(_ n: Int) -> String { String(format: "%016x", n) }

    @Test("counts distinct devices since the step began; failed over installed, with the Wilson interval")
    func counts() throws {
        let rollout = Rollout(entry: entry("1.1.0"), permille: 100, state: .staged, since: since)
        let catalog = try Catalog(expires: since, packages: [entry("1.0.0")], rollouts: [rollout])
        var records: [ReportRecord] = []
        for n in 0..<40 {
            records.append(record(since.secondsSinceEpoch + 1, [.init(id: shop, role: .offered, version: v("1.1.0"), token: token(n), cohort: n)]))
            if n < 20 { records.append(record(since.secondsSinceEpoch + 2, [.init(id: shop, role: .active, version: v("1.1.0"), token: token(n), state: n < 10 ? "confirmed" : "trial")])) }
            if n >= 18 && n < 22 { records.append(record(since.secondsSinceEpoch + 3, [.init(id: shop, role: .failed, version: v("1.1.0"), token: token(n), why: "trial")])) }
        }
        // Reported twice (headers and POST): still one device. Before the step began: not counted.
        records.append(records[1])
        records.append(record(since.secondsSinceEpoch - 10, [.init(id: shop, role: .failed, version: v("1.1.0"), token: token(999), why: "trial")]))
        // Received in the step's own second: timestamps have whole seconds, so it may predate the step; not counted
        // (a second `advance` run right after a step read such reports as new and stepped again).
        records.append(record(since.secondsSinceEpoch, [.init(id: shop, role: .failed, version: v("1.1.0"), token: token(998), why: "trial")]))
        // Revoked is not a failure of the version on the device.
        records.append(record(since.secondsSinceEpoch + 4, [.init(id: shop, role: .failed, version: v("1.1.0"), token: token(500), why: "revoked")]))
        let status = try #require(VersionStatus.compute(catalog, records: records).first { $0.version == "1.1.0" })
        #expect(status.offered == 40 && status.installed == 22 && status.confirmed == 10 && status.failed == 4, "\(status)")
        #expect(abs(status.failureRate - 4.0 / 22) < 1e-9 && status.interval[0] < status.failureRate && status.interval[1] > status.failureRate)
        #expect(status.state == "staged" && status.percent == 10)
        #expect(status.failuresByReason == ["trial": 4] && status.reasonsText == "trial 4" && status.since == since.description && !status.watched)
    }

    @Test("failures by reason: distinct devices per why, revoked left out, a report without why is trial, a device under its latest reason")
    func reasons() throws {
        let rollout = Rollout(entry: entry("1.1.0"), permille: 100, state: .staged, since: since)
        let catalog = try Catalog(expires: since, packages: [entry("1.0.0")], rollouts: [rollout])
        let at = since.secondsSinceEpoch
        func failed(_ n: Int, _ why: String?, at offset: Int64 = 5) -> ReportRecord {
            record(at + offset, [.init(id: shop, role: .failed, version: v("1.1.0"), token: token(n), why: why)])
        }
        var records = (0..<3).map { failed($0, "crashed") } + (3..<5).map { failed($0, "script-error") } + [failed(5, nil), failed(6, "revoked")]
        // Reported twice under the same reason: one device. Reported later under another: counted there only.
        records += [failed(0, "crashed", at: 6), failed(1, "unresponsive", at: 7)]
        // Before the step began: not counted, whatever the reason.
        records.append(failed(9, "load-timeout", at: -1))
        let status = try #require(VersionStatus.compute(catalog, records: records).first { $0.version == "1.1.0" })
        #expect(status.failuresByReason == ["crashed": 2, "unresponsive": 1, "script-error": 2, "trial": 1], "\(status.failuresByReason)")
        #expect(status.failed == 6 && status.failuresByReason.values.reduce(0, +) == status.failed)
        #expect(status.reasonsText == "crashed 2, script-error 2, trial 1, unresponsive 1")
        let encoded = String(decoding: try JSONEncoder().encode(status), as: UTF8.self)
        #expect(encoded.contains(#""failuresByReason":{"#) && encoded.contains(#""crashed":2"#), "\(encoded)")
    }

    @Test("a watched release counts reports since its watch began; an unwatched one counts them all")
    func watchedCounting() throws {
        let watch = ReleaseWatch(id: shop, version: v("1.1.0"), since: since)
        let catalog = try Catalog(expires: since, packages: [entry("1.0.0"), entry("1.1.0")], watches: [watch])
        let records = [
            record(since.secondsSinceEpoch - 100, [.init(id: shop, role: .failed, version: v("1.1.0"), token: token(1), why: "crashed"),
                                                  .init(id: shop, role: .active, version: v("1.0.0"), token: token(1), state: "confirmed")]),
            record(since.secondsSinceEpoch + 1, [.init(id: shop, role: .active, version: v("1.1.0"), token: token(2), state: "confirmed"),
                                                .init(id: shop, role: .active, version: v("1.0.0"), token: token(3), state: "confirmed")]),
        ]
        let rows = VersionStatus.compute(catalog, records: records)
        let watched = try #require(rows.first { $0.version == "1.1.0" })
        #expect(watched.watched && watched.state == "released" && watched.percent == 100 && watched.since == since.description)
        #expect(watched.installed == 1 && watched.confirmed == 1 && watched.failed == 0 && watched.failuresByReason.isEmpty)
        let plain = try #require(rows.first { $0.version == "1.0.0" })
        #expect(!plain.watched && plain.since == nil && plain.confirmed == 2)
    }

    @Test("advance while clearly healthy, halt as soon as clearly failing, wait otherwise; applying starts a new step")
    func steps() throws {
        let rollout = Rollout(entry: entry("1.1.0"), permille: 10, state: .staged, since: since)
        func status(_ failed: Int, _ installed: Int) -> VersionStatus {
            let bounds = WilsonInterval.bounds(failures: failed, trials: installed)
            return VersionStatus(id: "shop", version: "1.1.0", percent: 1, state: "staged", offered: installed, installed: installed, confirmed: 0,
                                 failed: failed, failureRate: installed == 0 ? 0 : Double(failed) / Double(installed), interval: [bounds.low, bounds.high])
        }
        let schedule = [10, 50, 250, 1000]
        #expect(RolloutStep.decide(rollout, status: status(0, 500), schedule: schedule, maxFailureRate: 0.02, minDevices: 100) == .advance(to: 50))
        #expect(RolloutStep.decide(rollout, status: status(40, 500), schedule: schedule, maxFailureRate: 0.02, minDevices: 100) == .halt)
        // Clearly failing halts even below the device minimum.
        #expect(RolloutStep.decide(rollout, status: status(12, 20), schedule: schedule, maxFailureRate: 0.02, minDevices: 100) == .halt)
        if case .wait = RolloutStep.decide(rollout, status: status(0, 50), schedule: schedule, maxFailureRate: 0.02, minDevices: 100) {} else { Issue.record("too few devices must wait") }
        if case .wait = RolloutStep.decide(rollout, status: status(8, 500), schedule: schedule, maxFailureRate: 0.02, minDevices: 100) {} else { Issue.record("a straddling interval must wait") }
        var last = rollout
        last.permille = 250
        #expect(RolloutStep.decide(last, status: status(0, 500), schedule: schedule, maxFailureRate: 0.02, minDevices: 100) == .release)

        let catalog = try Catalog(expires: since, packages: [entry("1.0.0")], serial: 5, rollouts: [rollout])
        let later = Timestamp(secondsSinceEpoch: since.secondsSinceEpoch + 3600)
        let advanced = try #require(try RolloutStep.apply(.advance(to: 50), to: rollout, in: catalog, now: later))
        #expect(advanced.serial == 6 && advanced.rollouts[0].permille == 50 && advanced.rollouts[0].since == later)
        let released = try #require(try RolloutStep.apply(.release, to: rollout, in: catalog, now: later))
        #expect(released.rollouts.isEmpty && released.packages.map(\.version) == [v("1.0.0"), v("1.1.0")])
        // Released by the automatic step: watched from that moment.
        #expect(released.watches == [ReleaseWatch(id: shop, version: v("1.1.0"), since: later)])
        #expect(try RolloutStep.apply(.wait("x"), to: rollout, in: catalog, now: later) == nil)
    }

    @Test("a watched release: halted as a staged one would be (out of packages, halted at 100 %), its watch ended after enough confirmations")
    func watchSteps() throws {
        let watch = ReleaseWatch(id: shop, version: v("1.1.0"), since: since)
        func status(_ failed: Int, _ installed: Int, confirmed: Int) -> VersionStatus {
            let bounds = WilsonInterval.bounds(failures: failed, trials: installed)
            return VersionStatus(id: "shop", version: "1.1.0", percent: 100, state: "released", offered: installed, installed: installed, confirmed: confirmed,
                                 failed: failed, failureRate: installed == 0 ? 0 : Double(failed) / Double(installed), interval: [bounds.low, bounds.high])
        }
        // 30 % of 300 devices failing: the measured case that nothing used to stop.
        #expect(WatchStep.decide(watch, status: status(90, 300, confirmed: 210), maxFailureRate: 0.05, confirmations: 200) == .halt)
        #expect(WatchStep.decide(watch, status: status(0, 300, confirmed: 300), maxFailureRate: 0.05, confirmations: 200) == .end)
        // Healthy so far, too few confirmations: it keeps watching, and says how far along it is.
        guard case .watch(let why) = WatchStep.decide(watch, status: status(1, 150, confirmed: 149), maxFailureRate: 0.05, confirmations: 200) else {
            Issue.record("too few confirmations must keep watching")
            return
        }
        #expect(why.hasPrefix("149 of 200 confirmations"), "\(why)")
        // Failures that do not yet clear the threshold neither halt nor end the watch, however many confirmed.
        if case .watch = WatchStep.decide(watch, status: status(20, 300, confirmed: 280), maxFailureRate: 0.05, confirmations: 200) {} else {
            Issue.record("a failure rate whose interval straddles the threshold must neither halt nor end the watch")
        }

        let catalog = try Catalog(expires: since, packages: [entry("1.0.0"), entry("1.1.0")], serial: 9, watches: [watch])
        let later = Timestamp(secondsSinceEpoch: since.secondsSinceEpoch + 3600)
        let halted = try #require(try WatchStep.apply(.halt, to: watch, in: catalog, now: later))
        #expect(halted.serial == 10 && halted.packages.map(\.version) == [v("1.0.0")] && halted.watches.isEmpty)
        #expect(halted.rollouts == [Rollout(entry: entry("1.1.0"), permille: 1000, state: .halted, since: later)])
        let ended = try #require(try WatchStep.apply(.end, to: watch, in: catalog, now: later))
        #expect(ended.serial == 10 && ended.packages.count == 2 && ended.watches.isEmpty && ended.rollouts.isEmpty)
        #expect(try WatchStep.apply(.watch("x"), to: watch, in: catalog, now: later) == nil)
        // A watch the catalog no longer holds (a person halted the version meanwhile) changes nothing.
        #expect(try WatchStep.apply(.halt, to: watch, in: ended, now: later) == nil)
    }
}
