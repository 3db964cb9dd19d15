import SatchelCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What libarchive needs from its environment, provided without touching the process.
///
/// libarchive converts entry names through the C library's current locale, and under the default "C" locale a
/// non-ASCII name cannot be converted (libarchive 3.6's tar writer then crashes). A library inside an app must not
/// change the process's locale (`setlocale`) or time zone (`TZ`): other code in the app depends on them. So every
/// call into libarchive runs with a UTF-8 character-type locale installed for the calling thread only
/// (`uselocale`), and the previous one is put back afterwards. Time zones have no per-thread form; zip times are
/// computed in UTC by ``ZipTime`` instead and written over libarchive's (see ``ArchiveWriter``).
enum ArchiveLocale {
    /// A UTF-8 LC_CTYPE locale, made once; nil only where the C library has none (names then stay ASCII-safe only).
    nonisolated(unsafe) private static let utf8: locale_t? = {
        for name in ["C.UTF-8", "en_US.UTF-8", "UTF-8"] {
            if let made = newlocale(LC_CTYPE_MASK, name, nil) { return made }
        }
        return nil
    }()

    /// Runs `body` (which calls libarchive) with the UTF-8 locale installed for this thread.
    static func withUTF8<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        guard let utf8 else { return try body() }
        let previous = uselocale(utf8)
        defer { uselocale(previous) }
        return try body()
    }
}

/// MS-DOS date and time fields, computed in UTC from the Unix time without consulting the time zone.
enum ZipTime {
    /// The 32-bit value zip stores (date in the high half): 1980-01-01 00:00:00 is the floor and 2107-12-31
    /// 23:59:58 the ceiling, seconds in steps of two, as libarchive clamps.
    static func dosDateTime(unixSeconds: Int64) -> UInt32 {
        let time = Timestamp(secondsSinceEpoch: unixSeconds).utc
        if time.year < 1980 { return 0x0021_0000 }
        if time.year > 2107 { return 0xFF9F_BF7D }
        let date = UInt32(time.year - 1980) << 9 | UInt32(time.month) << 5 | UInt32(time.day)
        return date << 16 | UInt32(time.hour) << 11 | UInt32(time.minute) << 5 | UInt32(time.second / 2)
    }
}
