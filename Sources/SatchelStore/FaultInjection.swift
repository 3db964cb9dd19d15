import Foundation
import SatchelCore

/// Test-only pauses at named phases, so that the crash test can SIGKILL an operation at a known point, and a record
/// of the paths the store reads, so that tests can tell what opening a store looked at.
///
/// Compiled into debug builds only (the crash test runs a debug `satchel`): a release build, which is what ships,
/// has no pauses at all and never reads `SATCHEL_PAUSE_AT`. In a debug build, `SATCHEL_PAUSE_AT=<phase>` (for example
/// `extract`, `durability`, `rename`, `switch`) makes the operation print `satchel: paused at <phase>` to stderr when
/// it reaches that phase and sleep until it is killed.
enum FaultInjection {
    #if DEBUG
    static let pausePhase: String? = ProcessInfo.processInfo.environment["SATCHEL_PAUSE_AT"]
    /// While at least one test records: the paths read, listed or looked up through ``FileSystem``, in order.
    static let accesses = Locked<(recorders: Int, paths: [String])>((0, []))
    #endif

    @inline(__always)
    static func checkpoint(_ phase: String) {
        #if DEBUG
        guard let pausePhase, pausePhase == phase else { return }
        FileHandle.standardError.write(Data("satchel: paused at \(phase)\n".utf8))
        while true { sleep(3600) }
        #endif
    }

    /// Notes that the store read, listed or looked up `path` (a no-op unless a debug build's test records).
    @inline(__always)
    static func accessed(_ path: String) {
        #if DEBUG
        accesses.withLock { if $0.recorders > 0 { $0.paths.append(path) } }
        #endif
    }

    #if DEBUG
    /// Runs `body` and returns the paths under `root` the store accessed meanwhile (tests run in parallel: other
    /// stores' paths are left out).
    static func recordingAccesses(under root: String, _ body: () throws -> Void) rethrows -> [String] {
        let start = accesses.withLock { state -> Int in
            state.recorders += 1
            return state.paths.count
        }
        defer {
            accesses.withLock { state in
                state.recorders -= 1
                if state.recorders == 0 { state.paths = [] }
            }
        }
        try body()
        return accesses.withLock { Array($0.paths[start...]) }.filter { $0.hasPrefix(root + "/") }
    }
    #endif
}
