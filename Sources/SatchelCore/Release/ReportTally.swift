/// Device reports counted as they stream by (`satchel rollout status|advance|report`), in memory that follows the
/// devices and versions seen, not the lines read: per (id, version) a ``TokenTable`` from each device's token to the
/// latest instant it offered, had active, had confirmed and had failed that version (and the reason of that failure).
/// Those facts answer ``VersionStatus/compute(_:channel:records:)``'s counts for any `since` (a token counts when its
/// latest fact of a kind is after it), so a state kept between runs stays right when `rollout advance` moves a step's
/// start. Adding a record twice changes no fact, only the line counts.
///
/// Instants are kept as 32-bit seconds since 1970 (0: never), clamped to 1970-2106, which changes no comparison with a
/// `since` inside that range.
public final class ReportTally {
    /// Lines that parsed as reports, and lines that did not (never fatal: a log holds other lines too).
    public internal(set) var records = 0
    public internal(set) var skipped = 0
    /// The earliest and latest instant of a report counted.
    public internal(set) var earliest: Timestamp?
    public internal(set) var latest: Timestamp?

    struct Facts: BitwiseCopyable {
        var offered: UInt32 = 0
        var active: UInt32 = 0
        var confirmed: UInt32 = 0
        var failed: UInt32 = 0
        /// Index into `reasons` of the reason given with `failed`.
        var reason: UInt32 = 0
    }

    struct VersionKey: Hashable {
        let id: PackageID
        let version: SemanticVersion
    }

    var versions: [VersionKey] = []
    var tables: [TokenTable<Facts>] = []
    var versionIndex: [VersionKey: Int32] = [:]
    var reasons: [String] = []
    var reasonIndex: [String: UInt32] = [:]
    var scanner = ReportLineScanner()
    var series: ReportSeries?
    /// Where the loads of `TokenTable.touch` go, so the optimiser keeps them.
    private var touched: UInt64 = 0

    public init() {}

    /// Distinct (version, device) pairs held, and the bytes their tables take.
    public var devices: Int { tables.reduce(0) { $0 + $1.count } }
    public var tableBytes: Int { tables.reduce(0) { $0 + $1.bytes } }

    // MARK: Adding

    /// One line of a reports file, without its newline. An empty line is no line (as splitting a file drops it).
    public func add(line: UnsafeRawBufferPointer) {
        guard !line.isEmpty else { return }
        switch scanner.scan(line, tally: self) {
        case .report: break
        case .refused: skipped += 1
        case .unsure:
            // A shape the scanner does not take on itself (an unknown field, an escape in a structured field, a
            // number written oddly): the reference parser decides, so both accept and refuse the same lines.
            guard let record = try? ReportRecord.parse(line: Array(line)) else {
                skipped += 1
                return
            }
            add(record)
        }
    }

    public func add(line: [UInt8]) { line.withUnsafeBytes { add(line: $0) } }

    /// A parsed record, counted as a line.
    public func add(_ record: ReportRecord) {
        scanner.pending.removeAll(keepingCapacity: true)
        for item in record.report.items {
            let role: ScannedItem.Role
            var reason: UInt32 = 0
            switch item.role {
            case .offered: role = .offered
            case .active: role = item.state == "confirmed" ? .confirmed : .active
            case .failed:
                guard item.why != "revoked" else { continue }
                role = .failed
                reason = intern(reason: item.why ?? TrialFailure.trial.why)
            }
            guard let token = ReportLineScanner.hexToken(Array(item.token.utf8)) else { continue }
            scanner.pending.append(ScannedItem(version: intern(VersionKey(id: item.id, version: item.version)), role: role, token: token, reason: reason))
        }
        count(at: record.at.secondsSinceEpoch, scanner.pending)
    }

    func intern(_ key: VersionKey) -> Int32 {
        if let index = versionIndex[key] { return index }
        let index = Int32(versions.count)
        versions.append(key)
        tables.append(TokenTable(empty: Facts()))
        versionIndex[key] = index
        series?.versionAdded(key)
        return index
    }

    func intern(reason: String) -> UInt32 {
        if let index = reasonIndex[reason] { return index }
        let index = UInt32(reasons.count)
        reasons.append(reason)
        reasonIndex[reason] = index
        return index
    }

    static func stored(_ seconds: Int64) -> UInt32 { UInt32(clamping: max(1, seconds)) }

    func count(at seconds: Int64, _ items: [ScannedItem]) {
        records += 1
        let at = Timestamp(secondsSinceEpoch: seconds)
        if earliest.map({ at < $0 }) ?? true { earliest = at }
        if latest.map({ at > $0 }) ?? true { latest = at }
        let t = Self.stored(seconds)
        var touched: UInt64 = 0
        for item in items { touched ^= tables[Int(item.version)].touch(item.token) }
        self.touched = touched
        for item in items {
            let table = tables[Int(item.version)]
            switch item.role {
            case .offered: table.update(item.token) { $0.offered = max($0.offered, t) }
            case .active: table.update(item.token) { $0.active = max($0.active, t) }
            case .confirmed:
                table.update(item.token) {
                    $0.active = max($0.active, t)
                    $0.confirmed = max($0.confirmed, t)
                }
            case .failed:
                table.update(item.token) { facts in
                    // The latest failure names the device's reason; at the same second the greater word, so the answer
                    // does not depend on the order of lines or files.
                    if t > facts.failed || (t == facts.failed && facts.reason != item.reason && reasons[Int(item.reason)] > reasons[Int(facts.reason)]) {
                        facts.failed = t
                        facts.reason = item.reason
                    }
                }
            }
        }
        series?.count(at: t, items)
    }

    // MARK: Answers

    /// The rows `VersionStatus.compute(catalog, records:)` gives for every record added.
    public func statuses(_ catalog: Catalog) -> [VersionStatus] {
        VersionStatus.rows(catalog) { entry, since in
            var counts = VersionStatus.Counts()
            guard let index = versionIndex[VersionKey(id: entry.id, version: entry.version)] else { return counts }
            let after: UInt32 = since.map { UInt32(clamping: max(0, $0.secondsSinceEpoch)) } ?? 0
            var byReason: [UInt32: Int] = [:]
            tables[Int(index)].forEach { _, facts in
                if facts.offered > after { counts.offered += 1 }
                if max(facts.active, facts.failed) > after { counts.installed += 1 }
                if facts.confirmed > after { counts.confirmed += 1 }
                if facts.failed > after {
                    counts.failed += 1
                    byReason[facts.reason, default: 0] += 1
                }
            }
            for (reason, n) in byReason { counts.failuresByReason[reasons[Int(reason)], default: 0] += n }
            return counts
        }
    }
}

/// One item of a line as counting needs it: which version, whose token, and what it says.
struct ScannedItem {
    enum Role: UInt8 { case offered, active, confirmed, failed }
    var version: Int32
    var role: Role
    var token: UInt64
    /// For `failed`: index into the tally's reasons.
    var reason: UInt32
}

extension VersionStatus {
    /// Distinct devices per count, for one version.
    struct Counts {
        var offered = 0, installed = 0, confirmed = 0, failed = 0
        var failuresByReason: [String: Int] = [:]
    }

    /// The catalog's versions in `compute`'s order, each row from `count(entry, since)`: the one place rows are made,
    /// so the reference and the streaming tally differ only in how they count.
    static func rows(_ catalog: Catalog, count: (CatalogEntry, Timestamp?) -> Counts) -> [VersionStatus] {
        let versions: [(CatalogEntry, Rollout?)] = catalog.packages.map { ($0, nil) } + catalog.rollouts.map { ($0.entry, $0) }
        return versions.sorted(by: { ($0.0.id.value, $0.0.version) < ($1.0.id.value, $1.0.version) }).map { entry, rollout in
            let watch = rollout == nil ? catalog.watch(of: entry) : nil
            let since = rollout?.since ?? watch?.since
            let counts = count(entry, since)
            let rate = failureRate(failed: counts.failed, installed: counts.installed)
            return VersionStatus(
                id: entry.id.value, version: entry.version.description, percent: Double(rollout?.permille ?? 1000) / 10, state: rollout?.state.rawValue ?? "released",
                offered: counts.offered, installed: counts.installed, confirmed: counts.confirmed, failed: counts.failed,
                failureRate: rate.rate, interval: rate.interval, failuresByReason: counts.failuresByReason, since: since?.description, watched: watch != nil)
        }
    }

    /// failed / installed (0 with none installed) and its 95 % Wilson interval.
    public static func failureRate(failed: Int, installed: Int) -> (rate: Double, interval: [Double]) {
        let bounds = WilsonInterval.bounds(failures: failed, trials: installed)
        return (installed == 0 ? 0 : Double(failed) / Double(installed), [bounds.low, bounds.high])
    }
}
