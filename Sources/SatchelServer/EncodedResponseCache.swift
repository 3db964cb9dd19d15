import NIOCore
import NIOHTTP1
import SatchelCore
import SatchelEngine

/// The encoded bytes (head and body) of the most common answer of all: a plain `GET` of a small package file
/// over a keep-alive HTTP/1.1 connection. Such a request, for the same host and target, gets the same bytes
/// until the served versions change, so the second one is answered by writing a buffer, skipping the URL
/// parsing, routing, header building and encoding the first one went through.
///
/// What makes reuse safe is stated by the engine, next to the code that reads requests:
/// ``ResourceEngine/headersThatChangeResponses`` (a request carrying any of them is never reused or stored)
/// and ``ResourceEngine/generation`` (part of every entry; a new activation makes every entry stale).
final class EncodedResponseCache: Sendable {
    struct Key: Hashable, Sendable {
        let host: String
        let target: String
    }

    struct Entry: Sendable {
        let generation: Int
        let bytes: ByteBuffer
        let status: Int
        let outcome: String
    }

    /// Only small bodies are worth holding twice (the engine's own cache already holds them once).
    static let maxBodyBytes = 64 << 10
    let maxEntries: Int
    /// ``ResourceEngine/headersThatChangeResponses``, read once.
    let varying: [String]
    private let entries = Locked([Key: Entry]())

    init(varying: [String], maxEntries: Int = 4096) {
        self.varying = varying
        self.maxEntries = maxEntries
    }

    /// The key for a request whose answer may be reused or stored: nothing in it can change the answer.
    func key(for head: HTTPRequestHead) -> Key? {
        guard head.method == .GET, head.version == .http1_1, head.isKeepAlive else { return nil }
        var host: String?
        for (name, value) in head.headers {
            if SatchelCore.HTTPHeaders.equalNames(name, "Host") { host = value; continue }
            if varying.contains(where: { SatchelCore.HTTPHeaders.equalNames($0, name) }) { return nil }
        }
        return host.map { Key(host: $0, target: head.uri) }
    }

    func lookup(_ key: Key, generation: Int) -> Entry? {
        entries.withLock { $0[key] }.flatMap { $0.generation == generation ? $0 : nil }
    }

    func store(_ key: Key, _ entry: Entry) {
        entries.withLock { entries in
            // Past the cap start again: entries are cheap to rebuild and a full clear keeps this simple.
            if entries.count >= maxEntries, entries[key] == nil { entries.removeAll(keepingCapacity: true) }
            entries[key] = entry
        }
    }
}
