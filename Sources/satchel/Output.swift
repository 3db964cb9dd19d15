import ArgumentParser
import Foundation
import SatchelCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Terminal output shared by the commands: JSON on stdout, messages and progress on stderr.
enum Output {
    static func json<T: Encodable>(_ value: T) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }

    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data(("error: " + text + "\n").utf8))
    }

    static func warning(_ text: String) {
        FileHandle.standardError.write(Data(("warning: " + text + "\n").utf8))
    }

    static func note(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// The one way a command fails on a refused input or a failed operation: `error: <text>` on stderr, exit 1
    /// (usage errors go through argument-parser's `ValidationError` instead, exit 64).
    static func failure(_ text: String) -> ExitCode {
        error(text)
        return .failure
    }

    /// Runs `body`; whatever it throws is printed as `error: [context: ]<the error's one-line description>` and the
    /// command exits 1.
    static func failing<T, Failure: Error>(_ context: String? = nil, _ body: () throws(Failure) -> T) throws -> T {
        do { return try body() } catch { throw failure(context.map { "\($0): \(error)" } ?? "\(error)") }
    }

    static func failing<T, Failure: Error>(_ context: String? = nil, _ body: () async throws(Failure) -> T) async throws -> T {
        do { return try await body() } catch { throw failure(context.map { "\($0): \(error)" } ?? "\(error)") }
    }

    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    static func bytes(_ count: Int64) -> String {
        let units = ["B", "KB", "MB", "GB", "TB"]
        var value = Double(count)
        var unit = 0
        while value >= 1000, unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
    }
}

/// A one-line progress bar on stderr, redrawn at most ten times a second; nothing when stderr is not a terminal.
final class ProgressBar {
    private var lastDraw = Date.distantPast
    private var visible = false
    let enabled: Bool

    init(enabled: Bool) { self.enabled = enabled && Output.stderrIsTerminal }

    func update(label: String, done: Int64, total: Int64) {
        guard enabled, Date().timeIntervalSince(lastDraw) > 0.1 || done == total else { return }
        lastDraw = Date()
        let width = 30
        let fraction = total > 0 ? min(1, Double(done) / Double(total)) : 1
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let text = "\r\(label) [\(bar)] \(Int(fraction * 100))% \(Output.bytes(done)) / \(Output.bytes(total))\u{1B}[K"
        FileHandle.standardError.write(Data(text.utf8))
        visible = true
    }

    func clear() {
        guard visible else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
        visible = false
    }
}
