import SatchelCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The store is the engine's package source: the active version of every package, a cheap change token,
/// and pins that keep served versions out of gc's reach.
extension PackageStore: PackageSource {
    public func servedPackages() throws -> [ServedPackage] {
        var served: [ServedPackage] = []
        for id in try packageIDs() {
            guard let state = try state(of: id) else { continue }
            served.append(ServedPackage(manifest: try installedManifest(id, state.active), folder: layout.version(id, state.active)))
        }
        return served
    }

    /// Every state switch renames a new `state.json` into place, so its inode changes; with the modification
    /// time and the list of packages that makes a token that changes with any activation, for one `stat`
    /// per package.
    public func changeToken() -> [Int64] {
        var token: [Int64] = []
        for name in FileSystem.list(layout.packages) {
            var info = stat()
            guard stat(layout.packages + "/" + name + "/state.json", &info) == 0 else { continue }
            #if canImport(Darwin)
            let nanoseconds = Int64(info.st_mtimespec.tv_sec) * 1_000_000_000 + Int64(info.st_mtimespec.tv_nsec)
            #else
            let nanoseconds = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
            #endif
            token.append(Int64(bitPattern: UInt64(info.st_ino)))
            token.append(nanoseconds)
            token.append(Int64(name.hashValue))
        }
        return token
    }

    public func pin(_ packages: [ServedPackage]) throws -> any Sendable {
        try pin(Dictionary(packages.map { ($0.manifest.id, $0.manifest.version) }) { first, _ in first })
    }
}
