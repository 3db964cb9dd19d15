import Foundation
import SatchelTestSupport

/// Runs the `satchel` binary that `swift build` put beside this test bundle.
struct CLI {
    static let binary: String = {
        if let path = ProcessInfo.processInfo.environment["SATCHEL_BIN"] { return path }
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for folder in [here, here.deletingLastPathComponent()] {
            let candidate = folder.appendingPathComponent("satchel").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        fatalError("satchel binary not found next to \(here.path); run swift build first or set SATCHEL_BIN")
    }()

    static func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> ProcessOutcome {
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "SOURCE_DATE_EPOCH")
        env.merge(environment) { _, new in new }
        return try await runProcess(binary, arguments, environment: env)
    }
}

let app = ["index.html": "<h1>hi</h1>", "app.js": "console.log(1)", "offline.html": "<h1>offline</h1>", "img/a.png": "png"]
