import SourceChecks
import Testing

/// Scans one planted file and returns `line: call` for each finding.
private func found(_ source: String, allow: String = "") -> (findings: [String], unused: Int) {
    let (allowances, problems) = BlockingScan.allowances(from: allow, named: "allow.txt")
    #expect(problems.isEmpty, "\(problems)")
    let report = BlockingScan.scan([SourceFile(path: "t.swift", source: source)], allowances: allowances)
    return (report.findings.map { "\($0.line): \($0.call) in \($0.within)" }, report.unused.count)
}

@Suite("The blocking-call rule")
struct BlockingScanTests {
    @Test("each kind of blocking call is named with its line and the declaration it is in")
    func planted() {
        let source = """
            func waits() async {
                usleep(1000)
                sleep(1)
                Thread.sleep(forTimeInterval: 1)
                semaphore.wait()
                _ = group.wait(timeout: .now() + 1)
                condition.wait()
                process.waitUntilExit()
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                let chunk = handle.availableData
                try channel.connect(to: address).wait()
            }
            struct Helper {
                func sync() { usleep(10) }
                init() { process.waitUntilExit() }
                let body = { semaphore.wait() }
            }
            """
        #expect(found(source).findings == [
            "2: usleep in func waits", "3: sleep in func waits", "4: Thread.sleep in func waits", "5: wait in func waits",
            "6: wait in func waits", "7: wait in func waits", "8: waitUntilExit in func waits",
            "9: readDataToEndOfFile in func waits", "10: availableData in func waits", "11: wait in func waits",
            "14: usleep in func sync", "15: waitUntilExit in init", "16: wait in let body",
        ])
    }

    @Test("not blocking: an awaited wait, an enum case named wait, a Task.sleep, a local function that merely shares a name as a method")
    func notBlocking() {
        let source = """
            func fine() async throws {
                await shutdownSignal.wait()
                try await group.wait()
                return .wait("not staged")
                try await Task.sleep(for: .seconds(1))
                let step = RolloutStep.apply(.wait("x"), to: rollout)
                func waitUntilExit() {}
                waitUntilExit()
            }
            """
        #expect(found(source).findings == [])
    }

    @Test("on a thread of its own: inside Thread { }, Thread(block:), Thread.detachNewThread and onOwnThread")
    func ownThread() {
        let source = """
            func f() async throws {
                Thread { semaphore.wait() }.start()
                let thread = Thread(block: { usleep(5) })
                Thread.detachNewThread { process.waitUntilExit() }
                let value = try await onOwnThread { () throws in
                    let data = handle.availableData
                    return other.wait(timeout: .now() + 1)
                }
                DispatchQueue.global().async { semaphore.wait() }
            }
            """
        // A global dispatch queue is not a thread of its own: where Swift's pool is the global queue, it is that pool.
        #expect(found(source).findings == ["9: wait in func f"])
    }

    @Test("the allow-list covers a call by file, declaration and call; an entry that covers nothing is reported")
    func allowList() {
        let source = """
            final class Queue {
                func take() { condition.wait() }
                func put() { condition.wait() }
            }
            """
        let allow = """
            # why each is fine
            t.swift | func take | wait | the producer is a thread of its own that always makes progress
            t.swift | func gone | usleep | a call that was removed
            """
        let result = found(source, allow: allow)
        #expect(result.findings == ["3: wait in func put"])
        #expect(result.unused == 1)
    }

    @Test("an allow-list line without a reason is a problem, not an allowance")
    func allowListWithoutReason() {
        let (allowances, problems) = BlockingScan.allowances(from: "t.swift | func take | wait |\n", named: "allow.txt")
        #expect(allowances.isEmpty)
        #expect(problems == ["allow.txt:1: expected `path | within | call | reason`, each part given"])
    }
}
