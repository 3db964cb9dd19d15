import Foundation
import SatchelCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Appends device reports to a JSON-lines file (docs/formats.md, "Device reports"): one `write` of a whole line to a
/// file opened with `O_APPEND`, so concurrent requests never interleave inside a line.
public final class ReportLog: Sendable {
    public let path: String
    private let descriptor: Int32

    /// Opens (creating) the file for appending; a file that cannot be opened is an error naming it.
    public init(path: String) throws {
        descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw ReportLogError.cannotOpen(path, String(cString: strerror(errno))) }
        self.path = path
    }

    deinit { close(descriptor) }

    func append(_ report: DeviceReport, via: String) {
        let line = ReportRecord(at: Timestamp(secondsSinceEpoch: Int64(Date().timeIntervalSince1970)), via: via, report: report).jsonLine
        _ = line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    }

    /// A catalog request's report headers, when it has them; a request whose headers do not parse is still answered.
    func appendHeaders(channel: String?, report: String?) {
        guard let report, let parsed = try? DeviceReport.parse(channel: channel, report: report) else { return }
        append(parsed, via: "header")
    }
}

public enum ReportLogError: Error, CustomStringConvertible {
    case cannotOpen(String, String)

    public var description: String {
        switch self {
        case .cannotOpen(let path, let why): "cannot open the reports file \(path): \(why)"
        }
    }
}
