/// HTTP dates (RFC 9110 §5.6.7): `Date`, `Expires`, `Last-Modified`, `If-Modified-Since`, `If-Unmodified-Since`,
/// `If-Range`. Sent in the preferred IMF-fixdate form; read in all three forms a recipient must accept.
extension Timestamp {
    private static let dayNames = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// IMF-fixdate, such as `Sun, 06 Nov 1994 08:49:37 GMT`.
    public var httpDate: String {
        let time = utc
        // 1970-01-01 was a Thursday (index 3 from Monday).
        let days = secondsSinceEpoch >= 0 ? secondsSinceEpoch / 86_400 : (secondsSinceEpoch - 86_399) / 86_400
        let weekday = Int(((days % 7) + 7 + 3) % 7)
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(Self.dayNames[weekday]), \(two(time.day)) \(Self.monthNames[Int(time.month) - 1]) \(time.year) \(two(time.hour)):\(two(time.minute)):\(two(time.second)) GMT"
    }

    /// Parses an HTTP date in IMF-fixdate, RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) or asctime
    /// (`Sun Nov  6 08:49:37 1994`) form; nil for anything else. Names are matched without regard to case (senders
    /// get them wrong more often than they get them ambiguous); a two-digit year more than 50 years ahead of `now`
    /// is the most recent past year with those digits.
    public init?(httpDate text: String, now: Timestamp? = nil) {
        // Single spaces between the parts: a date with others is not one of the three forms. asctime alone pads a
        // one-digit day with a space ("Nov  6"), which leaves an empty part.
        var parts = text.split(separator: " ", omittingEmptySubsequences: false)
        if parts.count == 6, parts[2].isEmpty, parts[3].utf8.count == 1, !parts[0].hasSuffix(",") { parts.remove(at: 2) }
        guard let first = parts.first, !parts.contains(where: \.isEmpty) else { return nil }
        if first.hasSuffix(","), parts.count == 6, parts[5].lowercased() == "gmt" {
            // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
            guard Self.dayIndex(first.dropLast()) != nil, let day = Self.number(parts[1], digits: 1...2),
                let month = Self.monthIndex(parts[2]), let year = Self.number(parts[3], digits: 4...4)
            else { return nil }
            self.init(year: year, month: month, day: day, time: parts[4])
        } else if first.hasSuffix(","), parts.count == 4, parts[3].lowercased() == "gmt" {
            // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
            let date = parts[1].split(separator: "-", omittingEmptySubsequences: false)
            guard date.count == 3, Self.fullDayIndex(first.dropLast()) != nil, let day = Self.number(date[0], digits: 1...2),
                let month = Self.monthIndex(date[1]), let shortYear = Self.number(date[2], digits: 2...2)
            else { return nil }
            let reference = (now ?? Timestamp(secondsSinceEpoch: 1_700_000_000)).utc.year
            var year = reference / 100 * 100 + shortYear
            if year > reference + 50 { year -= 100 }
            self.init(year: year, month: month, day: day, time: parts[2])
        } else if parts.count == 5 {
            // asctime: Sun Nov  6 08:49:37 1994
            guard Self.dayIndex(first) != nil, let month = Self.monthIndex(parts[1]), let day = Self.number(parts[2], digits: 1...2),
                let year = Self.number(parts[4], digits: 4...4)
            else { return nil }
            self.init(year: year, month: month, day: day, time: parts[3])
        } else {
            return nil
        }
    }

    private init?(year: Int64, month: Int64, day: Int64, time: Substring) {
        let clock = time.split(separator: ":", omittingEmptySubsequences: false)
        guard clock.count == 3, let hour = Self.number(clock[0], digits: 2...2), let minute = Self.number(clock[1], digits: 2...2),
            let second = Self.number(clock[2], digits: 2...2), hour < 24, minute < 60, second < 61, (1...31).contains(day)
        else { return nil }
        let days = Self.daysFromCivil(year: year, month: month, day: day)
        guard Self.civil(fromDays: days) == (year, month, day) else { return nil }
        // A leap second reads as the second after it.
        self.init(secondsSinceEpoch: days * 86_400 + hour * 3600 + minute * 60 + min(second, 59) + (second == 60 ? 1 : 0))
    }

    private static func number(_ text: Substring, digits: ClosedRange<Int>) -> Int64? {
        guard digits.contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int64(text)
    }

    private static func dayIndex(_ text: Substring) -> Int? { dayNames.firstIndex { $0.caseInsensitiveEquals(text) } }

    private static func fullDayIndex(_ text: Substring) -> Int? {
        ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"].firstIndex { $0.caseInsensitiveEquals(text) }
    }

    private static func monthIndex(_ text: Substring) -> Int64? {
        monthNames.firstIndex { $0.caseInsensitiveEquals(text) }.map { Int64($0) + 1 }
    }
}

extension String {
    fileprivate func caseInsensitiveEquals(_ other: Substring) -> Bool {
        utf8.count == other.utf8.count && zip(utf8, other.utf8).allSatisfy { a, b in a | 0x20 == b | 0x20 }
    }
}
