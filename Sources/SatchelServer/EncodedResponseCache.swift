import Foundation
import NIOCore
import NIOHTTP1
import SatchelCore
import SatchelEngine
import SatchelHTTP

/// The encoded bytes (head and body) of the most common answer of all: a plain `GET` of a small package file
/// over a keep-alive HTTP/1.1 connection. Such a request, for the same engine URL, gets the same bytes
/// until the served versions change, so the second one is answered by writing a buffer, skipping the URL
/// parsing, routing, header building and encoding the first one went through.
///
/// What makes reuse safe is stated by the engine, next to the code that reads requests:
/// ``ResourceEngine/headersThatChangeResponses`` (a request carrying any of them is never reused or stored)
/// and ``ResourceEngine/generation`` (part of every entry; a new activation makes every entry stale).
final class EncodedResponseCache: Sendable {
    /// The URL the engine answers for (``ServerResponder/Destination``), never a header: two requests with the
    /// same key are the same question to the engine, whatever their `Host` fields said.
    struct Key: Hashable, Sendable {
        let url: String
    }

    struct Entry: Sendable {
        let generation: Int
        let bytes: ByteBuffer
        let status: Int
        let outcome: AnswerLabel
        /// For an answer that came from the HTTP cache: reused only while this holds (``AnswerReuse``).
        var reuse: AnswerReuse? = nil
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

    /// The key for a request whose answer may be reused or stored: a plain GET over keep-alive HTTP/1.1 for a
    /// URL the event loop answers from packages, carrying nothing that can change the answer.
    func key(for head: HTTPRequestHead, engineURL: String?) -> Key? {
        guard head.method == .GET, head.version == .http1_1, let url = engineURL else { return nil }
        for (name, _) in head.headers where varying.contains(where: { SatchelCore.HTTPHeaders.equalNames($0, name) }) { return nil }
        return Key(url: url)
    }

    func lookup(_ key: Key, generation: Int) -> Entry? {
        guard let entry = entries.withLock({ $0[key] }), entry.generation == generation else { return nil }
        if let reuse = entry.reuse, !reuse.holds { return nil }
        return entry
    }

    func store(_ key: Key, _ entry: Entry) {
        entries.withLock { entries in
            // Past the cap start again: entries are cheap to rebuild and a full clear keeps this simple.
            if entries.count >= maxEntries, entries[key] == nil { entries.removeAll(keepingCapacity: true) }
            entries[key] = entry
        }
    }
}
