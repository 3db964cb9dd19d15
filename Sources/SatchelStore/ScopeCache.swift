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
    /// One package's line. Kept as the text it is (hosts and prefix exactly as `Scope` spells them): the conflict check
    /// compares those strings, so nothing is parsed beyond the file's identity, and an install into a store of
    /// hundreds of packages costs a `stat` per package, not a validation of every host name.
    struct Entry: Equatable {
        let identity: [Int64]
        let version: String
        /// The host patterns' values; nil when the active version has no manifest to read (its folder is missing).
        let hosts: [String]?
        let prefix: String

        init(identity: [Int64], version: String, hosts: [String]?, prefix: String) {
            self.identity = identity
            self.version = version
            self.hosts = hosts
            self.prefix = prefix
        }

        init(identity: [Int64], version: SemanticVersion, scope: Scope?) {
            self.init(identity: identity, version: version.description, hosts: scope?.hosts.map(\.value), prefix: scope?.pathPrefix.value ?? "/")
        }

        /// Whether this package claims one of `hosts` under `prefix`, as `Scope` values spell them.
        func claims(anyOf hosts: [String], under prefix: String) -> Bool {
            guard let claimed = self.hosts, self.prefix == prefix else { return false }
            return hosts.contains(where: claimed.contains)
        }
    }

    /// Lines that do not parse are misses (read again from the state and the manifest).
    static func read(_ path: String) -> [String: Entry] {
        guard let bytes = try? FileSystem.read(path) else { return [:] }
        var entries: [String: Entry] = [:]
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 6, omittingEmptySubsequences: false)
            guard fields.count == 7, !fields[0].isEmpty, let inode = Int64(fields[1]), let modified = Int64(fields[2]), let size = Int64(fields[3]),
                !fields[4].isEmpty, !fields[5].isEmpty, fields[6].hasPrefix("/")
            else { continue }
            let hosts = fields[5] == "-" ? nil : fields[5].split(separator: ",").map(String.init)
            entries[String(fields[0])] = Entry(identity: [inode, modified, size], version: String(fields[4]), hosts: hosts, prefix: String(fields[6]))
        }
        return entries
    }

    static func encode(_ entries: [String: Entry]) -> [UInt8] {
        var text = ""
        for (id, entry) in entries.sorted(by: { $0.key < $1.key }) {
            let hosts = entry.hosts.map { $0.joined(separator: ",") } ?? "-"
            text += "\(id) \(entry.identity.map(String.init).joined(separator: " ")) \(entry.version) \(hosts) \(entry.prefix)\n"
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
    /// The other package whose active version claims one of `scope`'s hosts with the same path prefix, and that host;
    /// nil when none does. Reads only the packages whose `state.json` changed since the cache was written, and
    /// rewrites the cache when any did. Runs under the store lock.
    func scopeConflict(with scope: Scope, except excluded: PackageID) throws(StoreError) -> (id: PackageID, host: String)? {
        let cached = ScopeCache.read(layout.scopeCache)
        let hosts = scope.hosts.map(\.value), prefix = scope.pathPrefix.value
        var entries: [String: ScopeCache.Entry] = [:]
        var conflict: (id: PackageID, host: String)?
        for id in try packageIDs() where id != excluded {
            if builtIns[id] != nil {
                // A built-in package may be served from the app's archive, which the cache does not describe.
                if conflict == nil, let other = try activeManifest(of: id)?.scope, other.pathPrefix == scope.pathPrefix,
                    let host = scope.hosts.first(where: other.hosts.contains)
                {
                    conflict = (id, host.value)
                }
                continue
            }
            guard let identity = ScopeCache.identity(of: layout.state(id)) else { continue }
            var entry = cached[id.value]
            if entry?.identity != identity {
                guard let state = try storedState(of: id) else { continue }
                let manifest = FileSystem.isDirectory(layout.version(id, state.active)) ? try installedManifest(id, state.active) : nil
                entry = ScopeCache.Entry(identity: identity, version: state.active, scope: manifest?.scope)
            }
            entries[id.value] = entry
            if conflict == nil, let entry, entry.claims(anyOf: hosts, under: prefix), let host = hosts.first(where: { entry.hosts?.contains($0) == true }) {
                conflict = (id, host)
            }
        }
        // The package being installed keeps its entry: its state is about to change, which makes it a miss next time.
        if let kept = cached[excluded.value] { entries[excluded.value] = kept }
        if entries != cached {
            // Not flushed: a cache lost to a power cut costs one full look, nothing else.
            try? FileSystem.writeAtomically(ScopeCache.encode(entries), to: layout.scopeCache, temporaryFolder: layout.staging, flush: false)
        }
        return conflict
    }
}
