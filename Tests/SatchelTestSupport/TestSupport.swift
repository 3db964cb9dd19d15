import Foundation

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

/// Runs `executable` with `arguments`, no standard input, and collects both output streams.
public func runProcess(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> ProcessOutcome {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    try process.run()
    // Read both pipes before waiting, so a chatty child cannot block on a full pipe.
    let group = DispatchGroup()
    nonisolated(unsafe) var errData = Data()
    DispatchQueue.global().async(group: group) { errData = err.fileHandleForReading.readDataToEndOfFile() }
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    group.wait()
    process.waitUntilExit()
    return ProcessOutcome(
        status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
        stderr: String(decoding: errData, as: UTF8.self))
}

/// A tool that exited non-zero.
public struct ToolFailed: Error, CustomStringConvertible {
    public let tool: String
    public let outcome: ProcessOutcome
    public var description: String { "\(tool) exited \(outcome.status): \(outcome.stderr)" }
}

/// Runs a tool and returns its standard output; throws when it exits non-zero.
public func run(_ tool: String, _ arguments: [String]) throws -> String {
    let outcome = try runProcess(tool, arguments)
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
    let mount = try runProcess("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", path])
    guard mount.status == 0 else { throw ToolFailed(tool: "mount -t tmpfs \(path)", outcome: mount) }
    defer { _ = try? runProcess("/bin/umount", [path]) }
    return try await body()
}

/// A self-signed certificate for `localhost` (its own CA) and its key, as PEM files in `folder`: for a
/// ``TestOrigin`` over https, trusted only where the test says so.
public func makeLocalhostCertificate(in folder: String) throws -> (certificate: String, key: String) {
    let certificate = folder + "/cert.pem", key = folder + "/key.pem"
    _ = try run("/usr/bin/openssl", [
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate, "-days", "2",
        "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
    ])
    return (certificate, key)
}

/// The local origin (`origin.py` beside this file) for tests of the network fallback: echo, redirects, resets,
/// garbage, stalls, drips, big and endless bodies, repeated header fields. Started by the test that needs it
/// and stopped by it; it also stops when its standard input closes, so a test that dies leaves nothing running.
public final class TestOrigin: @unchecked Sendable {
    let process = Process()
    let stdin = Pipe()
    public let port: Int

    /// https when `tls` (a certificate and its key, PEM) is given; `base` then names the origin `localhost`.
    public let tls: Bool

    public init(tls: (certificate: String, key: String)? = nil) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("origin.py").path
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script] + (tls.map { ["--tls", $0.certificate, $0.key] } ?? [])
        self.tls = tls != nil
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardInput = stdin
        try process.run()
        var line = Data()
        while !line.contains(0x0A) {
            let chunk = stdout.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSFilePathErrorKey: script])
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
    public func events() throws -> [String] {
        let output = try run("/usr/bin/curl", [tls ? "-sfk" : "-sf", base + "/events"])
        return (try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String]) ?? []
    }

    /// Whether `event` shows up in ``events()`` within `seconds` (asked every 100 ms): what the origin saw happen
    /// after the request, such as the client going away.
    public func sawEvent(_ event: String, within seconds: Double = 3) async throws -> Bool {
        for _ in 0..<max(1, Int(seconds * 10)) {
            try await Task.sleep(for: .milliseconds(100))
            if try events().contains(event) { return true }
        }
        return false
    }

    /// How `/cached/...` behaves from now on: "503" answers 503, "reset" closes each connection, "" works again.
    public func failCached(_ mode: String) throws {
        _ = try run("/usr/bin/curl", [tls ? "-sfk" : "-sf", base + "/origin-mode?fail=" + mode])
    }

    public func stop() {
        try? stdin.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}
