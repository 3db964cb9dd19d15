import Foundation
import SatchelCore

/// The rollout report as one HTML page that needs nothing else: inline CSS and SVG, no script, nothing fetched, so it
/// can be mailed, attached to a ticket or opened from CI's artifacts. Every number `satchel rollout status --json`
/// gives is in the page as text, with `data-` attributes holding the exact value for a program to read; every text
/// that came from input is escaped.
public enum RolloutReportPage {
    public static func html(_ report: RolloutReport, generated: Timestamp? = nil) -> String {
        var page = Page()
        page.add("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
        page.add("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
        page.add("<title>Rollout report: catalog serial \(report.catalogSerial)</title><style>\(style)</style></head><body>")
        header(report, generated: generated, into: &page)
        summary(report, into: &page)
        for (index, version) in report.versions.enumerated() { section(version, index: index, report: report, into: &page) }
        events(report, into: &page)
        page.add("</body></html>\n")
        return page.text
    }

    // MARK: Parts

    private static func header(_ report: RolloutReport, generated: Timestamp?, into page: inout Page) {
        page.add("<header><h1>Rollout report</h1><p class=\"sources\">Catalog <code>\(e(report.sources.catalog))</code> (serial ")
        page.add("<span id=\"catalog-serial\" data-value=\"\(report.catalogSerial)\">\(report.catalogSerial)</span>); reports ")
        page.add("<code>\(e(report.sources.reports))</code>: <span id=\"records\" data-value=\"\(report.records)\">\(report.records)</span> ")
        page.add("report\(report.records == 1 ? "" : "s"), <span id=\"skipped\" data-value=\"\(report.skippedReports)\">\(report.skippedReports)</span> ")
        page.add("line\(report.skippedReports == 1 ? "" : "s") that did not parse as a report")
        if let log = report.sources.log {
            page.add("; log <code>\(e(log))</code>: <span id=\"log-events\" data-value=\"\(report.events.count)\">\(report.events.count)</span> ")
            page.add("decision\(report.events.count == 1 ? "" : "s"), <span id=\"log-bad-lines\" data-value=\"\(report.badLogLines)\">\(report.badLogLines)</span> ")
            page.add("line\(report.badLogLines == 1 ? "" : "s") not read")
        }
        page.add(".")
        if let generated { page.add(" Made \(e(generated.description)).") }
        page.add("</p>")
        if let threshold = report.threshold {
            let source = switch threshold.source {
            case .option: "given with --max-failure-rate"
            case .log(let at): "the latest in the log, of \(at.description)"
            }
            let kind = if case .option = threshold.source { "option" } else { "log" }
            page.add("<p id=\"threshold\" data-value=\"\(threshold.value)\" data-source=\"\(kind)\">Failure-rate threshold: ")
            page.add("<strong>\(percent(threshold.value))</strong> (\(e(source))).</p>")
        } else {
            page.add("<p id=\"threshold\" data-value=\"\" data-source=\"none\">No failure-rate threshold: none was given and the log names none.</p>")
        }
        if report.records == 0 {
            page.add("<p id=\"no-reports\" class=\"empty\">No reports: <code>\(e(report.sources.reports))</code> holds no line that parses as a ")
            page.add("device report, so every count below is zero.</p>")
        }
        if let bins = report.bins {
            page.add("<p id=\"time-axis\" data-bin-seconds=\"\(bins.width)\" data-bins=\"\(bins.edges.count - 1)\" data-start=\"\(bins.start)\" ")
            page.add("data-end=\"\(bins.end)\">Time axis (UTC): \(bins.start) to \(bins.end), \(bins.edges.count - 1) ")
            page.add("step\(bins.edges.count == 2 ? "" : "s") of \(duration(bins.width)); counts are cumulative.</p>")
        }
        page.add("</header>")
    }

    private static func summary(_ report: RolloutReport, into page: inout Page) {
        page.add("<section id=\"summary\"><h2>Versions</h2>")
        guard !report.versions.isEmpty else {
            page.add("<p class=\"empty\" id=\"no-versions\">The catalog lists no version.</p></section>")
            return
        }
        page.add("<p class=\"note\">As <code>satchel rollout status</code> counts: distinct devices, over the reports received since ")
        page.add("the version's current step or watch began (every report for a release no longer watched).</p>")
        page.add("<table id=\"versions\"><thead><tr><th>id</th><th>version</th><th>state</th><th class=\"n\">share</th>")
        page.add("<th class=\"n\">offered</th><th class=\"n\">installed</th><th class=\"n\">confirmed</th><th class=\"n\">failed</th>")
        page.add("<th class=\"n\">failure rate</th><th class=\"n\">95 % interval</th><th>counted since</th></tr></thead><tbody>")
        for (index, version) in report.versions.enumerated() {
            let s = version.status
            let above = report.threshold.map { s.interval[0] > $0.value } ?? false
            page.add("<tr class=\"version-row\(above ? " above" : "")\" id=\"version-row-\(index)\" data-id=\"\(e(s.id))\" data-version=\"\(e(s.version))\">")
            page.add("<td>\(e(s.id))</td><td><a href=\"#version-\(index)\">\(e(s.version))</a></td>")
            page.add("<td data-field=\"state\" data-value=\"\(e(s.state))\" data-watched=\"\(s.watched)\"><span class=\"state \(e(s.state))\">\(e(s.state))</span>")
            page.add(s.watched ? " <span class=\"state watched\">watched</span></td>" : "</td>")
            page.add("<td class=\"n\" data-field=\"percent\" data-value=\"\(s.percent)\">\(e(Rollout.percentText(s.percent))) %</td>")
            for (field, value) in [("offered", s.offered), ("installed", s.installed), ("confirmed", s.confirmed), ("failed", s.failed)] {
                page.add("<td class=\"n\" data-field=\"\(field)\" data-value=\"\(value)\">\(value)</td>")
            }
            page.add("<td class=\"n\" data-field=\"failureRate\" data-value=\"\(s.failureRate)\">\(percent(s.failureRate))</td>")
            page.add("<td class=\"n\" data-field=\"interval\" data-low=\"\(s.interval[0])\" data-high=\"\(s.interval[1])\">")
            page.add("\(percent(s.interval[0])) – \(percent(s.interval[1]))</td>")
            page.add("<td>\(version.since.map { e($0.description) } ?? "every report")</td></tr>")
        }
        page.add("</tbody></table></section>")
    }

    private static func section(_ version: RolloutReport.Version, index: Int, report: RolloutReport, into page: inout Page) {
        let s = version.status
        page.add("<section class=\"version\" id=\"version-\(index)\" data-id=\"\(e(s.id))\" data-version=\"\(e(s.version))\">")
        page.add("<h2>\(e(s.id)) \(e(s.version)) <span class=\"state \(e(s.state))\">\(e(s.state))</span>\(s.watched ? " <span class=\"state watched\">watched</span>" : "") ")
        page.add("at \(e(Rollout.percentText(s.percent))) %</h2>")
        page.add("<p class=\"numbers\">\(s.installed) installed, \(s.confirmed) confirmed, \(s.failed) failed: failure rate ")
        page.add("<strong>\(percent(s.failureRate))</strong>, 95 % interval \(percent(s.interval[0])) – \(percent(s.interval[1]))")
        if let threshold = report.threshold {
            let verdict = s.interval[0] > threshold.value ? "clearly above" : s.interval[1] < threshold.value ? "clearly below" : "not yet clearly above or below"
            page.add(", <span class=\"verdict\">\(verdict)</span> the threshold of \(percent(threshold.value))")
        }
        let began = s.watched ? "its watch" : "the current step"
        page.add(version.since.map { "; counted since \(e($0.description)), when \(began) began.</p>" } ?? "; counted over every report.</p>")
        if let bins = report.bins, !version.allReports.isEmpty {
            let marks = report.events.filter { $0.id == s.id && $0.version == s.version && $0.changesRollout }
            page.add("<div class=\"plots\"><figure>")
            page.add(devicesPlot(version, bins: bins, marks: marks, index: index))
            page.add("<figcaption><span class=\"key installed\"></span>installed <span class=\"key confirmed\"></span>confirmed ")
            page.add("<span class=\"key failed\"></span>failed: distinct devices over every report, whatever the step.\(legendOfMarks(marks, since: version.since))</figcaption></figure>")
            page.add("<figure>")
            page.add(ratePlot(version, bins: bins, marks: marks, threshold: report.threshold?.value, index: index))
            page.add("<figcaption><span class=\"key rate\"></span>failure rate <span class=\"key band\"></span>95 % interval")
            page.add(report.threshold == nil ? "" : " <span class=\"key threshold\"></span>threshold")
            page.add(": counted as the summary counts, since the current step or watch began.</figcaption></figure></div>")
        }
        page.add("<h3>Failures by reason</h3><p class=\"note\">Each failed device under the reason of its latest report: they add up to the failed count.</p>")
        if version.failuresByReason.isEmpty {
            page.add("<p class=\"empty\" data-field=\"failuresByReason\" data-total=\"0\">No device reports it failed.</p>")
        } else {
            let most = version.failuresByReason.map(\.count).max() ?? 1
            page.add("<table class=\"reasons\" data-field=\"failuresByReason\" data-total=\"\(version.failuresByReason.map(\.count).reduce(0, +))\">")
            page.add("<thead><tr><th>reason</th><th class=\"n\">devices</th><th></th></tr></thead><tbody>")
            for row in version.failuresByReason {
                let share = Double(row.count) / Double(max(1, most)) * 100
                page.add("<tr data-reason=\"\(e(row.reason))\" data-count=\"\(row.count)\"><td>\(e(row.reason))</td><td class=\"n\">\(row.count)</td>")
                page.add("<td class=\"barcell\"><span class=\"bar\" style=\"width:\(SVGPlot.number(share))%\"></span></td></tr>")
            }
            page.add("</tbody></table>")
        }
        page.add("</section>")
    }

    private static func events(_ report: RolloutReport, into page: inout Page) {
        guard report.sources.log != nil else { return }
        page.add("<section id=\"decisions\"><h2>Rollout decisions</h2>")
        // A run that changes nothing still writes a line per version it judged: listing those would bury the steps.
        let shown = report.events.filter { !["waiting", "watching"].contains($0.action) }
        let waiting = report.events.count - shown.count
        if shown.isEmpty {
            page.add("<p class=\"empty\" id=\"no-decisions\">The log holds no decision that changed a rollout.</p>")
        } else {
            page.add("<table id=\"event-table\"><thead><tr><th>at (UTC)</th><th>id</th><th>version</th><th>action</th><th class=\"n\">to</th>")
            page.add("<th class=\"n\">installed</th><th class=\"n\">failed</th><th class=\"n\">failure rate</th><th class=\"n\">threshold</th><th>reason</th></tr></thead><tbody>")
            for event in shown {
                page.add("<tr class=\"event \(e(event.action))\" data-action=\"\(e(event.action))\" data-id=\"\(e(event.id))\" data-version=\"\(e(event.version))\" ")
                page.add("data-at=\"\(event.at)\"><td class=\"at\">\(event.at)</td><td>\(e(event.id))</td><td>\(e(event.version))</td>")
                page.add("<td><span class=\"action \(e(event.action))\">\(e(event.action))</span></td>")
                page.add("<td class=\"n\">\(event.to.map { e(Rollout.percentText($0)) + " %" } ?? "")</td>")
                page.add("<td class=\"n\">\(event.installed.map(String.init) ?? "")</td><td class=\"n\">\(event.failed.map(String.init) ?? "")</td>")
                page.add("<td class=\"n\">\(event.failureRate.map(percent) ?? "")</td><td class=\"n\">\(event.maxFailureRate.map(percent) ?? "")</td>")
                page.add("<td class=\"reason\">\(e(event.reason ?? ""))</td></tr>")
            }
            page.add("</tbody></table>")
        }
        if waiting > 0 {
            page.add("<p class=\"note\" id=\"waiting\" data-value=\"\(waiting)\">\(waiting) decision\(waiting == 1 ? "" : "s") to wait or go on watching ")
            page.add("not listed.</p>")
        }
        if report.badLogLines > 0 {
            page.add("<p class=\"note\">\(report.badLogLines) line\(report.badLogLines == 1 ? "" : "s") of the log did not read as a decision and ")
            page.add("\(report.badLogLines == 1 ? "is" : "are") left out.</p>")
        }
        page.add("</section>")
    }

    // MARK: Charts

    private static func devicesPlot(_ version: RolloutReport.Version, bins: TimeBins, marks: [RolloutLogEvent], index: Int) -> String {
        let points = version.allReports
        let (values, top) = SVGPlot.ticks(upTo: Double(points.map(\.installed).max() ?? 0), count: 4, integers: true)
        var plot = SVGPlot(x: seconds(bins.start)...seconds(bins.end), y: 0...top)
        plot.axes(xTicks: xTicks(bins), yTicks: values.map { ($0, String(Int($0))) })
        decorate(&plot, marks: marks, since: version.since, bins: bins)
        let s = version.status
        plot.line(points.map { (seconds($0.at), Double($0.installed)) }, cssClass: "installed", label: "installed: \(points.last?.installed ?? 0) devices")
        plot.line(points.map { (seconds($0.at), Double($0.confirmed)) }, cssClass: "confirmed", label: "confirmed: \(points.last?.confirmed ?? 0) devices")
        plot.line(points.map { (seconds($0.at), Double($0.failed)) }, cssClass: "failed", label: "failed: \(points.last?.failed ?? 0) devices")
        return plot.svg(id: "devices-\(index)", title: "\(s.id) \(s.version): devices over time")
    }

    private static func ratePlot(_ version: RolloutReport.Version, bins: TimeBins, marks: [RolloutLogEvent], threshold: Double?, index: Int) -> String {
        // Before any device tried it in this step there is no rate to draw, only the interval's [0, 1].
        let points = version.currentStep.filter { $0.installed > 0 }
        let highest = max(points.map { $0.interval[1] }.max() ?? 0, threshold ?? 0, 0.01)
        let (values, top) = SVGPlot.ticks(upTo: min(1, highest * 1.05), count: 4)
        var plot = SVGPlot(x: seconds(bins.start)...seconds(bins.end), y: 0...min(1, top))
        plot.axes(xTicks: xTicks(bins), yTicks: values.filter { $0 <= 1 }.map { ($0, percent($0, digits: $0 * 100 < 1 && $0 > 0 ? 2 : 0)) })
        decorate(&plot, marks: marks, since: version.since, bins: bins)
        plot.band(points.map { (seconds($0.at), $0.interval[0], $0.interval[1]) }, cssClass: "interval", label: "95 % Wilson interval")
        if let threshold { plot.level(threshold, cssClass: "threshold", label: "threshold \(percent(threshold))") }
        plot.line(points.map { (seconds($0.at), $0.failureRate) }, cssClass: "rate", label: "failure rate: \(percent(version.status.failureRate))")
        let s = version.status
        return plot.svg(id: "failure-rate-\(index)", title: "\(s.id) \(s.version): failure rate over time")
    }

    private static func decorate(_ plot: inout SVGPlot, marks: [RolloutLogEvent], since: Timestamp?, bins: TimeBins) {
        if let since, since >= bins.start, since <= bins.end {
            plot.mark(at: seconds(since), cssClass: "since", glyph: "", label: "counting began \(since.description)")
        }
        for event in marks {
            let glyph = switch event.action {
            case "halted": "H"
            case "released": "R"
            default: "A"
            }
            let to = event.to.map { " to \(Rollout.percentText($0)) %" } ?? ""
            plot.mark(at: seconds(event.at), cssClass: event.action, glyph: glyph, label: "\(event.action)\(to) at \(event.at)\(event.reason.map { ": \($0)" } ?? "")")
        }
    }

    private static func legendOfMarks(_ marks: [RolloutLogEvent], since: Timestamp?) -> String {
        var parts: [String] = []
        if since != nil { parts.append("<span class=\"key since\"></span>counting began (step or watch)") }
        let actions = Set(marks.map(\.action))
        for (action, glyph) in [("advanced", "A"), ("released", "R"), ("halted", "H")] where actions.contains(action) {
            parts.append("<span class=\"key \(action)\"></span>\(glyph): \(action)")
        }
        return parts.isEmpty ? "" : " Marks: " + parts.joined(separator: " ") + "."
    }

    private static func xTicks(_ bins: TimeBins) -> [(Double, String)] {
        let bins_ = bins.edges.count - 1
        let every = max(1, Int((Double(bins_) / 6).rounded(.up)))
        return bins.edges.enumerated().filter { $0.offset % every == 0 }.map { (seconds($0.element), bins.label($0.element)) }
    }

    // MARK: Text

    private static func seconds(_ t: Timestamp) -> Double { Double(t.secondsSinceEpoch) }

    private static func e(_ text: String) -> String { HTMLText.escaped(text) }

    static func percent(_ rate: Double) -> String { percent(rate, digits: 2) }

    static func percent(_ rate: Double, digits: Int) -> String { String(format: "%.\(digits)f %%", rate * 100) }

    static func duration(_ seconds: Int64) -> String {
        switch seconds {
        case let s where s % 86_400 == 0: s == 86_400 ? "1 day" : "\(s / 86_400) days"
        case let s where s % 3600 == 0: s == 3600 ? "1 hour" : "\(s / 3600) hours"
        default: seconds == 60 ? "1 minute" : "\(seconds / 60) minutes"
        }
    }

    private struct Page {
        var text = ""
        mutating func add(_ part: String) { text += part }
    }

    private static let style = """
        :root{color-scheme:light;font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1a202c;background:#fff}
        body{max-width:1100px;margin:0 auto;padding:16px 20px 40px}h1{font-size:1.6em;margin:.2em 0}h2{font-size:1.25em;margin:1.4em 0 .4em}
        h3{font-size:1em;margin:1em 0 .3em}code{font:12px ui-monospace,monospace;background:#f1f3f5;padding:1px 4px;border-radius:3px;word-break:break-all}
        .empty{background:#fffbea;border:1px solid #f6e05e;padding:8px 12px;border-radius:4px}.note{color:#4a5568}
        table{border-collapse:collapse;margin:.4em 0}th,td{padding:4px 8px;border-bottom:1px solid #e2e8f0;text-align:left;vertical-align:top}
        th{font-weight:600;background:#f7fafc}.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}td.at{white-space:nowrap}tr.above td{background:#fff5f5}
        .state,.action{display:inline-block;padding:0 6px;border-radius:3px;font-size:.85em;background:#edf2f7}
        .state.halted,.state.revoked,.action.halted{background:#fed7d7;color:#9b2c2c}.state.released,.action.released{background:#bee3f8;color:#2a4365}
        .state.staged,.action.advanced{background:#c6f6d5;color:#22543d}.state.watched{background:#fefcbf;color:#744210}
        section.version{border-top:2px solid #e2e8f0;margin-top:1.5em}.plots{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:12px}
        figure{margin:0}figcaption{font-size:.85em;color:#4a5568}svg.plot{width:100%;height:auto;display:block;background:#fff}
        .grid{stroke:#edf2f7}.axis{stroke:#a0aec0}.tick-mark{stroke:#a0aec0}.tick{font-size:11px;fill:#4a5568}.tick.y{text-anchor:end;dominant-baseline:middle}
        .tick.x{text-anchor:middle}.series{fill:none;stroke-width:2}.series.installed{stroke:#2b6cb0}.series.confirmed{stroke:#2f855a}
        .series.failed,.series.rate{stroke:#c53030}.band.interval{fill:#c53030;fill-opacity:.15;stroke:none}
        .level line{stroke:#b7791f;stroke-width:1.5;stroke-dasharray:6 4}.level text{fill:#b7791f;font-size:11px;text-anchor:end}
        .mark line{stroke-width:1.5;stroke-dasharray:3 3}.mark text{font-size:11px;font-weight:700;text-anchor:middle}
        .mark.halted line{stroke:#c53030}.mark.halted text{fill:#c53030}.mark.advanced line{stroke:#2f855a}.mark.advanced text{fill:#2f855a}
        .mark.released line{stroke:#2b6cb0}.mark.released text{fill:#2b6cb0}.mark.since line{stroke:#718096;stroke-dasharray:1 3}
        .key{display:inline-block;width:14px;height:4px;margin:0 4px 2px 8px;vertical-align:middle;background:#718096}
        .key.installed{background:#2b6cb0}.key.confirmed{background:#2f855a}.key.failed,.key.rate,.key.halted{background:#c53030}
        .key.band{background:#c53030;opacity:.25;height:10px}.key.threshold{background:#b7791f}.key.advanced{background:#2f855a}.key.released{background:#2b6cb0}
        .barcell{width:40%}.bar{display:block;height:12px;background:#c53030;border-radius:2px;min-width:2px}td.reason{max-width:420px;word-break:break-word}
        """
}
