import Foundation

/// Runs the `satchel` binary that `swift build` put beside this test bundle.
struct CLI {
    struct Outcome {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    static let binary: String = {
        if let path = ProcessInfo.processInfo.environment["SATCHEL_BIN"] { return path }
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for folder in [here, here.deletingLastPathComponent()] {
            let candidate = folder.appendingPathComponent("satchel").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        fatalError("satchel binary not found next to \(here.path); run swift build first or set SATCHEL_BIN")
    }()

    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "SOURCE_DATE_EPOCH")
        env.merge(environment) { _, new in new }
        process.environment = env
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
        return Outcome(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }
}

func withTemporaryFolder<T>(_ body: (String) throws -> T) throws -> T {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("satchel-cli-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try body(path)
}

func makeTree(_ root: String, _ files: [String: String]) throws {
    for (path, contents) in files {
        let url = URL(fileURLWithPath: root + "/" + path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(contents.utf8).write(to: url)
    }
}

let app = ["index.html": "<h1>hi</h1>", "app.js": "console.log(1)", "offline.html": "<h1>offline</h1>", "img/a.png": "png"]
