import Foundation
import SatchelCore
import Testing

@testable import SatchelReportPage

private func v(_ raw: String) -> SemanticVersion { try! SemanticVersion(raw) }
private let shop = try! PackageID("shop")
private func entry(_ version: String) -> CatalogEntry {
    CatalogEntry(id: shop, version: v(version), url: "shop-\(version).zip", size: 1000, sha256: String(repeating: "a", count: 64))
}
private let since = Timestamp(secondsSinceEpoch: 1_800_000_000)
private func later(_ t: Timestamp, _ seconds: Int64) -> Timestamp { Timestamp(secondsSinceEpoch: t.secondsSinceEpoch + seconds) }
private func token(_ n: Int) -> String { String(format: "%016x", n) }
private func record(_ at: Int64, _ items: [DeviceReport.Item]) -> ReportRecord {
    ReportRecord(at: Timestamp(secondsSinceEpoch: at), via: "post", report: DeviceReport(channel: .production, items: items))
}

/// 1.0.0 released; 1.1.0 staged at 10 % since `since`, tried by 20 devices over two hours after it, 5 of which report it
/// failed (3 crashed, 2 trial), one more revoked; a report from before the step that status must not count.
private func fixture() throws -> (catalog: Catalog, records: [ReportRecord]) {
    let catalog = try Catalog(
        expires: since, packages: [entry("1.0.0")], serial: 7, rollouts: [Rollout(entry: entry("1.1.0"), permille: 100, state: .staged, since: since)])
    var records: [ReportRecord] = []
    for n in 0..<20 {
        let at = since.secondsSinceEpoch + 1 + Int64(n) * 360
        records.append(record(at, [
            .init(id: shop, role: .offered, version: v("1.1.0"), token: token(n), cohort: n),
            .init(id: shop, role: .active, version: v("1.0.0"), token: token(100 + n), state: "confirmed"),
        ]))
        if n < 15 {
            records.append(record(at + 60, [.init(id: shop, role: .active, version: v("1.1.0"), token: token(n), state: n < 8 ? "confirmed" : "trial")]))
        } else {
            records.append(record(at + 60, [.init(id: shop, role: .failed, version: v("1.1.0"), token: token(n), why: n < 18 ? "crashed" : "trial")]))
        }
    }
    records.append(record(since.secondsSinceEpoch + 7000, [.init(id: shop, role: .failed, version: v("1.1.0"), token: token(300), why: "revoked")]))
    records.append(record(since.secondsSinceEpoch - 600, [.init(id: shop, role: .failed, version: v("1.1.0"), token: token(400), why: "crashed")]))
    return (catalog, records)
}

private let sources = RolloutReport.Sources(catalog: "catalog.json", reports: "reports.jsonl", log: "rollout.jsonl")

@Suite("Rollout report page")
struct RolloutReportPageTests {
    @Test("each point of both series is the reference count over the reports received up to its edge, though the page reads the reports once")
    func seriesEqualCountsPerEdge() throws {
        let (catalog, records) = try fixture()
        // The watched release and a report from the step's own second make the two series differ where they should.
        let watched = try Catalog(
            expires: since, packages: catalog.packages, serial: 8, rollouts: catalog.rollouts,
            watches: [ReleaseWatch(id: shop, version: v("1.0.0"), since: later(since, 3600))])
        let extra = records + [record(since.secondsSinceEpoch, [.init(id: shop, role: .active, version: v("1.1.0"), token: token(500), state: "confirmed")])]
        for catalog in [catalog, watched] {
            let report = RolloutReport.build(catalog: catalog, records: extra.shuffled(), skipped: 0, log: nil, maxFailureRate: nil, sources: sources)
            let bins = try #require(report.bins)
            let everything = try Catalog(expires: catalog.expires, packages: catalog.packages + catalog.rollouts.map(\.entry), serial: catalog.serial)
            for (index, edge) in bins.edges.enumerated() {
                let upTo = extra.filter { $0.at <= edge }
                let spread = VersionStatus.compute(everything, records: upTo), judged = VersionStatus.compute(catalog, records: upTo)
                for (row, version) in report.versions.enumerated() {
                    #expect(version.allReports[index] == RolloutReport.Point(at: edge, status: spread[row]), "\(version.status.version) at \(edge)")
                    #expect(version.currentStep[index] == RolloutReport.Point(at: edge, status: judged[row]), "\(version.status.version) at \(edge)")
                }
            }
            #expect(report.versions.map(\.status) == VersionStatus.compute(catalog, records: extra))
        }
    }

    @Test("the page carries status's numbers per version, exactly, and failures by reason without revoked")
    func numbers() throws {
        let (catalog, records) = try fixture()
        let report = RolloutReport.build(catalog: catalog, records: records, skipped: 2, log: nil, maxFailureRate: 0.05, sources: sources)
        let html = RolloutReportPage.html(report)
        let statuses = VersionStatus.compute(catalog, records: records)
        #expect(report.versions.map(\.status) == statuses)
        let staged = try #require(statuses.first { $0.version == "1.1.0" })
        #expect(staged.installed == 20 && staged.failed == 5 && staged.confirmed == 8 && staged.offered == 20, "\(staged)")
        for status in statuses {
            let row = try #require(section(of: html, from: "data-id=\"shop\" data-version=\"\(status.version)\">", to: "</tr>"))
            for (field, value) in [("offered", status.offered), ("installed", status.installed), ("confirmed", status.confirmed), ("failed", status.failed)] {
                #expect(row.contains("data-field=\"\(field)\" data-value=\"\(value)\">\(value)</td>"), "\(field) of \(status.version)")
            }
            #expect(row.contains("data-field=\"failureRate\" data-value=\"\(status.failureRate)\""))
            #expect(row.contains("data-low=\"\(status.interval[0])\" data-high=\"\(status.interval[1])\""))
        }
        #expect(html.contains("<span id=\"skipped\" data-value=\"2\">2</span>") && html.contains("<span id=\"records\" data-value=\"\(records.count)\">"))
        let reasons = try #require(report.versions.first { $0.status.version == "1.1.0" }).failuresByReason
        #expect(reasons == [.init(reason: "crashed", count: 3), .init(reason: "trial", count: 2)])
        #expect(reasons.map(\.count).reduce(0, +) == staged.failed)
        #expect(Dictionary(uniqueKeysWithValues: reasons.map { ($0.reason, $0.count) }) == staged.failuresByReason)
        #expect(html.contains("<tr data-reason=\"crashed\" data-count=\"3\">") && !html.contains("data-reason=\"revoked\""))
        #expect(html.contains("id=\"threshold\" data-value=\"0.05\" data-source=\"option\""))
        // The interval's lower bound (about 11 %) is above 5 %: the row is marked.
        #expect(html.contains("class=\"version-row above\" id=\"version-row-1\""))
    }

    @Test("the series end on status's numbers; the spread counts reports from before the step, the judged rate does not")
    func series() throws {
        let (catalog, records) = try fixture()
        let report = RolloutReport.build(catalog: catalog, records: records, skipped: 0, log: nil, maxFailureRate: nil, sources: sources)
        let staged = try #require(report.versions.first { $0.status.version == "1.1.0" })
        let last = try #require(staged.currentStep.last)
        #expect(last.installed == staged.status.installed && last.failed == staged.status.failed && last.failureRate == staged.status.failureRate)
        #expect(last.interval == staged.status.interval)
        // The crash reported before the step began is a device that tried the version, not one the step is judged by.
        #expect(staged.allReports.last?.installed == staged.status.installed + 1)
        #expect(staged.allReports.map(\.installed) == staged.allReports.map(\.installed).sorted(), "cumulative: never falls")
        #expect(staged.allReports.count == report.bins?.edges.count && staged.since == since)
        let html = RolloutReportPage.html(report)
        #expect(html.contains("<svg id=\"devices-1\"") && html.contains("<svg id=\"failure-rate-1\"") && html.contains("class=\"band interval\""))
        #expect(html.contains("class=\"mark since\""))
        #expect(html.contains("id=\"threshold\" data-value=\"\" data-source=\"none\""))
    }

    @Test("text from input stays text: ids, versions, reasons, log lines and file names cannot open an element")
    func escaping() throws {
        let (catalog, records) = try fixture()
        let hostile = "<script>alert(\"x\")</script>"
        let log = RolloutLog(events: [
            RolloutLogEvent(at: since, id: "shop", version: "1.1.0", action: "halted", reason: hostile, maxFailureRate: 0.02),
            RolloutLogEvent(at: since, id: hostile, version: "1.1.0", action: "<b>advanced</b>", to: 50),
        ], badLines: 0)
        var report = RolloutReport.build(
            catalog: catalog, records: records, skipped: 0, log: log, maxFailureRate: nil,
            sources: .init(catalog: "<img src=x onerror=alert(1)>.json", reports: hostile, log: "a\"b'c&d"))
        report.versions[1].status.version = hostile
        report.versions[1].status.id = "\" onmouseover=\"alert(1)"
        report.versions[1].status.state = hostile
        report.versions[1].failuresByReason.append(.init(reason: hostile, count: 1))
        let html = RolloutReportPage.html(report)
        #expect(!html.lowercased().contains("<script"), "no script element, from input or otherwise")
        #expect(!html.contains("<img") && !html.contains("<b>") && !html.contains("\" onmouseover"))
        #expect(html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"))
        #expect(html.contains("a&quot;b&#39;c&amp;d"))
        // The log's threshold is the one shown when none is given.
        #expect(html.contains("id=\"threshold\" data-value=\"0.02\" data-source=\"log\""))
    }

    @Test("a watched release counts from its watch, as status does, and is tagged; the spread still counts every report")
    func watched() throws {
        let watchStart = later(since, 3600)
        let catalog = try Catalog(expires: since, packages: [entry("1.0.0")], watches: [ReleaseWatch(id: shop, version: v("1.0.0"), since: watchStart)])
        let records = (0..<10).map { n in
            record(since.secondsSinceEpoch + Int64(n) * 720, [.init(id: shop, role: .active, version: v("1.0.0"), token: token(n), state: "confirmed")])
        }
        let report = RolloutReport.build(catalog: catalog, records: records, skipped: 0, log: nil, maxFailureRate: nil, sources: sources)
        let version = try #require(report.versions.first)
        #expect(version.status == VersionStatus.compute(catalog, records: records).first && version.status.watched)
        #expect(version.since == watchStart && version.status.installed == 4, "reports after the watch began: n = 6...9")
        #expect(version.allReports.last?.installed == 10 && version.currentStep.last?.installed == 4)
        let html = RolloutReportPage.html(report)
        #expect(html.contains("data-watched=\"true\"") && html.contains("when its watch began") && html.contains("class=\"mark since\""))
    }

    @Test("an empty reports file gives a page that says so, with every count zero and no chart")
    func empty() throws {
        let (catalog, _) = try fixture()
        let report = RolloutReport.build(catalog: catalog, records: [], skipped: 0, log: nil, maxFailureRate: nil, sources: sources)
        let html = RolloutReportPage.html(report)
        #expect(report.bins == nil)
        #expect(html.contains("id=\"no-reports\"") && html.contains("No reports"))
        #expect(!html.contains("<svg"))
        #expect(html.contains("data-field=\"installed\" data-value=\"0\">0</td>") && !html.contains("data-field=\"installed\" data-value=\"1"))
        #expect(html.contains("<span id=\"records\" data-value=\"0\">0</span>"))
    }

    @Test("the page fetches nothing: no external reference, no script")
    func selfContained() throws {
        let (catalog, records) = try fixture()
        let log = RolloutLog(events: [RolloutLogEvent(at: later(since, 4000), id: "shop", version: "1.1.0", action: "halted", maxFailureRate: 0.05)], badLines: 1)
        let html = RolloutReportPage.html(RolloutReport.build(catalog: catalog, records: records, skipped: 0, log: log, maxFailureRate: nil, sources: sources))
        for reference in ["http:", "https:", "src=", "<link", "url(", "@import", "<script", "<iframe", "<object"] {
            #expect(!html.lowercased().contains(reference), "\(reference)")
        }
        #expect(html.contains("class=\"mark halted\"") && html.contains("data-action=\"halted\""))
    }

    @Test("bins: a round width aligned to UTC, at most 48, the last edge at or after the last instant")
    func bins() throws {
        #expect(TimeBins.covering([]) == nil)
        let t = Timestamp(secondsSinceEpoch: 1_800_000_030)
        let one = try #require(TimeBins.covering([t]))
        #expect(one.width == 60 && one.edges.count == 2 && one.start.secondsSinceEpoch == 1_800_000_000 && one.end > t)
        let tenMinutes = try #require(TimeBins.covering([t, later(t, 600)]))
        #expect(tenMinutes.width == 60 && tenMinutes.edges.count - 1 == 11)
        let threeDays = try #require(TimeBins.covering([t, later(t, 3 * 86_400)]))
        #expect(threeDays.width == 3 * 3600 && threeDays.edges.count - 1 <= TimeBins.maxBins)
        for bins in [one, tenMinutes, threeDays] {
            #expect(bins.edges.allSatisfy { $0.secondsSinceEpoch % bins.width == 0 })
            #expect(zip(bins.edges, bins.edges.dropFirst()).allSatisfy { $1.secondsSinceEpoch - $0.secondsSinceEpoch == bins.width })
        }
        // An instant on an edge is that edge's, not the next bin's.
        let aligned = Timestamp(secondsSinceEpoch: 1_800_000_000)
        #expect(TimeBins.covering([aligned, later(aligned, 120)])?.edges.map(\.secondsSinceEpoch) == [1_800_000_000, 1_800_000_060, 1_800_000_120])
        #expect(threeDays.label(threeDays.start) == "01-15 06:00")
        #expect(TimeBins.covering([t, later(t, 400 * 86_400)])?.label(t) == "2027-01-15")
    }

    @Test("the log: decisions read in any order, bad lines counted, the latest threshold by time; waiting not listed")
    func log() throws {
        let text = """
            {"at":"2027-01-15T10:00:00Z","serial":3,"id":"shop","version":"1.1.0","action":"advanced","to":25,"reason":null,"maxFailureRate":0.05,"status":{"installed":40,"failed":1,"failureRate":0.025}}
            not json
            {"at":"2027-01-15T09:00:00Z","id":"shop","version":"1.1.0","action":"waiting","reason":"too few","maxFailureRate":0.1}
            {"at":"yesterday","id":"shop","version":"1.1.0","action":"halted"}

            {"at":"2027-01-15T11:00:00Z","id":"shop","version":"1.1.0","action":"halted","reason":"interval above","maxFailureRate":0.02}
            """
        let log = RolloutLog.parse(Array(text.utf8))
        #expect(log.events.count == 3 && log.badLines == 2)
        #expect(log.events[0].to == 25 && log.events[0].installed == 40 && log.events[0].failureRate == 0.025 && log.events[0].serial == 3)
        #expect(log.latestMaxFailureRate?.value == 0.02)
        let (catalog, records) = try fixture()
        let html = RolloutReportPage.html(RolloutReport.build(catalog: catalog, records: records, skipped: 0, log: log, maxFailureRate: nil, sources: sources))
        #expect(html.contains("data-action=\"advanced\"") && html.contains("data-action=\"halted\"") && !html.contains("data-action=\"waiting\""))
        #expect(html.contains("id=\"waiting\" data-value=\"1\"") && html.contains("<span id=\"log-bad-lines\" data-value=\"2\">2</span>"))
    }
}

/// The text from the first `start` to the next `end` after it.
private func section(of text: String, from start: String, to end: String) -> String? {
    guard let lower = text.range(of: start), let upper = text.range(of: end, range: lower.upperBound..<text.endIndex) else { return nil }
    return String(text[lower.lowerBound..<upper.upperBound])
}
