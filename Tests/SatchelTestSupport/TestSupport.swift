import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Helpers shared by every test target: scratch folders and running real tools.

/// A scratch folder that exists for one test and is removed afterwards, whatever happened.
public func withTemporaryFolder<T>(_ body: (String) throws -> T) throws -> T {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("satchel-test-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try body(path)
}

public func readBytes(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }

/// Names in `folder`, hidden ones included (empty when the folder does not exist).
public func listing(_ folder: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
}

/// Writes `files` (relative path -> contents) under `root`, creating folders, with a fixed mtime so that
/// tests do not depend on the clock.
public func makeTree(_ root: String, _ files: [String: String], mtime: Int = 1_700_000_000) throws {
    for (path, contents) in files {
        let url = URL(fileURLWithPath: root + "/" + path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(contents.utf8).write(to: url)
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: TimeInterval(mtime))], ofItemAtPath: url.path)
    }
}

/// What a finished process said.
public struct ProcessOutcome: Sendable {
    public let status: Int32
    public let stdout: String
    public let stderr: String
}

/// A child process a test starts, reads and waits for.
///
/// Nothing here blocks a thread of Swift's cooperative pool, which has one thread per core (two on CI's machine): its
/// pipes are read on threads of their own, its exit arrives through the termination handler, and every wait is an
/// `await`. A test that waited for a child synchronously held one of those threads for the child's whole life, and two
/// such tests at once stopped every other test's timers (issue 57: a 1-second timeout that fired after 60 s).
public final class ChildProcess: @unchecked Sendable {
    public enum Stream: Sendable { case stdout, stderr }

    private let process = Process()
    private let input: Pipe?
    private let lock = NSLock()
    private var output = Data()
    private var errors = Data()
    private var outputEnded = false
    private var errorsEnded = false
    private var status: Int32?
    /// Bumped on every change; a waiter sleeps only while it still has the value it last looked at.
    private var version = 0
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// Starts `executable` with both output streams captured; standard input is a pipe the test closes
    /// (``closeInput()``) when `input` is set, else nothing.
    public init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil, input: Bool = false) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        self.input = input ? Pipe() : nil
        process.standardInput = self.input ?? FileHandle.nullDevice
        process.terminationHandler = { [weak self] process in
            self?.change { $0.status = process.terminationStatus }
        }
        try process.run()
        read(out.fileHandleForReading, .stdout)
        read(err.fileHandleForReading, .stderr)
    }

    public var processIdentifier: Int32 { process.processIdentifier }
    public var isRunning: Bool { lock.withLock { status == nil } }
    /// What the stream has said so far.
    public func text(_ stream: Stream) -> String {
        lock.withLock { String(decoding: stream == .stdout ? output : errors, as: UTF8.self) }
    }

    /// Sends `signal` (SIGKILL, SIGTERM...) to the child.
    public func send(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// Closes the child's standard input: a child that reads it sees its end.
    public func closeInput() { try? input?.fileHandleForWriting.close() }

    /// The child's exit status, once it has exited.
    public func exitStatus() async -> Int32 { await until { $0.status } }

    /// Its exit status and everything it wrote, once it has exited and closed both streams.
    public func finished() async -> ProcessOutcome {
        await until { child in
            guard let status = child.status, child.outputEnded, child.errorsEnded else { return nil }
            return ProcessOutcome(
                status: status, stdout: String(decoding: child.output, as: UTF8.self), stderr: String(decoding: child.errors, as: UTF8.self))
        }
    }

    /// Everything `stream` has said once it contains `marker`; nil when the stream ended without it, or `timeout`
    /// passed first (a bound on a test that would otherwise hang, not a measure of speed).
    public func output(containing marker: String, on stream: Stream, timeout: Duration = .seconds(120)) async -> String? {
        let deadline = ContinuousClock.now + timeout
        let timer = Task { [weak self] in
            try? await Task.sleep(until: deadline)
            self?.change { _ in }
        }
        defer { timer.cancel() }
        return await until { child -> String?? in
            let text = String(decoding: stream == .stdout ? child.output : child.errors, as: UTF8.self)
            if text.contains(marker) { return .some(text) }
            let ended = stream == .stdout ? child.outputEnded : child.errorsEnded
            return ended || ContinuousClock.now >= deadline ? .some(nil) : nil
        } ?? nil
    }

    // MARK: state

    private func change(_ update: (ChildProcess) -> Void) {
        let resumed: [CheckedContinuation<Void, Never>] = lock.withLock {
            update(self)
            version += 1
            defer { waiters = [] }
            return waiters
        }
        for waiter in resumed { waiter.resume() }
    }

    /// Waits, without holding a thread, until `ready` gives a value (evaluated under the lock at each change).
    private func until<T>(_ ready: (ChildProcess) -> T?) async -> T {
        while true {
            let (value, seen): (T?, Int) = lock.withLock { (ready(self), version) }
            if let value { return value }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let stale = lock.withLock {
                    if version != seen { return true }
                    waiters.append(continuation)
                    return false
                }
                if stale { continuation.resume() }
            }
        }
    }

    /// Reads `handle` to its end on a thread of its own (a blocking read, kept off the cooperative pool).
    private func read(_ handle: FileHandle, _ stream: Stream) {
        let thread = Thread { [self] in
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                change { child in
                    if stream == .stdout { child.output.append(chunk) } else { child.errors.append(chunk) }
                }
            }
            change { child in
                if stream == .stdout { child.outputEnded = true } else { child.errorsEnded = true }
            }
        }
        thread.start()
    }
}

/// Whether `condition` holds within `limit`, asked every 20 ms without holding a thread. For what another thread or
/// process does in its own time; the limit is a bound on a test that would otherwise hang, never a speed goal.
public func eventually(within limit: Duration, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + limit
    while !condition() {
        guard ContinuousClock.now < deadline else { return false }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return true
}

/// Runs `executable` with `arguments`, no standard input, and collects both output streams once it has exited.
public func runProcess(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) async throws -> ProcessOutcome {
    try await ChildProcess(executable, arguments, environment: environment).finished()
}

/// A tool that exited non-zero.
public struct ToolFailed: Error, CustomStringConvertible {
    public let tool: String
    public let outcome: ProcessOutcome
    public var description: String { "\(tool) exited \(outcome.status): \(outcome.stderr)" }
}

/// Runs a tool and returns its standard output; throws when it exits non-zero.
public func run(_ tool: String, _ arguments: [String]) async throws -> String {
    let outcome = try await runProcess(tool, arguments)
    guard outcome.status == 0 else { throw ToolFailed(tool: tool, outcome: outcome) }
    return outcome.stdout
}

/// The async form of ``withTemporaryFolder(_:)``.
public func withTemporaryFolder<T>(_ body: (String) async throws -> T) async throws -> T {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("satchel-test-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try await body(path)
}

/// Every entry under `root` with its bytes (folders map to no bytes), except paths `skip` names: a refused
/// operation must leave this exactly as it was.
public func treeSnapshot(_ root: String, skip: (String) -> Bool = { _ in false }) throws -> [String: [UInt8]] {
    var result: [String: [UInt8]] = [:]
    let enumerator = FileManager.default.enumerator(atPath: root)
    while let path = enumerator?.nextObject() as? String {
        if skip(path) { continue }
        var isFolder: ObjCBool = false
        _ = FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &isFolder)
        result[path] = isFolder.boolValue ? [] : try readBytes(root + "/" + path)
    }
    return result
}

/// Mounts a tmpfs of `size` (such as "1m") at `path`, creating the folder, and unmounts it after `body`.
/// Throws when the mount is refused: a disk-full path that is never exercised is not tested (root is
/// available on the test machines).
public func withSmallFileSystem<T>(at path: String, size: String, _ body: () async throws -> T) async throws -> T {
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    let mount = try await runProcess("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", path])
    guard mount.status == 0 else { throw ToolFailed(tool: "mount -t tmpfs \(path)", outcome: mount) }
    do {
        let result = try await body()
        _ = try? await runProcess("/bin/umount", [path])
        return result
    } catch {
        _ = try? await runProcess("/bin/umount", [path])
        throw error
    }
}

/// A self-signed certificate for `localhost` (its own CA) and its key, as PEM files in `folder`: for a
/// ``TestOrigin`` over https, trusted only where the test says so.
public func makeLocalhostCertificate(in folder: String) async throws -> (certificate: String, key: String) {
    let certificate = folder + "/cert.pem", key = folder + "/key.pem"
    _ = try await run("/usr/bin/openssl", [
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate, "-days", "2",
        "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
    ])
    return (certificate, key)
}

/// The local origin (`origin.py` beside this file) for tests of the network fallback: echo, redirects, resets,
/// garbage, stalls, drips, big and endless bodies, repeated header fields. Started by the test that needs it
/// and stopped by it; it also stops when its standard input closes, so a test that dies leaves nothing running.
public final class TestOrigin: @unchecked Sendable {
    let child: ChildProcess
    public let port: Int

    /// https when `tls` (a certificate and its key, PEM) is given; `base` then names the origin `localhost`.
    public let tls: Bool

    public init(tls: (certificate: String, key: String)? = nil) async throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("origin.py").path
        child = try ChildProcess("/usr/bin/env", ["python3", script] + (tls.map { ["--tls", $0.certificate, $0.key] } ?? []), input: true)
        self.tls = tls != nil
        // Its first line is the port it listens on.
        let said = await child.output(containing: "\n", on: .stdout) ?? ""
        guard let port = Int(said.split(separator: "\n").first.map(String.init)?.trimmingCharacters(in: .whitespaces) ?? "") else {
            child.closeInput()
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSFilePathErrorKey: script, NSLocalizedDescriptionKey: "origin.py said \(said) \(child.text(.stderr))"])
        }
        self.port = port
    }

    public var base: String { tls ? "https://localhost:\(port)" : "http://127.0.0.1:\(port)" }

    /// What the origin's echo answers (any path it has no other use for): the request as it arrived.
    public struct Echo: Decodable, Sendable {
        public let method: String
        public let path: String
        /// Header fields in arrival order, each `[name, value]`.
        public let headers: [[String]]
        public let body: String
    }

    /// What `/events` reports (what happened on `/hang`, `/big` and `/drip`), fetched without Satchel.
    public func events() async throws -> [String] {
        let output = try await run("/usr/bin/curl", [tls ? "-sfk" : "-sf", base + "/events"])
        return (try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String]) ?? []
    }

    /// Whether `event` shows up in ``events()`` within `seconds` (asked every 100 ms): what the origin saw happen
    /// after the request, such as the client going away.
    public func sawEvent(_ event: String, within seconds: Double = 3) async throws -> Bool {
        for _ in 0..<max(1, Int(seconds * 10)) {
            try await Task.sleep(for: .milliseconds(100))
            if try await events().contains(event) { return true }
        }
        return false
    }

    /// How `/cached/...` behaves from now on: "503" answers 503, "reset" closes each connection, "" works again.
    public func failCached(_ mode: String) async throws {
        _ = try await run("/usr/bin/curl", [tls ? "-sfk" : "-sf", base + "/origin-mode?fail=" + mode])
    }

    /// Closes its standard input, which ends it (without waiting: its port is its own, and nothing reuses it).
    /// The time every `Date` field says from now on (seconds since 1970), or the real time again (nil): a test that
    /// moves a cache's clock moves the origin's with it, so that ages agree.
    public func setClock(_ seconds: Double?) async throws {
        _ = try await run("/usr/bin/curl", [tls ? "-sfk" : "-sf", base + "/origin-mode?now=" + (seconds.map { String($0) } ?? "")])
    }

    public func stop() {
        child.closeInput()
    }
}
