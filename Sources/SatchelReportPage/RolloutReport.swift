import SatchelCore

/// Everything the page shows, as plain values: built from a catalog, its reports and a rollout log by `build`, drawn
/// by ``RolloutReportPage``. The numbers per version are the ones `satchel rollout status` prints (`ReportTally`, equal
/// to `VersionStatus.compute`'s); the series are the same counts over the reports received up to each edge of the time
/// axis, gathered in the same pass.
public struct RolloutReport: Hashable, Sendable {
    /// Counts at one edge of the time axis.
    public struct Point: Hashable, Sendable {
        public var at: Timestamp
        public var installed: Int
        public var confirmed: Int
        public var failed: Int
        public var failureRate: Double
        public var interval: [Double]

        /// The counts of `VersionStatus` at `at`, with the failure rate and interval it would give.
        public init(at: Timestamp, installed: Int, confirmed: Int, failed: Int) {
            self.at = at
            self.installed = installed
            self.confirmed = confirmed
            self.failed = failed
            (failureRate, interval) = VersionStatus.failureRate(failed: failed, installed: installed)
        }

        public init(at: Timestamp, status: VersionStatus) {
            self.at = at
            installed = status.installed
            confirmed = status.confirmed
            failed = status.failed
            failureRate = status.failureRate
            interval = status.interval
        }
    }

    public struct Version: Hashable, Sendable {
        /// As `satchel rollout status` gives it.
        public var status: VersionStatus
        /// `status.failuresByReason` in the order the page lists it: most devices first.
        public var failuresByReason: [ReasonCount]
        /// `status.since` read: when the rollout's current step or the release's watch began, after which `status`
        /// counts reports; nil when it counts every report.
        public var since: Timestamp?
        /// Over every report, whatever step: how the version spread.
        public var allReports: [Point]
        /// As `status` counts (since the step began): what `rollout advance` judged at each moment.
        public var currentStep: [Point]

        public init(status: VersionStatus, failuresByReason: [ReasonCount], since: Timestamp?, allReports: [Point], currentStep: [Point]) {
            self.status = status
            self.failuresByReason = failuresByReason
            self.since = since
            self.allReports = allReports
            self.currentStep = currentStep
        }
    }

    public struct ReasonCount: Hashable, Sendable {
        public var reason: String
        public var count: Int

        public init(reason: String, count: Int) {
            self.reason = reason
            self.count = count
        }
    }

    public struct Threshold: Hashable, Sendable {
        public var value: Double
        public var source: ThresholdSource

        public init(value: Double, source: ThresholdSource) {
            self.value = value
            self.source = source
        }
    }

    public enum ThresholdSource: Hashable, Sendable {
        /// Given on the command line.
        case option
        /// The latest decision in the log that names one.
        case log(at: Timestamp)
    }

    /// The files the page was made from, named on it as given.
    public struct Sources: Hashable, Sendable {
        public var catalog: String
        public var reports: String
        public var log: String?

        public init(catalog: String, reports: String, log: String? = nil) {
            self.catalog = catalog
            self.reports = reports
            self.log = log
        }
    }

    public var sources: Sources
    public var catalogSerial: Int64
    public var versions: [Version]
    /// Nil when there is nothing to place on a time axis (no report and no log event).
    public var bins: TimeBins?
    /// Report lines read, and lines that were not reports.
    public var records: Int
    public var skippedReports: Int
    public var events: [RolloutLogEvent]
    public var badLogLines: Int
    public var threshold: Threshold?

    /// The report of `catalog` from `records` (the reports file's parsed lines; `skipped` the others) and `log`.
    /// The threshold shown is `maxFailureRate` when given, else the log's latest, else none.
    public static func build(
        catalog: Catalog, records: [ReportRecord], skipped: Int, log: RolloutLog?, maxFailureRate: Double?, sources: Sources
    ) -> RolloutReport {
        let tally = ReportTally()
        tally.trackSeries(for: catalog)
        for record in records { tally.add(record) }
        return build(catalog: catalog, tally: tally, skipped: skipped, log: log, maxFailureRate: maxFailureRate, sources: sources)
    }

    /// The report from a tally that gathered its series (`ReportTally.trackSeries(for: catalog)` before the first
    /// line): the numbers are `tally.statuses(catalog)`, the very ones `satchel rollout status` prints, and each point
    /// of a series is what they were over the reports received up to that edge of the time axis.
    public static func build(catalog: Catalog, tally: ReportTally, log: RolloutLog?, maxFailureRate: Double?, sources: Sources) -> RolloutReport {
        build(catalog: catalog, tally: tally, skipped: tally.skipped, log: log, maxFailureRate: maxFailureRate, sources: sources)
    }

    private static func build(catalog: Catalog, tally: ReportTally, skipped: Int, log: RolloutLog?, maxFailureRate: Double?, sources: Sources) -> RolloutReport {
        let statuses = tally.statuses(catalog)
        let events = (log?.events ?? []).sorted { $0.at < $1.at }
        let bins = TimeBins.covering([tally.earliest, tally.latest].compactMap { $0 } + events.map(\.at))
        var allReports: [[Point]] = Array(repeating: [], count: statuses.count)
        var currentStep: [[Point]] = Array(repeating: [], count: statuses.count)
        // Over every report, each version as if released to everyone (whatever step or watch the catalog says counting
        // began at: how it spread), and since its step or watch (what `rollout advance` judged at each moment).
        if let bins, tally.earliest != nil, let counts = tally.seriesCounts(at: bins.edges), counts.all.count == statuses.count {
            for index in statuses.indices {
                allReports[index] = zip(bins.edges, counts.all[index]).map { Point(at: $0, installed: $1.installed, confirmed: $1.confirmed, failed: $1.failed) }
                currentStep[index] = zip(bins.edges, counts.sinceStart[index]).map { Point(at: $0, installed: $1.installed, confirmed: $1.confirmed, failed: $1.failed) }
            }
        }
        let versions = statuses.enumerated().map { index, status in
            Version(
                status: status,
                failuresByReason: status.failuresByReason.map { ReasonCount(reason: $0.key, count: $0.value) }.sorted { ($1.count, $0.reason) < ($0.count, $1.reason) },
                since: status.since.flatMap { try? Timestamp(rfc3339: $0) }, allReports: allReports[index], currentStep: currentStep[index])
        }
        let threshold: Threshold? =
            if let maxFailureRate { Threshold(value: maxFailureRate, source: .option) } else {
                log?.latestMaxFailureRate.map { Threshold(value: $0.value, source: .log(at: $0.at)) }
            }
        return RolloutReport(
            sources: sources, catalogSerial: catalog.serial, versions: versions, bins: bins, records: tally.records, skippedReports: skipped,
            events: events, badLogLines: log?.badLines ?? 0, threshold: threshold)
    }

    public init(
        sources: Sources, catalogSerial: Int64, versions: [Version], bins: TimeBins?, records: Int, skippedReports: Int,
        events: [RolloutLogEvent], badLogLines: Int, threshold: Threshold?
    ) {
        self.sources = sources
        self.catalogSerial = catalogSerial
        self.versions = versions
        self.bins = bins
        self.records = records
        self.skippedReports = skippedReports
        self.events = events
        self.badLogLines = badLogLines
        self.threshold = threshold
    }
}
