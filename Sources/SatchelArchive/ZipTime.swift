import SatchelCore

/// MS-DOS date and time fields, computed in UTC from the Unix time without consulting the time zone.
package enum ZipTime {
    /// The 32-bit value zip stores (date in the high half): 1980-01-01 00:00:00 is the floor and 2107-12-31
    /// 23:59:58 the ceiling, seconds in steps of two, as libarchive clamps.
    package static func dosDateTime(unixSeconds: Int64) -> UInt32 {
        let time = Timestamp(secondsSinceEpoch: unixSeconds).utc
        if time.year < 1980 { return 0x0021_0000 }
        if time.year > 2107 { return 0xFF9F_BF7D }
        let date = UInt32(time.year - 1980) << 9 | UInt32(time.month) << 5 | UInt32(time.day)
        return date << 16 | UInt32(time.hour) << 11 | UInt32(time.minute) << 5 | UInt32(time.second / 2)
    }
}
