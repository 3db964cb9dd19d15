import Foundation
import SatchelCore
import SatchelEngine

/// The latest requests and how each was answered, for the status page.
public final class RequestLog: Sendable {
    public struct Entry: Sendable, Codable, Equatable {
        /// `HH:mm:ss.SSS` UTC.
        public var time: String
        public var method: String
        public var url: String
        public var status: Int
        public var outcome: AnswerLabel
        /// The channel that restored the request's body, if any.
        public var bodyChannel: String?
        public var milliseconds: Double
    }

    /// What is kept per request: the time stays a number and the URL a parsed target until someone reads the
    /// log (the hot path records every request; the status page reads rarely).
    struct Record: Sendable {
        var millisecondsOfDay: Int
        var method: String
        var target: RequestTarget
        /// Query parameters whose values are never shown (``LogRedaction``).
        var secretParameters: [String]
        var status: Int
        var outcome: AnswerLabel
        var bodyChannel: String?
        var milliseconds: Double
    }

    /// A ring of the last `capacity` records; `next` is where the next one goes.
    private let ring = Locked((records: [Record](), next: 0))
    public let capacity: Int

    public init(capacity: Int = 200) { self.capacity = max(1, capacity) }

    func record(_ record: Record) {
        // The record it replaces is released after the lock (its strings freed), which both event loops wait on.
        let replaced: Record? = ring.withLock { ring in
            var replaced: Record?
            if ring.records.count < capacity {
                ring.records.append(record)
            } else {
                replaced = ring.records[ring.next]
                ring.records[ring.next] = record
            }
            ring.next = (ring.next + 1) % capacity
            return replaced
        }
        _ = replaced
    }

    /// Newest first.
    public var recent: [Entry] {
        let (records, next) = ring.withLock { ($0.records, $0.next) }
        let ordered = records.count < capacity ? records : Array(records[next...] + records[..<next])
        return ordered.reversed().map { record in
            Entry(
                time: Self.clockText(record.millisecondsOfDay), method: record.method,
                url: Self.shownURL(record.target, secretParameters: record.secretParameters), status: record.status,
                outcome: record.outcome, bodyChannel: record.bodyChannel, milliseconds: record.milliseconds)
        }
    }

    /// The URL as the log and the status page show it: absolute, with credentials redacted.
    static func shownURL(_ target: RequestTarget, secretParameters: [String]) -> String {
        LogRedaction.redacting(
            target.isAbsolute ? target.raw : "http://\(target.host)\(target.port.map { ":\($0)" } ?? "")\(target.pathAndQuery)",
            secretParameters: secretParameters)
    }

    /// Milliseconds since midnight UTC, now, by arithmetic (a DateFormatter per request cost more than serving the file).
    static func millisecondsOfDayNow() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return (Int(now.tv_sec) % 86_400) * 1000 + Int(now.tv_nsec) / 1_000_000
    }

    static func clockText(_ milliseconds: Int) -> String {
        let seconds = milliseconds / 1000
        let millis = milliseconds % 1000
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let ms = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
        return "\(two(seconds / 3600)):\(two(seconds % 3600 / 60)):\(two(seconds % 60)).\(ms)"
    }
}
