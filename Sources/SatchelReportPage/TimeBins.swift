import SatchelCore

/// The time axis of a report: bins of one round width (a minute up to a month) aligned to UTC multiples of it, few
/// enough to read and draw (at most `maxBins`), covering every instant given. Counts are cumulative, so the page takes
/// one point at each edge, the last edge at or after the last instant.
public struct TimeBins: Hashable, Sendable {
    /// Widths a person reads without arithmetic, smallest first.
    public static let widths: [Int64] = [60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86_400, 2 * 86_400, 7 * 86_400, 14 * 86_400, 30 * 86_400]
    public static let maxBins = 48

    public let width: Int64
    /// Ascending; `edges.count - 1` bins.
    public let edges: [Timestamp]

    public init(width: Int64, edges: [Timestamp]) {
        self.width = width
        self.edges = edges
    }

    /// Nil when there is no instant to place.
    public static func covering(_ instants: [Timestamp]) -> TimeBins? {
        guard let first = instants.min()?.secondsSinceEpoch, let last = instants.max()?.secondsSinceEpoch else { return nil }
        func floor(_ t: Int64, _ w: Int64) -> Int64 { t >= 0 ? t / w * w : (t - w + 1) / w * w }
        func bins(_ w: Int64) -> Int64 { max(1, (last - floor(first, w) + w - 1) / w) }
        // Beyond the widest width the count grows with the span: a log of years still gets an axis, only denser.
        let width = widths.first { bins($0) <= Int64(maxBins) } ?? widths.last!
        let start = floor(first, width)
        let count = bins(width)
        return TimeBins(width: width, edges: (0...count).map { Timestamp(secondsSinceEpoch: start + $0 * width) })
    }

    public var start: Timestamp { edges.first! }
    public var end: Timestamp { edges.last! }

    /// The label under a tick: the date once bins are a day or more, else day and time (UTC, as the reports are).
    public func label(_ instant: Timestamp) -> String {
        let t = instant.utc
        func pad(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return width >= 86_400 ? "\(t.year)-\(pad(t.month))-\(pad(t.day))" : "\(pad(t.month))-\(pad(t.day)) \(pad(t.hour)):\(pad(t.minute))"
    }
}
