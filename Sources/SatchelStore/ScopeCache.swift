import SatchelCore
import SatchelPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `<store>/scopes.cache` (docs/formats.md, "Store layout"): the scope (hosts and path prefix) each package's active
/// version claims, so that an install checks for a conflict with every other package by one `stat` of each
/// `state.json` instead of reading each state and manifest (a manifest of thousands of files is megabytes).
///
/// An entry is used only while the package's `state.json` is the very file it was made from (inode, modification
/// time and size): every state switch renames a new file into place, whoever made it (an older runtime, which does not
/// know this file, included), so a switch makes its entry a miss, read again from the state and the manifest. It is
/// a cache: written without a flush, any entry that does not parse is a miss, and deleting it costs one full look.
///
/// One line per package: `<id> <inode> <mtime ns> <size> <active version> <hosts, comma-separated or -> <path prefix>`;
/// the prefix is last, as it may hold spaces. Hosts `-` is a package whose active version is nowhere (not served).
struct ScopeCache {
    struct Entry: Equatable {
        let identity: [Int64]
        let version: SemanticVersion
        /// Nil when the active version has no manifest to read (its folder is missing).
        let scope: Scope?
    }

    static func read(_ path: String) -> [PackageID: Entry] {
        guard let bytes = try? FileSystem.read(path) else { return [:] }
        var entries: [PackageID: Entry] = [:]
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 6, omittingEmptySubsequences: false)
            guard fields.count == 7, let id = try? PackageID(String(fields[0])),
                let inode = Int64(fields[1]), let modified = Int64(fields[2]), let size = Int64(fields[3]),
                let version = try? SemanticVersion(String(fields[4]))
            else { continue }
            var scope: Scope?
            if fields[5] != "-" {
                guard let hosts = try? fields[5].split(separator: ",").map({ try HostPattern(String($0)) }),
                    let prefix = try? PathPrefix(String(fields[6])), let parsed = try? Scope(hosts: hosts, pathPrefix: prefix)
                else { continue }
                scope = parsed
            }
            entries[id] = Entry(identity: [inode, modified, size], version: version, scope: scope)
        }
        return entries
    }

    static func encode(_ entries: [PackageID: Entry]) -> [UInt8] {
        var text = ""
        for (id, entry) in entries.sorted(by: { $0.key < $1.key }) {
            let hosts = entry.scope.map { $0.hosts.map(\.value).joined(separator: ",") } ?? "-"
            let prefix = entry.scope?.pathPrefix.value ?? "/"
            text += "\(id.value) \(entry.identity.map(String.init).joined(separator: " ")) \(entry.version) \(hosts) \(prefix)\n"
        }
        return Array(text.utf8)
    }

    /// Inode, modification time and size of a file; nil when it cannot be looked at (missing).
    static func identity(of path: String) -> [Int64]? {
        FaultInjection.accessed(path)
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return [Int64(bitPattern: UInt64(info.st_ino)), FileTimes.modified(info), Int64(info.st_size)]
    }
}

extension PackageStore {
    /// The scope each other package's active version claims, for the install's conflict check; reads only the
    /// packages whose `state.json` changed since the cache was written, and rewrites the cache when any did. Runs
    /// under the store lock.
    func activeScopes(except excluded: PackageID) throws(StoreError) -> [(id: PackageID, scope: Scope)] {
        let cached = ScopeCache.read(layout.scopeCache)
        var entries: [PackageID: ScopeCache.Entry] = [:]
        var scopes: [(id: PackageID, scope: Scope)] = []
        for id in try packageIDs() where id != excluded {
            if builtIns[id] != nil {
                // A built-in package may be served from the app's archive, which the cache does not describe.
                if let scope = try activeManifest(of: id)?.scope { scopes.append((id, scope)) }
                continue
            }
            guard let identity = ScopeCache.identity(of: layout.state(id)) else { continue }
            var entry = cached[id]
            if entry?.identity != identity {
                guard let state = try storedState(of: id) else { continue }
                let manifest = FileSystem.isDirectory(layout.version(id, state.active)) ? try installedManifest(id, state.active) : nil
                entry = ScopeCache.Entry(identity: identity, version: state.active, scope: manifest?.scope)
            }
            entries[id] = entry
            if let scope = entry?.scope { scopes.append((id, scope)) }
        }
        // The package being installed keeps its entry: its state is about to change, which makes it a miss next time.
        if let kept = cached[excluded] { entries[excluded] = kept }
        if entries != cached {
            // Not flushed: a cache lost to a power cut costs one full look, nothing else.
            try? FileSystem.writeAtomically(ScopeCache.encode(entries), to: layout.scopeCache, temporaryFolder: layout.staging, flush: false)
        }
        return scopes
    }
}
