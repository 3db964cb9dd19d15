import Foundation
import SatchelCore
import SatchelHTTP
import SatchelPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where an HTTP cache keeps its responses, and how much room it may take.
public struct CacheConfiguration: Sendable {
    /// The cache's folder; created when missing.
    public var folder: String
    /// The bound on the bytes stored (bodies and their records); least recently used entries go first.
    public var maxBytes: Int64
    public var mode: CacheMode
    /// The name the cache gives itself in `Cache-Status`.
    public var name: String
    /// The time, in seconds since 1970, that ages and freshness are counted in (RFC 9111 §4.2.3's `now`): the system
    /// clock, unless a test moves time itself instead of waiting for it to pass.
    public var clock: @Sendable () -> Double

    public static let defaultMaxBytes: Int64 = 1 << 30

    public init(
        folder: String, maxBytes: Int64 = defaultMaxBytes, mode: CacheMode, name: String = "satchel",
        clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) {
        self.folder = folder
        self.maxBytes = maxBytes
        self.mode = mode
        self.name = name
        self.clock = clock
    }
}

/// Why a cache could not be opened.
public enum CacheError: Error, Equatable, Sendable, CustomStringConvertible {
    case cannotCreate(path: String, errno: Int32)
    case unknownLayout(path: String, found: String)

    public var description: String {
        switch self {
        case .cannotCreate(let path, let code): "cannot create the cache folder \(path): \(String(cString: strerror(code)))"
        case .unknownLayout(let path, let found): "\(path) is not a cache this Satchel can read (\(found)); give another --cache folder"
        }
    }
}

/// One stored response: what the rules need (``StoredResponse``), where its body is, and how big it is.
struct CacheEntry: Sendable {
    let id: String
    let key: String
    var stored: StoredResponse
    let bodyLength: Int64
    /// The size of the entry's record on disk, counted against the bound with the body.
    var recordBytes: Int64
    var lastUsed: UInt64
    /// Invalidated when the entry is replaced, freshened or removed: answers made from it stop being reused.
    var token = ReuseToken()

    var bytes: Int64 { bodyLength + recordBytes }
}

/// The disk side of the HTTP cache (docs/formats.md, "HTTP cache"): each entry is a body file and a record file
/// under `entries/<2 hex>/`, named by a random id; a record is written (atomically, by rename) only after its body
/// is complete and in place, so a record always names a whole body; an entry is never changed in place except its
/// record (a 304's headers), which is replaced the same way. Fills in progress live in `tmp/`, which every open
/// clears; bodies without a record, and records whose body is missing or of another size, are removed then.
/// The index is in memory, rebuilt from the records at open; recency is kept in memory and seeded from the records'
/// modification times.
final class CacheStore: Sendable {
    let configuration: CacheConfiguration
    private let state = Locked(State())
    private let entriesFolder: String
    let temporaryFolder: String

    private struct State {
        /// Entries by key (the URL), newest first.
        var byKey: [String: [CacheEntry]] = [:]
        var totalBytes: Int64 = 0
        var clock: UInt64 = 0
    }

    static let layout = 1

    init(_ configuration: CacheConfiguration) throws(CacheError) {
        self.configuration = configuration
        entriesFolder = configuration.folder + "/entries"
        temporaryFolder = configuration.folder + "/tmp"
        do { try FileManager.default.createDirectory(atPath: configuration.folder, withIntermediateDirectories: true) } catch {
            throw .cannotCreate(path: configuration.folder, errno: Int32((error as NSError).code == 0 ? EIO : EACCES))
        }
        let marker = configuration.folder + "/cache.json"
        if let existing = FileManager.default.contents(atPath: marker) {
            let text = String(decoding: existing, as: UTF8.self)
            guard text == #"{"layout":1}"# else { throw .unknownLayout(path: configuration.folder, found: text.prefix(40).description) }
        } else if let names = try? FileManager.default.contentsOfDirectory(atPath: configuration.folder), !names.isEmpty {
            throw .unknownLayout(path: configuration.folder, found: "a folder holding \(names.sorted().prefix(3).joined(separator: ", "))")
        } else {
            _ = FileManager.default.createFile(atPath: marker, contents: Data(#"{"layout":1}"#.utf8))
        }
        try Self.makeFolder(entriesFolder)
        try? FileManager.default.removeItem(atPath: temporaryFolder)
        try Self.makeFolder(temporaryFolder)
        load()
        evict(toFit: 0)
    }

    private static func makeFolder(_ path: String) throws(CacheError) {
        if mkdir(path, 0o755) != 0, errno != EEXIST { throw .cannotCreate(path: path, errno: errno) }
    }

    // MARK: Reading

    /// The entries stored for `key`, newest first.
    func entries(for key: String) -> [CacheEntry] {
        state.withLock { $0.byKey[key] ?? [] }
    }

    /// Marks an entry used (for the least-recently-used order).
    func touch(_ id: String, key: String) {
        state.withLock { state in
            state.clock += 1
            let now = state.clock
            if let index = state.byKey[key]?.firstIndex(where: { $0.id == id }) { state.byKey[key]![index].lastUsed = now }
        }
    }

    /// An entry's body for an answer: a small one as bytes kept in memory after its first read (no open, no
    /// sendfile for a 4 KB hit: those system calls were most of a small hit's cost), a larger one as a region of its
    /// open file; nil when it is gone (evicted since the lookup).
    func body(_ entry: CacheEntry) -> ResponseBody? {
        guard entry.bodyLength <= Self.inMemoryBody else {
            return FileRegion(path: bodyPath(entry.id), offset: 0, length: entry.bodyLength).map { .file($0) }
        }
        if let bytes = smallBodies.withLock({ $0.bytes[entry.id] }) { return .bytes(bytes) }
        guard let region = FileRegion(path: bodyPath(entry.id), offset: 0, length: entry.bodyLength), let bytes = try? region.readAll() else { return nil }
        smallBodies.withLock { small in
            // Past the bound start again: small bodies are cheap to read back, and a full clear keeps this simple.
            if small.total + bytes.count > Self.inMemoryTotal { small = SmallBodies() }
            small.bytes[entry.id] = bytes
            small.total += bytes.count
        }
        return .bytes(bytes)
    }

    /// Bodies up to this size are answered from memory once read.
    static let inMemoryBody: Int64 = 64 << 10
    /// The memory small bodies may take together.
    static let inMemoryTotal = 32 << 20
    private let smallBodies = Locked(SmallBodies())

    private struct SmallBodies {
        var bytes: [String: [UInt8]] = [:]
        var total = 0
    }

    var totalBytes: Int64 { state.withLock { $0.totalBytes } }
    var entryCount: Int { state.withLock { $0.byKey.values.reduce(0) { $0 + $1.count } } }

    /// What the cache holds per host, for status pages.
    func bytesPerHost() -> [String: Int64] {
        state.withLock { state in
            var hosts: [String: Int64] = [:]
            for (key, entries) in state.byKey {
                let host = RequestURL(key)?.host ?? "?"
                hosts[host, default: 0] += entries.reduce(0) { $0 + $1.bytes }
            }
            return hosts
        }
    }

    // MARK: Writing

    /// A new body file in `tmp/` for a fill; the descriptor is read-write (readers `pread` it while it grows).
    func createFillFile() -> (id: String, path: String, descriptor: Int32)? {
        let id = Self.randomID()
        let path = temporaryFolder + "/" + id + ".body"
        let descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        return descriptor >= 0 ? (id, path, descriptor) : nil
    }

    /// Removes the file of a fill that did not end whole.
    func discardFill(_ id: String) {
        unlink(temporaryFolder + "/" + id + ".body")
    }

    /// Makes a complete fill an entry: its body moves into place, then its record is written; entries it replaces
    /// (the same key, selected by the same request fields) go, and the least recently used go until the bound holds.
    /// - Returns: false when the entry could not be stored (too large, a disk error): the fill's file is removed.
    @discardableResult
    func commit(id: String, key: String, stored: StoredResponse, bodyLength: Int64, replacing request: ResourceRequest) -> Bool {
        let temporary = temporaryFolder + "/" + id + ".body"
        guard bodyLength <= configuration.maxBytes, let record = Self.record(key: key, stored: stored, bodyLength: bodyLength) else {
            unlink(temporary)
            return false
        }
        let folder = entriesFolder + "/" + id.prefix(2)
        if mkdir(folder, 0o755) != 0, errno != EEXIST { unlink(temporary); return false }
        guard rename(temporary, bodyPath(id)) == 0, writeRecord(record, id: id) else {
            unlink(temporary)
            unlink(bodyPath(id))
            return false
        }
        let entry = CacheEntry(id: id, key: key, stored: stored, bodyLength: bodyLength, recordBytes: Int64(record.count), lastUsed: 0)
        let replaced: [CacheEntry] = state.withLock { state in
            state.clock += 1
            var added = entry
            added.lastUsed = state.clock
            var list = state.byKey[key] ?? []
            let (gone, kept) = list.partitioned { CacheRules.varyMatches($0.stored, request: request) }
            list = [added] + kept
            state.byKey[key] = list
            state.totalBytes += added.bytes - gone.reduce(0) { $0 + $1.bytes }
            return gone
        }
        for old in replaced { removeFiles(old) }
        evict(toFit: 0)
        return true
    }

    /// Replaces an entry's record with a freshened response (a 304's headers, new times); its body stays.
    func update(_ entry: CacheEntry, stored: StoredResponse) {
        guard let record = Self.record(key: entry.key, stored: stored, bodyLength: entry.bodyLength), writeRecord(record, id: entry.id) else { return }
        state.withLock { state in
            guard let index = state.byKey[entry.key]?.firstIndex(where: { $0.id == entry.id }) else { return }
            state.totalBytes += Int64(record.count) - state.byKey[entry.key]![index].recordBytes
            state.byKey[entry.key]![index].token.invalidate()
            state.byKey[entry.key]![index].token = ReuseToken()
            state.byKey[entry.key]![index].stored = stored
            state.byKey[entry.key]![index].recordBytes = Int64(record.count)
        }
    }

    /// Removes every entry stored for `key` (invalidation, RFC 9111 §4.4).
    func remove(key: String) {
        let gone = state.withLock { state -> [CacheEntry] in
            let gone = state.byKey.removeValue(forKey: key) ?? []
            state.totalBytes -= gone.reduce(0) { $0 + $1.bytes }
            return gone
        }
        for entry in gone { removeFiles(entry) }
    }

    /// Removes every entry (for a host, or all).
    func removeAll(host: String? = nil) {
        let gone = state.withLock { state -> [CacheEntry] in
            var gone: [CacheEntry] = []
            for (key, entries) in state.byKey where host == nil || RequestURL(key)?.host == host {
                gone += entries
                state.byKey[key] = nil
            }
            state.totalBytes -= gone.reduce(0) { $0 + $1.bytes }
            return gone
        }
        for entry in gone { removeFiles(entry) }
    }

    /// Evicts least recently used entries until `incoming` more bytes fit under the bound.
    func evict(toFit incoming: Int64) {
        let gone = state.withLock { state -> [CacheEntry] in
            guard state.totalBytes + incoming > configuration.maxBytes else { return [] }
            var all = state.byKey.values.flatMap { $0 }.sorted { $0.lastUsed < $1.lastUsed }
            var gone: [CacheEntry] = []
            while state.totalBytes + incoming > configuration.maxBytes, !all.isEmpty {
                let oldest = all.removeFirst()
                state.byKey[oldest.key]?.removeAll { $0.id == oldest.id }
                if state.byKey[oldest.key]?.isEmpty == true { state.byKey[oldest.key] = nil }
                state.totalBytes -= oldest.bytes
                gone.append(oldest)
            }
            return gone
        }
        for entry in gone { removeFiles(entry) }
    }

    // MARK: Files

    private func bodyPath(_ id: String) -> String { entriesFolder + "/" + id.prefix(2) + "/" + id + ".body" }
    private func recordPath(_ id: String) -> String { entriesFolder + "/" + id.prefix(2) + "/" + id + ".json" }

    /// The record first: from then on nothing names the body, and an open reader keeps the unlinked file.
    private func removeFiles(_ entry: CacheEntry) {
        entry.token.invalidate()
        let id = entry.id
        unlink(recordPath(id))
        unlink(bodyPath(id))
        smallBodies.withLock { small in
            if let bytes = small.bytes.removeValue(forKey: id) { small.total -= bytes.count }
        }
    }

    /// Written to `tmp/` and renamed over the old record: a reader of the folder sees the old or the new, whole.
    private func writeRecord(_ bytes: [UInt8], id: String) -> Bool {
        let temporary = temporaryFolder + "/" + id + "." + Self.randomID() + ".json"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return false }
        let failed = POSIXIO.writeAll(bytes, to: descriptor) != nil
        close(descriptor)
        guard !failed, rename(temporary, recordPath(id)) == 0 else {
            unlink(temporary)
            return false
        }
        return true
    }

    /// A record: the key, the response as stored and the body's length (docs/formats.md, "HTTP cache").
    struct Record: Codable {
        var layout: Int
        var key: String
        var status: Int
        var headers: [[String]]
        var varying: [[String?]]
        var requestTime: Double
        var responseTime: Double
        var bodyLength: Int64
    }

    static func record(key: String, stored: StoredResponse, bodyLength: Int64) -> [UInt8]? {
        let record = Record(
            layout: layout, key: key, status: stored.status, headers: stored.headers.map { [$0.name, $0.value] },
            varying: stored.varying.map { [$0.name, $0.value] }, requestTime: stored.requestTime, responseTime: stored.responseTime,
            bodyLength: bodyLength)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(record)).map { Array($0) }
    }

    /// Reads every record; removes what a crash or an older process left half done.
    private func load() {
        guard let folders = try? FileManager.default.contentsOfDirectory(atPath: entriesFolder) else { return }
        var loaded: [(CacheEntry, Date)] = []
        for folder in folders {
            let path = entriesFolder + "/" + folder
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { continue }
            var bodies = Set(names.filter { $0.hasSuffix(".body") }.map { String($0.dropLast(5)) })
            for name in names where name.hasSuffix(".json") {
                let id = String(name.dropLast(5))
                guard let data = FileManager.default.contents(atPath: path + "/" + name),
                    let record = try? JSONDecoder().decode(Record.self, from: data), record.layout == Self.layout,
                    bodies.contains(id), Self.size(of: path + "/" + id + ".body") == record.bodyLength,
                    record.varying.allSatisfy({ $0.count == 2 && $0[0] != nil }), record.headers.allSatisfy({ $0.count == 2 })
                else {
                    unlink(path + "/" + name)
                    unlink(path + "/" + id + ".body")
                    bodies.remove(id)
                    continue
                }
                bodies.remove(id)
                let stored = StoredResponse(
                    status: record.status, headers: HTTPHeaders(record.headers.map { ($0[0], $0[1]) }),
                    varying: record.varying.map { StoredVaryField(name: $0[0]!, value: $0[1]) }, requestTime: record.requestTime,
                    responseTime: record.responseTime)
                let modified = (try? FileManager.default.attributesOfItem(atPath: path + "/" + name)[.modificationDate] as? Date) ?? Date.distantPast
                loaded.append((CacheEntry(id: id, key: record.key, stored: stored, bodyLength: record.bodyLength, recordBytes: Int64(data.count), lastUsed: 0), modified))
            }
            // Bodies no record names: a crash between the body's rename and the record's.
            for id in bodies { unlink(path + "/" + id + ".body") }
        }
        state.withLock { state in
            for (entry, _) in loaded.sorted(by: { $0.1 < $1.1 }) {
                state.clock += 1
                var entry = entry
                entry.lastUsed = state.clock
                state.byKey[entry.key, default: []].insert(entry, at: 0)
                state.totalBytes += entry.bytes
            }
        }
    }

    private static func size(of path: String) -> Int64? {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : nil
    }

    static func randomID() -> String {
        (0..<2).map { _ in String(UInt64.random(in: 0...UInt64.max), radix: 16).leftPadded(to: 16) }.joined()
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}

extension Array {
    /// The elements that satisfy `belongs`, and the rest, each in order.
    fileprivate func partitioned(_ belongs: (Element) -> Bool) -> ([Element], [Element]) {
        var yes: [Element] = []
        var no: [Element] = []
        for element in self { if belongs(element) { yes.append(element) } else { no.append(element) } }
        return (yes, no)
    }
}
