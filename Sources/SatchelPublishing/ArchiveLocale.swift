import SatchelArchive
import SatchelBundle
import SatchelCore
import SatchelPlatform
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
