import Foundation

/// Test-only pauses at named phases, so that the crash test can SIGKILL an operation at a known point.
///
/// Compiled into debug builds only (the crash test runs a debug `satchel`): a release build, which is what ships,
/// has no pauses at all and never reads `SATCHEL_PAUSE_AT`. In a debug build, `SATCHEL_PAUSE_AT=<phase>` (for example
/// `extract`, `durability`, `rename`, `switch`) makes the operation print `satchel: paused at <phase>` to stderr when
/// it reaches that phase and sleep until it is killed.
enum FaultInjection {
    #if DEBUG
    static let pausePhase: String? = ProcessInfo.processInfo.environment["SATCHEL_PAUSE_AT"]
    #endif

    @inline(__always)
    static func checkpoint(_ phase: String) {
        #if DEBUG
        guard let pausePhase, pausePhase == phase else { return }
        FileHandle.standardError.write(Data("satchel: paused at \(phase)\n".utf8))
        while true { sleep(3600) }
        #endif
    }
}
