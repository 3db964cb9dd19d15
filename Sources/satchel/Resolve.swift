import ArgumentParser
import Foundation
import SatchelCore
import SatchelEngine
import SatchelHTTP
import SatchelOptions
import SatchelStore

extension Satchel {
    struct Resolve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show which package, version and file answer a URL, and the status and headers the engine would send.",
            discussion: "A debugging aid: nothing is fetched from the network; a miss says where the request would go.")

        @Argument(help: "An absolute URL: satchel://host/path, https://host/path or http://host/path.")
        var url: String
        @OptionGroup var storeOptions: StoreOptions
        @Option(name: .customLong("header"), help: "A request header 'Name: value' (repeatable), e.g. 'Range: bytes=0-99'.")
        var headers: [String] = []
        @Option(help: "The request method.")
        var method: String = "GET"
        @Flag(help: "Print one JSON object.")
        var json = false

        struct Report: Encodable {
            var url: String
            var outcome: String
            var status: Int?
            var headers: [[String]]?
            var package: String?
            var file: String?
            var miss: MissReport?
        }

        struct MissReport: Encodable {
            var reason: String
            var strategy: String
            var timeoutMs: Int?
            var upstreamURL: String
        }

        func run() async throws {
            var requestHeaders = HTTPHeaders()
            for header in headers {
                guard let colon = header.firstIndex(of: ":") else { throw ValidationError("--header must look like 'Name: value', not \(header)") }
                requestHeaders.add(String(header[..<colon]), String(header[header.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
            }
            let packageStore = try storeOptions.openForCommand()
            let engine: ResourceEngine
            do { engine = try ResourceEngine(source: packageStore, configuration: EngineConfiguration(diagnosticHeader: true)) } catch {
                throw Output.failure("\(error)")
            }
            let result = engine.handle(ResourceRequest(method: RequestMethod(method.uppercased()), url: url, headers: requestHeaders))
            var report = Report(url: url, outcome: "response")
            switch result {
            case .response(let response):
                report.status = response.status
                report.headers = response.headers.map { [$0.name, $0.value] }.filter { $0[0] != "X-Satchel-Source" }
                if let source = response.headers["X-Satchel-Source"], let space = source.firstIndex(of: " ") {
                    report.package = String(source[..<space])
                    report.file = String(source[source.index(after: space)...])
                }
            case .miss(let miss):
                report.outcome = "miss"
                report.package = miss.package
                report.miss = MissReport(reason: miss.reason.rawValue, strategy: miss.strategy.rawValue, timeoutMs: miss.timeoutMs, upstreamURL: miss.upstreamURL)
            }
            if json { return Output.json(report) }
            if let miss = report.miss {
                Output.line("miss (\(miss.reason)): strategy \(miss.strategy); the network would be asked for \(miss.upstreamURL)" + (report.package.map { "\n  package \($0) claims the URL" } ?? ""))
                return
            }
            var lines = [report.package.map { "\($0) \(report.file ?? "")" } ?? "no package file"]
            lines.append("\(report.status ?? 0)")
            lines += (report.headers ?? []).map { "\($0[0]): \($0[1])" }
            Output.line(lines.joined(separator: "\n"))
        }
    }
}
