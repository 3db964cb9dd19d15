import Foundation

/// Test-only pauses at named phases, so that the crash test can SIGKILL an operation at a known point.
///
/// Set `SATCHEL_PAUSE_AT=<phase>` (for example `extract`, `durability`, `rename`, `switch`): when the
/// operation reaches that phase it prints `satchel: paused at <phase>` to stderr and sleeps until it is
/// killed. Unset (always, outside tests), every call is a cheap comparison against nil.
enum FaultInjection {
    static let pausePhase: String? = ProcessInfo.processInfo.environment["SATCHEL_PAUSE_AT"]

    static func checkpoint(_ phase: String) {
        guard let pausePhase, pausePhase == phase else { return }
        FileHandle.standardError.write(Data("satchel: paused at \(phase)\n".utf8))
        while true { sleep(3600) }
    }
}
