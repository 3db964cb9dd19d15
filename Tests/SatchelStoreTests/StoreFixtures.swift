import Foundation
@testable import SatchelArchive
import SatchelBundle
import SatchelCore
@testable import SatchelStore
import SatchelTestSupport
import SatchelPublishing

/// Packs small bundles for store tests: each call gives a distinct version of an app.
struct BundleFactory {
    let folder: String
    var key: SigningKey? = nil

    func bundle(
        id: String = "shop", version: String, host: String = "m.shop.example", prefix: String = "/",
        files: [String: String]? = nil, format: ArchiveFormat = .zip
    ) throws -> String {
        let source = folder + "/src-\(id)-\(version)-\(UUID().uuidString)"
        try makeTree(source, files ?? [
            "index.html": "<h1>\(id) \(version)</h1>", "js/app.mjs": "export const v = '\(version)'",
            "css/app.css": "body{}", "img/logo.png": "png \(version)",
        ])
        let options = PackOptions(
            id: try PackageID(id), version: try SemanticVersion(version),
            scope: try Scope(hosts: [HostPattern(host)], pathPrefix: PathPrefix(prefix)), format: format, signingKey: key,
            sourceDateEpoch: 1_700_000_000)
        let out = folder + "/bundles-\(UUID().uuidString)"
        return try Packer.pack(source: source, options: options, outputFolder: out).bundle
    }
}

/// Everything under a store folder (paths and file contents), to prove that a refused operation changed nothing.
/// The lock file's contents never matter; its presence is not a change. Nor is the scope cache's refresh (an install
/// refused for its scope has read the other packages' scopes, which it may remember: `ScopeCache`).
func snapshot(_ root: String) throws -> [String: [UInt8]] { try treeSnapshot(root) { $0 == "lock" || $0 == "scopes.cache" } }

func id(_ raw: String) -> PackageID { try! PackageID(raw) }
func v(_ raw: String) -> SemanticVersion { try! SemanticVersion(raw) }
