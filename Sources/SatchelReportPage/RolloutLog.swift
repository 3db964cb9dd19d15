import Foundation
import SatchelCore

/// One decision of the rollout log (JSON lines, one object per `rollout advance` or `watch` decision): when, which
/// version, what was done and why, with the threshold it was judged against and the counts it saw.
public struct RolloutLogEvent: Hashable, Sendable {
    public var at: Timestamp
    public var serial: Int64?
    public var id: String
    public var version: String
    /// `advanced`, `released`, `halted`, `waiting`, `watching` or `watch-ended`; kept as written, since a newer
    /// writer may add actions this page then lists without knowing them.
    public var action: String
    /// The new share in percent, for `advanced` and `released`.
    public var to: Double?
    public var reason: String?
    public var maxFailureRate: Double?
    /// What the decision saw, when the line carries its status.
    public var installed: Int?
    public var failed: Int?
    public var failureRate: Double?

    public init(
        at: Timestamp, serial: Int64? = nil, id: String, version: String, action: String, to: Double? = nil, reason: String? = nil,
        maxFailureRate: Double? = nil, installed: Int? = nil, failed: Int? = nil, failureRate: Double? = nil
    ) {
        self.at = at
        self.serial = serial
        self.id = id
        self.version = version
        self.action = action
        self.to = to
        self.reason = reason
        self.maxFailureRate = maxFailureRate
        self.installed = installed
        self.failed = failed
        self.failureRate = failureRate
    }

    /// Steps that changed what devices get: the ones worth a mark on the time axis.
    public var changesRollout: Bool { ["advanced", "released", "halted"].contains(action) }
}

/// A rollout log as read: its events in the order written, and how many non-empty lines were not events (a log
/// appended to by hand or cut mid-line must still give a page, so they are counted, never fatal).
public struct RolloutLog: Hashable, Sendable {
    public var events: [RolloutLogEvent]
    public var badLines: Int

    public init(events: [RolloutLogEvent], badLines: Int) {
        self.events = events
        self.badLines = badLines
    }

    public static func parse(_ bytes: [UInt8]) -> RolloutLog {
        struct Wire: Decodable {
            struct Status: Decodable {
                let installed: Int?
                let failed: Int?
                let failureRate: Double?
            }
            let at: String
            let serial: Int64?
            let id: String
            let version: String
            let action: String
            let to: Double?
            let reason: String?
            let maxFailureRate: Double?
            let status: Status?
        }
        var events: [RolloutLogEvent] = []
        var bad = 0
        let decoder = JSONDecoder()
        for line in bytes.split(separator: 0x0A) {
            guard line.contains(where: { $0 != 0x20 && $0 != 0x0D && $0 != 0x09 }) else { continue }
            guard let wire = try? decoder.decode(Wire.self, from: Data(line)), let at = try? Timestamp(rfc3339: wire.at) else {
                bad += 1
                continue
            }
            events.append(RolloutLogEvent(
                at: at, serial: wire.serial, id: wire.id, version: wire.version, action: wire.action, to: wire.to, reason: wire.reason,
                maxFailureRate: wire.maxFailureRate, installed: wire.status?.installed, failed: wire.status?.failed,
                failureRate: wire.status?.failureRate))
        }
        return RolloutLog(events: events, badLines: bad)
    }

    /// The threshold the last decision was judged against: the latest event (by time, then by line) that names one.
    public var latestMaxFailureRate: (value: Double, at: Timestamp)? {
        var latest: (value: Double, at: Timestamp)?
        for event in events {
            guard let rate = event.maxFailureRate else { continue }
            if latest == nil || event.at >= latest!.at { latest = (rate, event.at) }
        }
        return latest
    }
}
