import ArgumentParser
import Foundation
import SatchelCore
import SatchelReportPage
import SatchelReports

extension Satchel.RolloutCommand {
    struct Report: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write one self-contained HTML page for the people watching a rollout: per version its devices and failure rate over time, failures by reason, and the log's halts and advances.",
            discussion: """
                The page's numbers are rollout status's for the same catalog and reports. It needs nothing else: no \
                script, nothing fetched. A log line that is not a decision is counted and left out.
                """)
        @Option(help: "The catalog.json.", completion: .file())
        var catalog: String
        @OptionGroup var reports: ReportOptions
        @Option(help: "The rollout log (JSON lines, one decision each) whose halts and advances the page marks.", completion: .file())
        var log: String?
        @Option(help: "The failure-rate threshold to show, 0-1 (default: the latest in the log, else none).")
        var maxFailureRate: Double?
        @Option(help: "The HTML file to write.", completion: .file())
        var output: String

        func validate() throws {
            if let maxFailureRate, !(0...1).contains(maxFailureRate) { throw ValidationError("--max-failure-rate must be between 0 and 1") }
        }

        func run() throws {
            let catalog = try CatalogFile.read(self.catalog)
            let parsedLog = try log.map { path in
                guard let data = FileManager.default.contents(atPath: path) else { throw Output.failure("cannot read log \(path)") }
                return RolloutLog.parse(Array(data))
            }
            let sources = RolloutReport.Sources(catalog: self.catalog, reports: reports.named, log: log)
            let report: RolloutReport
            if reports.referenceCount {
                let (records, skipped) = try reports.referenceRecords()
                report = RolloutReport.build(catalog: catalog, records: records, skipped: skipped, log: parsedLog, maxFailureRate: maxFailureRate, sources: sources)
            } else {
                // One pass: the tally gathers the counts over time as it reads.
                let result = try Output.failing { () throws(ReportInputError) in try ReportReader.read(reports.reports, series: catalog) }
                report = RolloutReport.build(catalog: catalog, tally: result.tally, log: parsedLog, maxFailureRate: maxFailureRate, sources: sources)
            }
            let (records, skipped) = (report.records, report.skippedReports)
            let page = Data(RolloutReportPage.html(report, generated: CatalogFile.now()).utf8)
            do { try page.write(to: URL(fileURLWithPath: output), options: .atomic) } catch {
                throw Output.failure("cannot write \(output): \(error.localizedDescription)")
            }
            Output.line("wrote \(output) (\(Output.bytes(Int64(page.count)))): \(report.versions.count) version\(report.versions.count == 1 ? "" : "s"), \(records) report\(records == 1 ? "" : "s")")
            if skipped > 0 { Output.note("\(skipped) line\(skipped == 1 ? "" : "s") of \(reports.named) did not parse as a report") }
            if let parsedLog, let log, parsedLog.badLines > 0 {
                Output.note("\(parsedLog.badLines) line\(parsedLog.badLines == 1 ? "" : "s") of \(log) did not read as a rollout decision")
            }
        }
    }
}
