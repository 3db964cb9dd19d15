import Foundation
import SatchelCore
@testable import SatchelStore
import Testing

/// The fallback rules as a table: each row is a starting state, the versions that exist, one or more
/// operations, and what must come out. Expected values come from the rules as the issue states them, not from
/// running the code: the fallback is the newest earlier version that served and did not fail (confirmed, or
/// superseded while on trial); a trial that runs out is marked failed and never chosen again automatically; the
/// built-in is the floor; gc, remove and recovery keep one set.
@Suite("Package state rules")
struct PackageStateRulesTests {
    enum Operation: Sendable {
        case install(String)
        case activate(String)
        case confirm
        case rollback
        case launch(max: Int)
        case remove(String)
        case gc(keep: Int)
    }

    enum Outcome: Equatable, Sendable {
        case state(PackageState)
        case refused(StateRefusal)
        case launched(LaunchOutcome, PackageState)
    }

    struct Case: CustomTestStringConvertible, Sendable {
        let label: String
        let start: PackageState
        var installed: [String] = []
        var builtIn: String? = nil
        let operations: [Operation]
        let expected: Outcome
        var testDescription: String { label }
    }

    static func s(
        _ active: String, trial: Bool = false, launches: Int = 0, history: [String] = [], unconfirmed: [String] = [], failed: [String] = []
    ) -> PackageState {
        PackageState(
            active: v(active), trial: trial ? v(active) : nil, launches: launches, history: history.map(v),
            unconfirmed: Set(unconfirmed.map(v)), failed: Set(failed.map(v)))
    }

    static let cases: [Case] = [
        // Installing.
        Case(label: "install over a confirmed version: a new trial; the confirmed one is the fallback",
             start: s("1.0.0", history: ["1.0.0"]), installed: ["1.0.0", "1.1.0"], operations: [.install("1.1.0")],
             expected: .state(s("1.1.0", trial: true, history: ["1.0.0"]))),
        Case(label: "install over a trial that did not fail: the trial served, so it stays as an unconfirmed fallback",
             start: s("1.0.0", trial: true, launches: 1), installed: ["1.0.0", "1.1.0"], operations: [.install("1.1.0")],
             expected: .state(s("1.1.0", trial: true, history: ["1.0.0"], unconfirmed: ["1.0.0"]))),
        Case(label: "install over a trial that ran out with nowhere to go: it failed, so it is no fallback",
             start: s("1.0.0", trial: true, launches: 4, failed: ["1.0.0"]), installed: ["1.0.0", "1.1.0"], operations: [.install("1.1.0")],
             expected: .state(s("1.1.0", trial: true, failed: ["1.0.0"]))),
        Case(label: "installing the active version again changes nothing",
             start: s("1.1.0", trial: true, launches: 2, history: ["1.0.0"]), installed: ["1.0.0", "1.1.0"], operations: [.install("1.1.0")],
             expected: .state(s("1.1.0", trial: true, launches: 2, history: ["1.0.0"]))),
        Case(label: "reinstalling a failed active version gives it a new trial",
             start: s("1.0.0", trial: true, launches: 4, failed: ["1.0.0"]), installed: ["1.0.0"], operations: [.install("1.0.0")],
             expected: .state(s("1.0.0", trial: true))),
        Case(label: "reinstalling a version that failed earlier may choose it again",
             start: s("1.0.0", history: ["1.0.0"], failed: ["1.1.0"]), installed: ["1.0.0", "1.1.0"], operations: [.install("1.1.0")],
             expected: .state(s("1.1.0", trial: true, history: ["1.0.0"]))),
        Case(label: "the first install over a built-in: a trial whose fallback is the built-in",
             start: .builtIn(v("1.0.0")), installed: ["1.1.0"], builtIn: "1.0.0", operations: [.install("1.1.0")],
             expected: .state(s("1.1.0", trial: true, history: ["1.0.0"]))),
        Case(label: "a version older than the built-in is refused",
             start: .builtIn(v("2.0.0")), installed: ["1.5.0"], builtIn: "2.0.0", operations: [.install("1.5.0")],
             expected: .refused(.belowBuiltIn(v("1.5.0"), builtIn: v("2.0.0")))),
        Case(label: "installing the built-in's own version makes the built-in serve, confirmed",
             start: s("1.1.0", history: ["1.0.0", "1.1.0"]), installed: ["1.1.0"], builtIn: "1.0.0", operations: [.install("1.0.0")],
             expected: .state(s("1.0.0", history: ["1.0.0", "1.1.0"]))),

        // Confirming.
        Case(label: "confirming a trial makes it the newest confirmed version",
             start: s("1.1.0", trial: true, launches: 2, history: ["1.0.0"]), installed: ["1.0.0", "1.1.0"], operations: [.confirm],
             expected: .state(s("1.1.0", history: ["1.0.0", "1.1.0"]))),
        Case(label: "confirming a trial that ran out with nowhere to go clears its failure",
             start: s("1.0.0", trial: true, launches: 5, failed: ["1.0.0"]), installed: ["1.0.0"], operations: [.confirm],
             expected: .state(s("1.0.0", history: ["1.0.0"]))),
        Case(label: "confirming what is not on trial is refused",
             start: s("1.0.0", history: ["1.0.0"]), installed: ["1.0.0"], operations: [.confirm], expected: .refused(.notOnTrial)),

        // Rolling back.
        Case(label: "rollback after two installs returns to the first (on trial: it never proved itself)",
             start: .firstInstall(v("1.0.0")), installed: ["1.0.0", "1.1.0"], operations: [.install("1.1.0"), .rollback],
             expected: .state(s("1.0.0", trial: true, failed: ["1.1.0"]))),
        Case(label: "rollback walks back through confirmed versions",
             start: s("1.2.0", history: ["1.0.0", "1.1.0", "1.2.0"]), installed: ["1.0.0", "1.1.0", "1.2.0"], operations: [.rollback],
             expected: .state(s("1.1.0", history: ["1.0.0", "1.1.0"], failed: ["1.2.0"]))),
        Case(label: "a second rollback goes further back, never forth again",
             start: s("1.2.0", history: ["1.0.0", "1.1.0", "1.2.0"]), installed: ["1.0.0", "1.1.0", "1.2.0"], operations: [.rollback, .rollback],
             expected: .state(s("1.0.0", history: ["1.0.0"], failed: ["1.1.0", "1.2.0"]))),
        Case(label: "rollback with nothing earlier is refused",
             start: s("1.0.0", history: ["1.0.0"]), installed: ["1.0.0"], operations: [.rollback], expected: .refused(.noFallback)),
        Case(label: "rollback skips failed, vanished and too-old versions",
             start: s("1.4.0", trial: true, history: ["0.9.0", "1.1.0", "1.2.0"], failed: ["1.3.0"]), installed: ["0.9.0", "1.1.0", "1.3.0", "1.4.0"],
             builtIn: "1.0.0", operations: [.rollback],
             expected: .state(s("1.1.0", history: ["1.1.0"], failed: ["1.3.0", "1.4.0"]))),
        Case(label: "rollback returns to the built-in when nothing else served",
             start: s("1.1.0", trial: true, history: ["1.0.0"]), installed: ["1.1.0"], builtIn: "1.0.0", operations: [.rollback],
             expected: .state(s("1.0.0", history: ["1.0.0"], failed: ["1.1.0"]))),
        Case(label: "the built-in is the floor: rolling back from it is refused",
             start: .builtIn(v("1.0.0")), builtIn: "1.0.0", operations: [.rollback], expected: .refused(.noFallback)),

        // Launching.
        Case(label: "a launch counts a trial",
             start: s("1.1.0", trial: true, launches: 1, history: ["1.0.0"]), installed: ["1.0.0", "1.1.0"], operations: [.launch(max: 3)],
             expected: .launched(.counted(2), s("1.1.0", trial: true, launches: 2, history: ["1.0.0"]))),
        Case(label: "a trial past its launches is marked failed and falls back",
             start: s("1.1.0", trial: true, launches: 3, history: ["1.0.0"]), installed: ["1.0.0", "1.1.0"], operations: [.launch(max: 3)],
             expected: .launched(.rolledBack(from: v("1.1.0"), to: v("1.0.0")), s("1.0.0", history: ["1.0.0"], failed: ["1.1.0"]))),
        Case(label: "two unconfirmed installs, the second crashing: back to the first, not stranded",
             start: .firstInstall(v("1.0.0")), installed: ["1.0.0", "1.1.0"],
             operations: [.install("1.1.0"), .launch(max: 1), .launch(max: 1)],
             expected: .launched(.rolledBack(from: v("1.1.0"), to: v("1.0.0")), s("1.0.0", trial: true, failed: ["1.1.0"]))),
        Case(label: "a trial that runs out with nowhere to go is marked failed and still served",
             start: s("1.0.0", trial: true, launches: 1), installed: ["1.0.0"], operations: [.launch(max: 1)],
             expected: .launched(.exhaustedWithoutFallback(v("1.0.0")), s("1.0.0", trial: true, launches: 2, failed: ["1.0.0"]))),
        Case(label: "everything newer failed: the built-in serves",
             start: s("1.2.0", trial: true, launches: 3, history: ["1.0.0"], failed: ["1.1.0"]), installed: ["1.1.0", "1.2.0"], builtIn: "1.0.0",
             operations: [.launch(max: 3)],
             expected: .launched(.rolledBack(from: v("1.2.0"), to: v("1.0.0")), s("1.0.0", history: ["1.0.0"], failed: ["1.1.0", "1.2.0"]))),
        Case(label: "a launch leaves a confirmed version alone",
             start: s("1.0.0", history: ["1.0.0"]), installed: ["1.0.0"], operations: [.launch(max: 3)],
             expected: .launched(.notOnTrial, s("1.0.0", history: ["1.0.0"]))),

        // Activating.
        Case(label: "activating a confirmed older version: active as confirmed; the trial it replaces stays a fallback",
             start: s("1.1.0", trial: true, history: ["1.0.0"]), installed: ["1.0.0", "1.1.0"], operations: [.activate("1.0.0")],
             expected: .state(s("1.0.0", history: ["1.0.0", "1.1.0"], unconfirmed: ["1.1.0"]))),
        Case(label: "activating a failed version is allowed (an explicit choice) and starts a trial",
             start: s("1.0.0", history: ["1.0.0"], failed: ["1.1.0"]), installed: ["1.0.0", "1.1.0"], operations: [.activate("1.1.0")],
             expected: .state(s("1.1.0", trial: true, history: ["1.0.0"]))),
        Case(label: "activating the built-in",
             start: s("1.1.0", history: ["1.0.0", "1.1.0"]), installed: ["1.1.0"], builtIn: "1.0.0", operations: [.activate("1.0.0")],
             expected: .state(s("1.0.0", history: ["1.0.0", "1.1.0"]))),
        Case(label: "activating a version below the built-in is refused",
             start: .builtIn(v("1.0.0")), installed: ["0.9.0"], builtIn: "1.0.0", operations: [.activate("0.9.0")],
             expected: .refused(.belowBuiltIn(v("0.9.0"), builtIn: v("1.0.0")))),
        Case(label: "activating a version that is not there is refused",
             start: s("1.0.0", history: ["1.0.0"]), installed: ["1.0.0"], operations: [.activate("2.0.0")], expected: .refused(.unavailable(v("2.0.0")))),

        // Removing.
        Case(label: "remove refuses the active version",
             start: s("1.1.0", trial: true, history: ["1.0.0"]), installed: ["1.0.0", "1.1.0"], operations: [.remove("1.1.0")],
             expected: .refused(.active(v("1.1.0")))),
        Case(label: "remove refuses the fallback",
             start: s("1.2.0", trial: true, history: ["1.0.0", "1.1.0"], unconfirmed: ["1.1.0"]), installed: ["1.0.0", "1.1.0", "1.2.0"],
             operations: [.remove("1.1.0")], expected: .refused(.kept(v("1.1.0"), because: .fallback))),
        Case(label: "remove refuses the newest confirmed version",
             start: s("1.2.0", trial: true, history: ["1.0.0", "1.1.0"], unconfirmed: ["1.1.0"]), installed: ["1.0.0", "1.1.0", "1.2.0"],
             operations: [.remove("1.0.0")], expected: .refused(.kept(v("1.0.0"), because: .lastConfirmed))),
        Case(label: "remove refuses the built-in",
             start: s("1.1.0", history: ["1.0.0", "1.1.0"]), installed: ["1.1.0"], builtIn: "1.0.0", operations: [.remove("1.0.0")],
             expected: .refused(.builtIn(v("1.0.0")))),
        Case(label: "remove forgets a version nothing keeps",
             start: s("1.2.0", history: ["1.0.0", "1.1.0", "1.2.0"], failed: ["0.9.0"]), installed: ["0.9.0", "1.0.0", "1.1.0", "1.2.0"],
             operations: [.remove("1.0.0"), .remove("0.9.0")], expected: .state(s("1.2.0", history: ["1.1.0", "1.2.0"]))),

        // Garbage collection.
        Case(label: "gc keeps the active version, its fallback and the newest confirmed one; failed ones go",
             start: s("2.0.0", trial: true, history: ["1.0.0", "1.1.0", "1.2.0", "1.3.0"], unconfirmed: ["1.3.0"], failed: ["1.4.0"]),
             installed: ["1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "2.0.0"], operations: [.gc(keep: 0)],
             expected: .state(s("2.0.0", trial: true, history: ["1.2.0", "1.3.0"], unconfirmed: ["1.3.0"]))),
        Case(label: "gc --keep 1 keeps one more of what served",
             start: s("2.0.0", trial: true, history: ["1.0.0", "1.1.0", "1.2.0", "1.3.0"], failed: ["1.4.0"]),
             installed: ["1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "2.0.0"], operations: [.gc(keep: 1)],
             expected: .state(s("2.0.0", trial: true, history: ["1.2.0", "1.3.0"]))),
        Case(label: "gc forgets versions that vanished or are below the built-in",
             start: s("1.3.0", history: ["0.5.0", "1.1.0", "1.2.0", "1.3.0"]), installed: ["0.5.0", "1.2.0", "1.3.0"], builtIn: "1.0.0",
             operations: [.gc(keep: 5)], expected: .state(s("1.3.0", history: ["1.2.0", "1.3.0"]))),
    ]

    @Test("state transitions", arguments: cases)
    func transition(_ row: Case) {
        var state = row.start.raised(toFloor: row.builtIn.map(v))
        let available = AvailableVersions(installed: Set(row.installed.map(v)), builtIn: row.builtIn.map(v))
        var lastLaunch: LaunchOutcome?
        do throws(StateRefusal) {
            for operation in row.operations {
                switch operation {
                case .install(let version): try state.install(v(version), in: available)
                case .activate(let version): try state.activate(v(version), in: available)
                case .confirm: try state.confirm()
                case .rollback: try state.rollBack(in: available)
                case .launch(let max): lastLaunch = state.beginLaunch(maxTrialLaunches: max, in: available)
                case .remove(let version): try state.remove(v(version), in: available)
                case .gc(let keep): state.collectGarbage(keep: keep, in: available)
                }
            }
        } catch {
            #expect(row.expected == .refused(error))
            return
        }
        switch row.expected {
        case .state(let expected): #expect(state == expected)
        case .launched(let outcome, let expected):
            #expect(lastLaunch == outcome)
            #expect(state == expected)
        case .refused(let refusal): Issue.record("expected a refusal \(refusal), got \(state)")
        }
    }

    @Test("an app update that ships a newer built-in: it serves, confirmed, and older versions leave the state", arguments: [
        (s("1.5.0", trial: true, launches: 2, history: ["1.0.0", "1.2.0"], unconfirmed: ["1.2.0"], failed: ["1.3.0"]), s("2.0.0", history: ["2.0.0"])),
        (s("2.1.0", trial: true, history: ["1.0.0", "2.0.0"]), s("2.1.0", trial: true, history: ["2.0.0"])),
        (s("2.0.0", trial: true, history: ["1.0.0"]), s("2.0.0", history: ["2.0.0"])),
    ])
    func raisedToFloor(_ stored: PackageState, _ expected: PackageState) {
        #expect(stored.raised(toFloor: v("2.0.0")) == expected)
        #expect(PackageState.effective(stored: stored, builtIn: v("2.0.0")) == expected)
        #expect(PackageState.effective(stored: nil, builtIn: v("2.0.0")) == .builtIn(v("2.0.0")))
        #expect(PackageState.effective(stored: nil, builtIn: nil) == nil)
    }

    @Test("the keep set: what the state refers to, and what engines pin")
    func keepSet() {
        let state = Self.s("1.2.0", trial: true, history: ["1.0.0", "1.1.0"], unconfirmed: ["1.1.0"], failed: ["0.9.0"])
        #expect(PackageState.retained(by: state, pinned: [v("0.5.0")]) == Set(["0.5.0", "0.9.0", "1.0.0", "1.1.0", "1.2.0"].map(v)))
        #expect(PackageState.retained(by: nil, pinned: [v("0.5.0")]) == [v("0.5.0")])
        #expect(state.protectedVersions(in: AvailableVersions(installed: Set(["0.9.0", "1.0.0", "1.1.0", "1.2.0"].map(v)))) == Set(["1.0.0", "1.1.0", "1.2.0"].map(v)))
    }

    @Test("state.json: a file written before failed and unconfirmed existed reads and behaves as before")
    func formatCompatibility() throws {
        // As the previous code wrote it after installing 1.0.0, confirming it, and installing 1.1.0.
        let old = Array(#"{"active":"1.1.0","confirmed":"1.0.0","history":["1.0.0"],"launches":2,"trial":"1.1.0"}"#.utf8)
        var state = try PackageState.decode(old, path: "state.json")
        #expect(state == Self.s("1.1.0", trial: true, launches: 2, history: ["1.0.0"]))
        #expect(state.confirmed == v("1.0.0"))
        // Written back unchanged, byte for byte: the new fields are omitted when empty.
        #expect(state.canonicalBytes == old)
        try state.rollBack(in: AvailableVersions(installed: [v("1.0.0"), v("1.1.0")]))
        #expect(String(decoding: state.canonicalBytes, as: UTF8.self) == #"{"active":"1.0.0","confirmed":"1.0.0","failed":["1.1.0"],"history":["1.0.0"],"launches":0}"#)
        #expect(try PackageState.decode(state.canonicalBytes, path: "state.json") == state)
        let superseded = Self.s("1.1.0", trial: true, history: ["1.0.0"], unconfirmed: ["1.0.0"])
        #expect(String(decoding: superseded.canonicalBytes, as: UTF8.self) == #"{"active":"1.1.0","history":["1.0.0"],"launches":0,"trial":"1.1.0","unconfirmed":["1.0.0"]}"#)
    }

    @Test("state.json that contradicts itself is refused, naming the problem", arguments: [
        (#"{"active":"1.0.0","history":[],"launches":-1}"#, "negative launch count"),
        (#"{"active":"1.0.0","history":[],"launches":0,"trial":"1.1.0"}"#, "trial 1.1.0 is not the active version 1.0.0"),
        (#"{"active":"1.1.0","history":["1.0.0","1.0.0"],"launches":0}"#, "history lists a version twice"),
        (#"{"active":"1.1.0","failed":["1.0.0"],"history":["1.0.0"],"launches":0}"#, "1.0.0 is both in history and failed"),
        (#"{"active":"1.1.0","history":[],"launches":0,"unconfirmed":["1.0.0"]}"#, "unconfirmed 1.0.0 is not in history"),
    ])
    func corrupt(_ text: String, _ reason: String) {
        #expect(throws: StoreError.corruptState(path: "state.json", reason: reason)) { try PackageState.decode(Array(text.utf8), path: "state.json") }
    }
}
