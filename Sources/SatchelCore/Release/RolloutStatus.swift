import Foundation

/// One line of a reports file (`satchel serve --reports`, or an access log in the same shape): when the record was
/// received and what the device said.
public struct ReportRecord: Hashable, Sendable {
    public var at: Timestamp
    /// `post` (the report URL) or `header` (a catalog request's headers).
    public var via: String
    public var report: DeviceReport

    public init(at: Timestamp, via: String, report: DeviceReport) {
        self.at = at
        self.via = via
        self.report = report
    }

    public var jsonLine: [UInt8] {
        guard case .object(var fields) = report.canonicalJSON else { return [] }
        fields["at"] = .string(at.description)
        fields["via"] = .string(via)
        return CanonicalJSON.object(fields).bytes + [0x0A]
    }

    /// A line as `jsonLine` writes it, or as an access log writes one: `{"at", "via", "channel", "report"}` holding
    /// the two raw header values, which are then parsed as the device sent them.
    public static func parse(line: [UInt8]) throws(DeviceReportError) -> ReportRecord {
        struct Head: Decodable {
            let at: String
            let via: String?
            let channel: String?
            let report: String?
        }
        let head: Head
        do { head = try JSONDecoder().decode(Head.self, from: Data(line)) } catch { throw .malformed("\(error)") }
        let at = try Self.instant(head.at)
        if let raw = head.report {
            return ReportRecord(at: at, via: head.via ?? "header", report: try DeviceReport.parse(channel: head.channel, report: raw))
        }
        return ReportRecord(at: at, via: head.via ?? "post", report: try DeviceReport.decode(line))
    }

    /// RFC 3339 in UTC (`Z`), or with a numeric offset as nginx's `$time_iso8601` writes local time (`+01:00`).
    static func instant(_ text: String) throws(DeviceReportError) -> Timestamp {
        do { return try Timestamp(rfc3339: text) } catch {}
        let bytes = Array(text.utf8)
        guard bytes.count == 25, bytes[19] == UInt8(ascii: "+") || bytes[19] == UInt8(ascii: "-"), bytes[22] == UInt8(ascii: ":"),
            let hours = Int(String(decoding: bytes[20..<22], as: UTF8.self)), let minutes = Int(String(decoding: bytes[23..<25], as: UTF8.self)),
            let local = try? Timestamp(rfc3339: String(decoding: bytes[0..<19], as: UTF8.self) + "Z")
        else { throw .malformed("\(text.debugDescription) is not an RFC 3339 instant") }
        let offset = Int64(hours * 3600 + minutes * 60) * (bytes[19] == UInt8(ascii: "+") ? 1 : -1)
        return Timestamp(secondsSinceEpoch: local.secondsSinceEpoch - offset)
    }
}

/// What the reports say about each version of a catalog, counted by device (distinct tokens), from the moment the
/// version's current rollout step began, or its watch (a version released to everyone that `rollout advance` still
/// judges).
public struct VersionStatus: Hashable, Sendable, Codable {
    public var id: String
    public var version: String
    /// The share of devices, 0-100 (one decimal at most).
    public var percent: Double
    /// `released` (in `packages`, for every device), `staged`, `halted` or `revoked`.
    public var state: String
    public var offered: Int
    /// Devices that had it active or report it failed: the ones that tried it.
    public var installed: Int
    public var confirmed: Int
    /// Devices that report it failed for a reason of their own (not `revoked`).
    public var failed: Int
    public var failureRate: Double
    /// The failure rate's 95 % Wilson interval.
    public var interval: [Double]
    /// The devices counted in `failed`, by the reason the device gave (its report's `why`; `trial` for reports from
    /// before reasons), each device under the reason of its latest report, so the counts add up to `failed`.
    public var failuresByReason: [String: Int] = [:]
    /// When counting began (the rollout step's or the watch's start, RFC 3339); nil when every report counts.
    public var since: String? = nil
    /// Whether the version is released and watched: `rollout advance` may still halt it.
    public var watched: Bool = false

    /// `failuresByReason` as text, most frequent first: "crashed 3, script-error 2" ("" when none failed).
    public var reasonsText: String {
        failuresByReason.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    }

    /// The reference count over parsed records, kept simple so it can be read against docs/formats.md ("Counting");
    /// ``ReportTally`` gives the same rows while reading reports as a stream.
    public static func compute(_ catalog: Catalog, channel: ReleaseChannel? = nil, records: [ReportRecord]) -> [VersionStatus] {
        rows(catalog) { entry, since in
            var offered = Set<String>(), installed = Set<String>(), confirmed = Set<String>(), failed = Set<String>()
            var reasons: [String: (at: Timestamp, why: String)] = [:]
            // Strictly after: timestamps have whole seconds, so a report from the step's own second may predate it.
            for record in records where since.map({ record.at > $0 }) ?? true && (channel.map { record.report.channel == $0 } ?? true) {
                for item in record.report.items where item.id == entry.id && item.version == entry.version {
                    switch item.role {
                    case .offered: offered.insert(item.token)
                    case .active:
                        installed.insert(item.token)
                        if item.state == "confirmed" { confirmed.insert(item.token) }
                    case .failed:
                        guard item.why != "revoked" else { continue }
                        installed.insert(item.token)
                        failed.insert(item.token)
                        let why = item.why ?? TrialFailure.trial.why
                        // The latest report's reason; within one second the greater word, so the order of lines (or of
                        // files) never changes the answer.
                        if let seen = reasons[item.token], seen.at > record.at || (seen.at == record.at && seen.why >= why) { continue }
                        reasons[item.token] = (record.at, why)
                    }
                }
            }
            return Counts(
                offered: offered.count, installed: installed.count, confirmed: confirmed.count, failed: failed.count,
                failuresByReason: reasons.values.reduce(into: [:]) { $0[$1.why, default: 0] += 1 })
        }
    }
}

/// The automatic step of a staged rollout: raise it along a schedule while the failure rate is clearly below the
/// threshold, halt it as soon as it is clearly above, wait otherwise. Pure; `satchel rollout advance` applies it.
public enum RolloutStep: Hashable, Sendable {
    case advance(to: Int)
    /// Raised to 100 %: the version moves to `packages`, where every updater (older ones too) sees it, and is watched.
    case release
    case halt
    case wait(String)

    public static func decide(
        _ rollout: Rollout, status: VersionStatus, schedule: [Int], maxFailureRate: Double, minDevices: Int
    ) -> RolloutStep {
        guard rollout.state == .staged else { return .wait("\(rollout.state.rawValue), not staged") }
        if status.interval[0] > maxFailureRate { return .halt }
        guard status.installed >= minDevices else { return .wait("\(status.installed) devices reported it, fewer than \(minDevices)") }
        guard status.interval[1] < maxFailureRate else {
            return .wait(String(format: "failure rate %.4f, interval [%.4f, %.4f] straddles %.4f", status.failureRate, status.interval[0], status.interval[1], maxFailureRate))
        }
        guard let next = schedule.first(where: { $0 > rollout.permille }) else { return .release }
        return next >= 1000 ? .release : .advance(to: next)
    }

    /// The catalog after `step` (a new serial and step start when it changes anything), or nil when it does not.
    public static func apply(_ step: RolloutStep, to rollout: Rollout, in catalog: Catalog, now: Timestamp) throws(CatalogError) -> Catalog? {
        var rollouts = catalog.rollouts
        guard let index = rollouts.firstIndex(where: { $0.entry.id == rollout.entry.id && $0.entry.version == rollout.entry.version }) else { return nil }
        switch step {
        case .wait: return nil
        case .advance(let permille):
            rollouts[index].permille = permille
            rollouts[index].since = now
            return try catalog.with(rollouts: rollouts, serial: catalog.serial + 1)
        case .halt:
            rollouts[index].state = .halted
            rollouts[index].since = now
            return try catalog.with(rollouts: rollouts, serial: catalog.serial + 1)
        case .release:
            let entry = rollouts.remove(at: index).entry
            return try catalog.with(
                packages: catalog.packages + [entry], rollouts: rollouts,
                watches: catalog.watches + [ReleaseWatch(id: entry.id, version: entry.version, since: now)], serial: catalog.serial + 1)
        }
    }
}

/// The automatic step of a watched release (a version in `packages` with a watch): halt it by the same rule as a
/// staged version, which takes it out of `packages` (the only way to keep older updaters from installing it), or end
/// the watch once enough devices confirmed it and the failure rate's interval lies below the threshold. Pure; `satchel rollout advance` applies it.
public enum WatchStep: Hashable, Sendable {
    /// Clearly failing: it moves to `rollouts`, halted at 100 %, so no new device gets it and devices on it keep it.
    case halt
    /// Enough devices confirmed it and its failure rate is clearly below the threshold: the watch ends.
    case end
    case watch(String)

    public static func decide(_ watch: ReleaseWatch, status: VersionStatus, maxFailureRate: Double, confirmations: Int) -> WatchStep {
        if status.interval[0] > maxFailureRate { return .halt }
        // Ending the watch is the release's last check, so it asks as much as raising a staged share: clearly healthy,
        // not merely not clearly failing.
        guard status.confirmed >= confirmations, status.interval[1] < maxFailureRate else {
            return .watch("\(status.confirmed) of \(confirmations) confirmations, " + String(
                format: "failure rate %.4f, interval [%.4f, %.4f]", status.failureRate, status.interval[0], status.interval[1]))
        }
        return .end
    }

    /// The catalog after `step` (a new serial), or nil when it changes nothing.
    public static func apply(_ step: WatchStep, to watch: ReleaseWatch, in catalog: Catalog, now: Timestamp) throws(CatalogError) -> Catalog? {
        guard let entry = catalog.packages.first(where: watch.watches), catalog.watches.contains(watch) else { return nil }
        let watches = catalog.watches.filter { $0 != watch }
        switch step {
        case .watch: return nil
        case .end: return try catalog.with(watches: watches, serial: catalog.serial + 1)
        case .halt:
            return try catalog.with(
                packages: catalog.packages.filter { !watch.watches($0) },
                rollouts: catalog.rollouts + [Rollout(entry: entry, permille: 1000, state: .halted, since: now)], watches: watches,
                serial: catalog.serial + 1)
        }
    }
}
