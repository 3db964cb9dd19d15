/// A point in time with one-second precision, written as RFC 3339 UTC (`2026-11-22T16:41:39Z`), the only form
/// manifests use. Formatting is plain arithmetic, so it cannot depend on a locale or time zone.
public struct Timestamp: Hashable, Sendable, Comparable, CustomStringConvertible, Codable {
    /// Seconds since 1970-01-01T00:00:00Z.
    public let secondsSinceEpoch: Int64

    /// Zip cannot store times before 1980-01-01T00:00:00Z; bundle entries are clamped to it.
    public static let zipEpoch = Timestamp(secondsSinceEpoch: 315_532_800)

    public init(secondsSinceEpoch: Int64) { self.secondsSinceEpoch = secondsSinceEpoch }

    public init(rfc3339 text: String) throws(FieldError) {
        guard let parsed = Self.parse(text) else {
            throw FieldError(field: "createdAt", value: text, reason: "must be RFC 3339 UTC with whole seconds, like 2026-01-31T12:00:00Z")
        }
        self = parsed
    }

    public init(from decoder: any Decoder) throws {
        try self.init(rfc3339: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool { lhs.secondsSinceEpoch < rhs.secondsSinceEpoch }

    /// The date and time in UTC on the proleptic Gregorian calendar: the one calendar computation, used for RFC 3339
    /// text and for the MS-DOS times of zip entries alike.
    public var utc: (year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64) {
        let days = secondsSinceEpoch >= 0 ? secondsSinceEpoch / 86_400 : (secondsSinceEpoch - 86_399) / 86_400
        let secondsOfDay = secondsSinceEpoch - days * 86_400
        let (year, month, day) = Self.civil(fromDays: days)
        return (year, month, day, secondsOfDay / 3600, secondsOfDay % 3600 / 60, secondsOfDay % 60)
    }

    public var description: String {
        let time = utc
        func pad(_ n: Int64, _ width: Int) -> String {
            let s = String(n)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return "\(pad(time.year, 4))-\(pad(time.month, 2))-\(pad(time.day, 2))T\(pad(time.hour, 2)):\(pad(time.minute, 2)):\(pad(time.second, 2))Z"
    }

    private static func parse(_ text: String) -> Timestamp? {
        let b = Array(text.utf8)
        guard b.count == 20, b[4] == 0x2D, b[7] == 0x2D, b[10] == 0x54, b[13] == 0x3A, b[16] == 0x3A, b[19] == 0x5A
        else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var n: Int64 = 0
            for i in range {
                guard b[i] >= 0x30, b[i] <= 0x39 else { return nil }
                n = n * 10 + Int64(b[i] - 0x30)
            }
            return n
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        // Reject dates such as 2026-02-30 that arithmetic would silently roll over.
        guard civil(fromDays: days) == (year, month, day) else { return nil }
        return Timestamp(secondsSinceEpoch: days * 86_400 + hour * 3600 + minute * 60 + second)
    }

    // Howard Hinnant's days-from-civil algorithms (proleptic Gregorian calendar).
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
