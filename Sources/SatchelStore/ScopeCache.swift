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
/// a cache: written without a flush, any line that does not parse is a miss, and deleting it costs one full look.
///
/// One line per package: `<id> <inode> <mtime ns> <size> <active version> <hosts, comma-separated or -> <prefix
/// length> <path prefix>`; the prefix is last, as it may hold spaces, and its length in bytes comes first so that a
/// line cut short never reads as a shorter prefix. Hosts `-` is a package whose active version is nowhere (not served).
/// A switch this runtime makes appends the package's new line (a later line wins), so the next install finds every
/// line a hit and writes nothing; the file is rewritten whole only when lines missed or it holds twice the lines it needs.
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

    /// The entries, a later line for a package winning over an earlier one, and how many lines were read. Lines that
    /// do not parse are misses (read again from the state and the manifest).
    static func read(_ path: String) -> [String: Entry] { readCounting(path).entries }

    static func readCounting(_ path: String) -> (entries: [String: Entry], lines: Int) {
        guard let bytes = try? FileSystem.read(path) else { return ([:], 0) }
        var entries: [String: Entry] = [:]
        var lines = 0
        bytes.withUnsafeBufferPointer { buffer in
            var start = 0
            while start < buffer.count {
                let end = buffer[start...].firstIndex(of: 0x0A) ?? buffer.count
                if end > start {
                    lines += 1
                    if let (id, entry) = parse(UnsafeBufferPointer(rebasing: buffer[start..<end])) { entries[id] = entry }
                }
                start = end + 1
            }
        }
        return (entries, lines)
    }

    /// One line, without its newline: seven fields separated by one space, then exactly the prefix's declared length.
    private static func parse(_ line: UnsafeBufferPointer<UInt8>) -> (String, Entry)? {
        var position = 0
        var numbers: [Int64] = []
        var texts: [String] = []
        for field in 0..<7 {
            guard let space = line[position...].firstIndex(of: 0x20), space > position else { return nil }
            let slice = UnsafeBufferPointer(rebasing: line[position..<space])
            if (1...3).contains(field) || field == 6 {
                guard let number = decimal(slice) else { return nil }
                numbers.append(number)
            } else {
                texts.append(String(decoding: slice, as: UTF8.self))
            }
            position = space + 1
        }
        let prefixLength = numbers[3]
        guard line.count - position == prefixLength, line.count > position, line[position] == 0x2F else { return nil }
        let prefix = String(decoding: UnsafeBufferPointer(rebasing: line[position...]), as: UTF8.self)
        let hosts = texts[2] == "-" ? nil : texts[2].split(separator: ",").map(String.init)
        return (texts[0], Entry(identity: Array(numbers[0..<3]), version: texts[1], hosts: hosts, prefix: prefix))
    }

    private static func decimal(_ digits: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard !digits.isEmpty, digits.count <= 19 else { return nil }
        var value: Int64 = 0
        var negative = false
        for (index, byte) in digits.enumerated() {
            if index == 0, byte == 0x2D, digits.count > 1 { negative = true; continue }
            guard (0x30...0x39).contains(byte) else { return nil }
            value = value &* 10 &+ Int64(byte - 0x30)
        }
        return negative ? -value : value
    }

    static func line(_ id: String, _ entry: Entry) -> String {
        let hosts = entry.hosts.map { $0.joined(separator: ",") } ?? "-"
        return "\(id) \(entry.identity.map(String.init).joined(separator: " ")) \(entry.version) \(hosts) \(entry.prefix.utf8.count) \(entry.prefix)\n"
    }

    static func encode(_ entries: [String: Entry]) -> [UInt8] {
        var text = ""
        for (id, entry) in entries.sorted(by: { $0.key < $1.key }) { text += line(id, entry) }
        return Array(text.utf8)
    }

    /// Adds one package's line at the end, in one write; not flushed. A failure only costs a miss next time.
    static func append(_ id: String, _ entry: Entry, to path: String) {
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        _ = POSIXIO.writeAll(Array(line(id, entry).utf8), to: descriptor)
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
    /// After this runtime switched `id`'s state to `active`, whose manifest it holds: appends the package's new line,
    /// so that the next install finds it a hit instead of reading the state and manifest and rewriting the file.
    func noteActiveScope(of id: PackageID, _ active: Manifest) {
        guard builtIns[id] == nil, let identity = ScopeCache.identity(of: layout.state(id)) else { return }
        ScopeCache.append(id.value, ScopeCache.Entry(identity: identity, version: active.version, scope: active.scope), to: layout.scopeCache)
    }

    /// The other package whose active version claims one of `scope`'s hosts with the same path prefix, and that host;
    /// nil when none does. Reads only the packages whose `state.json` changed since the cache was written, and
    /// rewrites the cache when any did. Runs under the store lock.
    func scopeConflict(with scope: Scope, except excluded: PackageID) throws(StoreError) -> (id: PackageID, host: String)? {
        let (cached, lines) = ScopeCache.readCounting(layout.scopeCache)
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
        if entries != cached || lines > 2 * entries.count + 16 {
            // Not flushed: a cache lost to a power cut costs one full look, nothing else.
            try? FileSystem.writeAtomically(ScopeCache.encode(entries), to: layout.scopeCache, temporaryFolder: layout.staging, flush: false)
        }
        return conflict
    }
}
