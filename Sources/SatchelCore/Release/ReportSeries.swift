/// The report page's counts over time, gathered in the same pass as the tally: per catalog version and device, the
/// first instant it tried, confirmed and failed the version, over every report and over those after the version's
/// `since`. A device counts at an edge of the time axis once its first fact is at or before the edge, which is what
/// `VersionStatus.compute` over the records received up to that edge gives, without a pass per edge.
final class ReportSeries {
    struct Firsts: BitwiseCopyable {
        var installed: UInt32 = 0
        var confirmed: UInt32 = 0
        var failed: UInt32 = 0
        var installedSince: UInt32 = 0
        var confirmedSince: UInt32 = 0
        var failedSince: UInt32 = 0
    }

    /// The catalog's versions in `VersionStatus.compute`'s order, each with its `since`.
    let keys: [ReportTally.VersionKey]
    let since: [UInt32]
    let tables: [TokenTable<Firsts>]
    /// For each of the tally's versions, the catalog's index of it (-1: not in the catalog).
    var catalogIndex: [Int32] = []

    init(_ catalog: Catalog) {
        let rows = VersionStatus.rows(catalog) { _, _ in VersionStatus.Counts() }
        let sinceOf = Dictionary(
            (catalog.packages.map { ($0, catalog.watch(of: $0)?.since) } + catalog.rollouts.map { ($0.entry, $0.since) }).map {
                (ReportTally.VersionKey(id: $0.0.id, version: $0.0.version), $0.1)
            }, uniquingKeysWith: { first, _ in first })
        keys = rows.compactMap { row in
            guard let id = try? PackageID(row.id), let version = try? SemanticVersion(row.version) else { return nil }
            return ReportTally.VersionKey(id: id, version: version)
        }
        since = keys.map { key in sinceOf[key].flatMap { $0 }.map { UInt32(clamping: max(0, $0.secondsSinceEpoch)) } ?? 0 }
        tables = keys.map { _ in TokenTable(empty: Firsts()) }
    }

    func versionAdded(_ key: ReportTally.VersionKey) {
        catalogIndex.append(keys.firstIndex(of: key).map { Int32($0) } ?? -1)
    }

    func count(at t: UInt32, _ items: [ScannedItem]) {
        @inline(__always) func first(_ old: UInt32) -> UInt32 { old == 0 ? t : min(old, t) }
        for item in items {
            let index = catalogIndex[Int(item.version)]
            guard index >= 0 else { continue }
            let after = t > since[Int(index)]
            switch item.role {
            case .offered: continue
            case .active, .confirmed, .failed:
                tables[Int(index)].update(item.token) { firsts in
                    firsts.installed = first(firsts.installed)
                    if after { firsts.installedSince = first(firsts.installedSince) }
                    if item.role == .confirmed {
                        firsts.confirmed = first(firsts.confirmed)
                        if after { firsts.confirmedSince = first(firsts.confirmedSince) }
                    }
                    if item.role == .failed {
                        firsts.failed = first(firsts.failed)
                        if after { firsts.failedSince = first(firsts.failedSince) }
                    }
                }
            }
        }
    }

    /// Devices installed, confirmed and failed at each edge: over every report, and since the version's `since`.
    func counts(at edges: [Timestamp]) -> (all: [[(installed: Int, confirmed: Int, failed: Int)]], sinceStart: [[(installed: Int, confirmed: Int, failed: Int)]]) {
        var all: [[(Int, Int, Int)]] = [], sinceStart: [[(Int, Int, Int)]] = []
        for table in tables {
            var columns: [[UInt32]] = Array(repeating: [], count: 6)
            table.forEach { _, f in
                for (column, value) in [f.installed, f.confirmed, f.failed, f.installedSince, f.confirmedSince, f.failedSince].enumerated() where value != 0 {
                    columns[column].append(value)
                }
            }
            for column in columns.indices { columns[column].sort() }
            func upTo(_ column: Int, _ edge: Timestamp) -> Int {
                let bound = UInt32(clamping: max(0, edge.secondsSinceEpoch))
                var low = 0, high = columns[column].count
                while low < high {
                    let middle = (low + high) / 2
                    if columns[column][middle] <= bound { low = middle + 1 } else { high = middle }
                }
                return low
            }
            all.append(edges.map { (upTo(0, $0), upTo(1, $0), upTo(2, $0)) })
            sinceStart.append(edges.map { (upTo(3, $0), upTo(4, $0), upTo(5, $0)) })
        }
        return (all.map { $0.map { (installed: $0.0, confirmed: $0.1, failed: $0.2) } }, sinceStart.map { $0.map { (installed: $0.0, confirmed: $0.1, failed: $0.2) } })
    }
}

extension ReportTally {
    /// Also gather ``seriesCounts(at:)`` for `catalog`'s versions from the lines added from now on (call before any).
    public func trackSeries(for catalog: Catalog) {
        let series = ReportSeries(catalog)
        for key in versions { series.versionAdded(key) }
        self.series = series
    }

    /// Per catalog version (in the rows' order), devices installed, confirmed and failed at each edge, over every
    /// report and since the version's `since`; nil unless `trackSeries(for:)` was called.
    public func seriesCounts(at edges: [Timestamp]) -> (all: [[(installed: Int, confirmed: Int, failed: Int)]], sinceStart: [[(installed: Int, confirmed: Int, failed: Int)]])? {
        series?.counts(at: edges)
    }
}
