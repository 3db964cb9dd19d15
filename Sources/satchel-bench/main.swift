// Benchmarks that need a release build of the library itself (tools/bench-engine and tools/bench-diff run this).
//
//   satchel-bench engine [--files 2000] [--seconds 3]
//   satchel-bench file-diff encode|apply|encode-batch|apply-batch ...   (FileDiffBench.swift)
//
// Engine: hits per second on one core for 4 KB files spread over `--files` distinct files (URL parsing,
// routing, lookup, headers and file access included; every body byte is read), with the small-file cache
// on and off, and for 1 MiB ranges of a 64 MiB file.
import Foundation
import SatchelCore
import SatchelEngine
import SatchelHTTP

struct BenchSource: PackageSource {
    let package: ServedPackage
    func servedPackages() throws -> [ServedPackage] { [package] }
    func changeToken() -> [Int64] { [0] }
    func pin(_ packages: [ServedPackage]) throws -> any Sendable { 0 }
}

/// Reads every byte of a body, the way a server writing it out would touch it.
@inline(never)
func drain(_ body: ResponseBody, buffer: inout [UInt8]) -> Int {
    switch body {
    case .empty: return 0
    case .bytes(let bytes):
        return bytes.withUnsafeBytes { raw in
            var sum: UInt64 = 0
            let words = raw.bindMemory(to: UInt64.self)
            for word in words { sum &+= word }
            return raw.count + Int(sum & 1)
        }
    case .file(let region):
        var position: Int64 = 0
        while position < region.length {
            let count = Int(min(Int64(buffer.count), region.length - position))
            let got = buffer.withUnsafeMutableBytes { pread(region.descriptor, $0.baseAddress!, count, off_t(region.offset + position)) }
            guard got > 0 else { break }
            position += Int64(got)
        }
        return Int(position)
    case .stream: return 0
    }
}

var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "file-diff" { exit(fileDiffCommand(Array(arguments.dropFirst()))) }
guard arguments.first == "engine" else {
    FileHandle.standardError.write(Data("usage: satchel-bench engine [--files N] [--seconds S] | file-diff ...\n".utf8))
    exit(64)
}
var fileCount = 2000
var seconds = 3.0
while let flag = arguments.popLast() {
    if let value = Double(flag), let name = arguments.popLast() {
        if name == "--files" { fileCount = Int(value) } else if name == "--seconds" { seconds = value }
    }
}

let folder = FileManager.default.temporaryDirectory.appendingPathComponent("satchel-bench-\(UUID().uuidString)").path
defer { try? FileManager.default.removeItem(atPath: folder) }
var records: [FileRecord] = []
var generator = SystemRandomNumberGenerator()
for index in 0..<fileCount {
    let path = "assets/\(index % 20)/module-\(index).js"
    let bytes = (0..<4096).map { _ in UInt8.random(in: 32...126, using: &generator) }
    try FileManager.default.createDirectory(atPath: folder + "/assets/\(index % 20)", withIntermediateDirectories: true)
    _ = FileManager.default.createFile(atPath: folder + "/" + path, contents: Data(bytes))
    records.append(FileRecord(path: try SafePath(validating: path), size: 4096, sha256: Digests.sha256Hex(bytes), mime: "text/javascript"))
}
let bigSize: Int64 = 64 << 20
let big = Data((0..<Int(bigSize / 8)).flatMap { _ -> [UInt8] in withUnsafeBytes(of: UInt64.random(in: 0...UInt64.max, using: &generator)) { Array($0) } })
_ = FileManager.default.createFile(atPath: folder + "/media.mp4", contents: big)
records.append(FileRecord(path: try SafePath(validating: "media.mp4"), size: bigSize, sha256: Digests.sha256Hex(big), mime: "video/mp4"))
_ = FileManager.default.createFile(atPath: folder + "/index.html", contents: Data("x".utf8))
records.append(FileRecord(path: try SafePath(validating: "index.html"), size: 1, sha256: Digests.sha256Hex(Data("x".utf8)), mime: "text/html"))
let manifest = try Manifest(
    id: PackageID("bench"), version: SemanticVersion("1.0.0"), createdAt: Timestamp(secondsSinceEpoch: 0),
    scope: Scope(hosts: [HostPattern("bench.example")], pathPrefix: PathPrefix("/app/")), files: records)
let source = BenchSource(package: ServedPackage(manifest: manifest, folder: folder))
let urls = (0..<fileCount).map { "satchel://bench.example/app/assets/\($0 % 20)/module-\($0).js?v=1" }
/// One benchmark case, on local state only (globals in top-level code pay for exclusivity checks and
/// main-actor isolation, which would be measured instead of the engine).
nonisolated func fourKB(_ engine: ResourceEngine, urls: [String], seconds: Double, through loader: ResourceLoader? = nil) async -> (hits: Int, bytes: Int, elapsed: Double) {
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    // Warm-up: every file once (fills the cache when it is on).
    for url in urls { _ = drain(engine.handle(ResourceRequest(url: url)).response!.body, buffer: &buffer) }
    var hits = 0
    var bytes = 0
    var index = 0
    let start = DispatchTime.now().uptimeNanoseconds
    let deadline = start + UInt64(seconds * 1e9)
    var now = start
    while now < deadline {
        for _ in 0..<1000 {
            index = index &+ 7919
            let request = ResourceRequest(url: urls[index % urls.count])
            let response: ResourceResponse
            if let loader {
                response = await loader.respond(to: request).response
            } else {
                guard case .response(let answer) = engine.handle(request) else { fatalError("a miss for \(request.url)") }
                response = answer
            }
            guard response.status == 200 else { fatalError("unexpected \(response.status)") }
            bytes += drain(response.body, buffer: &buffer)
        }
        hits += 1000
        now = DispatchTime.now().uptimeNanoseconds
    }
    return (hits, bytes, Double(now - start) / 1e9)
}

nonisolated func ranges(_ engine: ResourceEngine, size: Int64, seconds: Double) -> (hits: Int, bytes: Int, elapsed: Double) {
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    var generator = SystemRandomNumberGenerator()
    var hits = 0
    var bytes = 0
    let start = DispatchTime.now().uptimeNanoseconds
    let deadline = start + UInt64(seconds * 1e9)
    var now = start
    while now < deadline {
        for _ in 0..<100 {
            let first = Int64.random(in: 0...(size - (1 << 20)), using: &generator)
            let request = ResourceRequest(url: "satchel://bench.example/app/media.mp4", headers: ["Range": "bytes=\(first)-\(first + (1 << 20) - 1)"])
            guard case .response(let response) = engine.handle(request), response.status == 206 else { fatalError("range failed") }
            bytes += drain(response.body, buffer: &buffer)
        }
        hits += 100
        now = DispatchTime.now().uptimeNanoseconds
    }
    return (hits, bytes, Double(now - start) / 1e9)
}

let cached = try ResourceEngine(source: source)
let uncached = try ResourceEngine(source: source, configuration: EngineConfiguration(smallFileCache: SmallFileCacheLimits(totalBytes: 0)))
/// Hits never reach it; the loader needs one.
struct NoNetwork: NetworkFetcher {
    func fetch(
        _ request: ResourceRequest, timeouts: FetchTimeouts, on executor: any AnswerExecutor,
        completion: @escaping @Sendable (Result<ResourceResponse, any Error>) -> Void
    ) -> (any FetchHandle)? {
        executor.execute { completion(.failure(FetchError.connectionFailed("no network in this benchmark"))) }
        return nil
    }
}
let loader = ResourceLoader(engine: cached, fetcher: NoNetwork(), policy: NetworkPolicy(allowedHosts: []))
let (hot, cold, asyncResult, rangeResult) = await Task.detached { [urls, seconds, bigSize] in
    (await fourKB(cached, urls: urls, seconds: seconds),
     await fourKB(uncached, urls: urls, seconds: seconds),
     await fourKB(cached, urls: urls, seconds: seconds, through: loader),
     ranges(cached, size: bigSize, seconds: seconds))
}.value

func row(_ name: String, _ result: (hits: Int, bytes: Int, elapsed: Double)) -> String {
    let perSecond = Double(result.hits) / result.elapsed
    let megabytes = Double(result.bytes) / result.elapsed / 1e6
    return name.padding(toLength: 44, withPad: " ", startingAt: 0) + String(format: "%12.0f %10.1f", perSecond, megabytes)
}
print("Satchel engine benchmark (one core, release build)")
print("  files: \(fileCount) distinct 4 KB files + a 64 MiB media file; \(seconds) s per case; every body byte read")
print("")
print("case".padding(toLength: 44, withPad: " ", startingAt: 0) + String(format: "%12@ %10@", "hits/s", "MB/s"))
print(row("4 KB, small-file cache on (sync entry)", hot))
print(row("4 KB, cache off: open + pread per hit", cold))
print(row("4 KB, cache on, await loader.respond", asyncResult))
print(row("1 MiB ranges of a 64 MiB file", rangeResult))
print(String(format: "RESULT engine_4k_hits_per_s=%.0f engine_4k_uncached_hits_per_s=%.0f engine_4k_async_hits_per_s=%.0f engine_1m_range_hits_per_s=%.0f engine_1m_range_mb_per_s=%.0f",
    Double(hot.hits) / hot.elapsed, Double(cold.hits) / cold.elapsed, Double(asyncResult.hits) / asyncResult.elapsed, Double(rangeResult.hits) / rangeResult.elapsed, Double(rangeResult.bytes) / rangeResult.elapsed / 1e6))
