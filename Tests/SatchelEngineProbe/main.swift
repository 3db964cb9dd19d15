// A child process for the engine's memory test: serves 1,000 random ranges of at most 1 MiB from a 1 GiB
// sparse file, draining every byte, and reports how much its peak resident memory grew. Run by
// SatchelEngineTests; prints one JSON object.
import Foundation
import SatchelCore
import SatchelEngine
import SatchelHTTP

struct OneFileSource: PackageSource {
    let package: ServedPackage
    func servedPackages() throws -> [ServedPackage] { [package] }
    func changeToken() -> [Int64] { [0] }
    func pin(_ packages: [ServedPackage]) throws -> any Sendable { 0 }
}

/// Peak resident set size so far (VmHWM), in bytes.
func peakRSS() -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
    return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
}

let folder = FileManager.default.temporaryDirectory.appendingPathComponent("satchel-probe-\(UUID().uuidString)").path
try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: folder) }
let size: Int64 = 1 << 30
let path = folder + "/movie.mp4"
_ = FileManager.default.createFile(atPath: path, contents: nil)
let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
try handle.truncate(atOffset: UInt64(size))  // sparse: no disk blocks
try handle.close()
_ = FileManager.default.createFile(atPath: folder + "/index.html", contents: Data("x".utf8))

let manifest = try Manifest(
    id: PackageID("probe"), version: SemanticVersion("1.0.0"), createdAt: Timestamp(secondsSinceEpoch: 0),
    scope: Scope(hosts: [HostPattern("probe.example")]),
    files: [
        FileRecord(path: SafePath(validating: "movie.mp4"), size: size, sha256: String(repeating: "0", count: 64), mime: "video/mp4"),
        FileRecord(path: SafePath(validating: "index.html"), size: 1, sha256: String(repeating: "1", count: 64), mime: "text/html"),
    ])
let engine = try ResourceEngine(source: OneFileSource(package: ServedPackage(manifest: manifest, folder: folder)))

func drain(_ result: EngineResult) async throws -> Int {
    guard case .response(let response) = result, response.status == 206, case .file(let region) = response.body else {
        throw CocoaError(.fileReadUnknown)
    }
    var total = 0
    for try await chunk in region.chunks() { total += chunk.count }
    return total
}

var generator = SystemRandomNumberGenerator()
// Warm up the allocator and the engine, then take the baseline.
_ = try await drain(engine.handle(ResourceRequest(url: "satchel://probe.example/movie.mp4", headers: ["Range": "bytes=0-1048575"])))
let baseline = peakRSS()
var served = 0
for _ in 0..<1000 {
    let length = Int64.random(in: 1...(1 << 20), using: &generator)
    let start = Int64.random(in: 0...(size - length), using: &generator)
    let request = ResourceRequest(url: "satchel://probe.example/movie.mp4", headers: ["Range": "bytes=\(start)-\(start + length - 1)"])
    served += try await drain(engine.handle(request))
}
let report: [String: Int] = ["ranges": 1000, "bytesServed": served, "baselinePeakBytes": baseline, "peakBytes": peakRSS(), "peakGrowthBytes": peakRSS() - baseline]
print(String(decoding: try JSONSerialization.data(withJSONObject: report, options: [.sortedKeys]), as: UTF8.self))
