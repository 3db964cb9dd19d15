import Foundation
import SatchelCore
@testable import SatchelEngine
import SatchelHTTP
import SatchelTestSupport

/// A package source without a store: packages written into a folder, switchable at will.
final class FolderSource: PackageSource, @unchecked Sendable {
    private let lock = NSLock()
    private var packages: [ServedPackage]
    private var generation: Int64 = 0
    private(set) var pins: [[String]] = []

    init(_ packages: [ServedPackage]) { self.packages = packages }

    func servedPackages() throws -> [ServedPackage] { lock.withLock { packages } }
    func changeToken() -> [Int64] { lock.withLock { [generation] } }
    func pin(_ packages: [ServedPackage]) throws -> any Sendable {
        lock.withLock { pins.append(packages.map { "\($0.manifest.id)@\($0.manifest.version)" }) }
        return 0
    }

    func replace(_ packages: [ServedPackage]) {
        lock.withLock {
            self.packages = packages
            generation += 1
        }
    }
}

/// Writes `files` into `folder/<id>-<version>` and returns the package with its manifest.
func makePackage(
    in folder: String, id: String = "shop", version: String = "1.0.0", hosts: [String] = ["m.shop.com"], prefix: String = "/",
    files: [String: [UInt8]], entry: String = "index.html", spaFallback: Bool = false, routes: [Route] = []
) throws -> ServedPackage {
    let root = folder + "/\(id)-\(version)"
    var records: [FileRecord] = []
    for (path, bytes) in files {
        let url = URL(fileURLWithPath: root + "/" + path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(bytes).write(to: url)
        let safe = try SafePath(validating: path)
        records.append(FileRecord(path: safe, size: Int64(bytes.count), sha256: Digests.sha256Hex(bytes), mime: MIMETable.entry(for: safe).type))
    }
    let manifest = try Manifest(
        id: PackageID(id), version: SemanticVersion(version), createdAt: Timestamp(secondsSinceEpoch: 0),
        scope: Scope(hosts: hosts.map { try HostPattern($0) }, pathPrefix: PathPrefix(prefix)), entry: SafePath(validating: entry),
        spaFallback: spaFallback, routes: routes, files: records)
    return ServedPackage(manifest: manifest, folder: root)
}

func text(_ string: String) -> [UInt8] { Array(string.utf8) }

/// Deterministic bytes of a given size.
func bytes(_ count: Int, seed: UInt8 = 7) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) } }

extension ResourceEngine {
    func get(_ url: String, _ headers: HTTPHeaders = HTTPHeaders(), method: RequestMethod = .get) async -> EngineResult {
        handle(ResourceRequest(method: method, url: url, headers: headers))
    }
}
