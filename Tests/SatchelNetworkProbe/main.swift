// A child process for the network fallback's memory test: fetches a body of the given size from an origin
// through ResourceLoader and NIOFetcher, reading every byte (with a pause of two seconds after the
// first megabyte, the way a slow client reads), and reports how much its peak resident memory grew. Run by
// SatchelNetworkTests; prints one JSON object.
//   SatchelNetworkProbe <url> <bytes>
import Foundation
import SatchelCore
import SatchelEngine
import SatchelHTTP
import SatchelNetwork

struct NoPackages: PackageSource {
    func servedPackages() throws -> [ServedPackage] { [] }
    func changeToken() -> [Int64] { [0] }
    func pin(_ packages: [ServedPackage]) throws -> any Sendable { 0 }
}

/// Peak resident set size so far (VmHWM), in bytes.
func peakRSS() -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
    return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
}

let url = CommandLine.arguments[1]
let expected = Int(CommandLine.arguments[2])!
let host = RequestURL(url)!.host
let fetcher = NIOFetcher()
let loader = ResourceLoader(
    engine: try ResourceEngine(source: NoPackages()), fetcher: fetcher,
    policy: NetworkPolicy(allowedHosts: [try HostPattern(host)], timeouts: FetchTimeouts(idle: .seconds(30))))

func fetch(_ bytes: Int, pause: Bool) async throws -> Int {
    let response = await loader.respond(to: ResourceRequest(url: url.replacingOccurrences(of: "n=\(expected)", with: "n=\(bytes)"))).response
    var total = 0
    var paused = !pause
    for try await chunk in response.body.chunks() {
        total += chunk.count
        if !paused, total >= 1 << 20 {
            paused = true
            try await Task.sleep(for: .seconds(2))
        }
    }
    return total
}

// Warm up the client, its connection and the allocator, then take the baseline.
_ = try await fetch(8 << 20, pause: false)
let baseline = peakRSS()
let received = try await fetch(expected, pause: true)
let report: [String: Int] = ["bytesReceived": received, "baselinePeakBytes": baseline, "peakBytes": peakRSS(), "peakGrowthBytes": peakRSS() - baseline]
try await fetcher.shutdown()
print(String(decoding: try JSONSerialization.data(withJSONObject: report, options: [.sortedKeys]), as: UTF8.self))
