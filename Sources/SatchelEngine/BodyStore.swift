import Foundation
import SatchelCore

/// Holds request bodies that pages hand to native code before sending the request that refers to them (the
/// body-store channel, for bodies too large or too binary for a header: multipart forms with files, Blobs).
/// Bounded (bytes, entries, one body's size), expiring (a body nobody claims is dropped after ``ttl``) and
/// one-shot (taking a body removes it), so a page cannot make the app hoard memory.
public final class BodyStore: Sendable {
    public struct Limits: Sendable, Equatable {
        public var maxBytes: Int
        public var maxEntries: Int
        public var maxBodyBytes: Int
        public var ttl: Duration

        public init(maxBytes: Int = 128 << 20, maxEntries: Int = 256, maxBodyBytes: Int = 64 << 20, ttl: Duration = .seconds(60)) {
            self.maxBytes = maxBytes
            self.maxEntries = maxEntries
            self.maxBodyBytes = maxBodyBytes
            self.ttl = ttl
        }
    }

    public enum Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        case bodyTooLarge(bytes: Int, limit: Int)
        case storeFull(limit: Int)
        case tooManyBodies(limit: Int)
        case invalidID(String)

        public var description: String {
            switch self {
            case .bodyTooLarge(let bytes, let limit): "body of \(bytes) bytes is over the \(limit)-byte limit"
            case .storeFull(let limit): "the body store holds \(limit) bytes already; try again later"
            case .tooManyBodies(let limit): "the body store holds \(limit) bodies already; try again later"
            case .invalidID(let id): "body id \(id.debugDescription) must be 1-128 letters, digits, '-' or '_'"
            }
        }
    }

    private struct Entry {
        let body: StoredBody
        let expires: ContinuousClock.Instant
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var bytes = 0
    }

    public let limits: Limits
    private let state = Locked(State())
    private let now: @Sendable () -> ContinuousClock.Instant

    public init(limits: Limits = Limits(), now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.limits = limits
        self.now = now
    }

    /// Stores a body under `id`, replacing an earlier body with the same id.
    public func put(_ id: String, _ body: StoredBody) throws(Refusal) {
        guard Self.isValidID(id) else { throw .invalidID(id) }
        guard body.bytes.count <= limits.maxBodyBytes else { throw .bodyTooLarge(bytes: body.bytes.count, limit: limits.maxBodyBytes) }
        let instant = now()
        let result: Refusal? = state.withLock { state in
            Self.dropExpired(&state, at: instant)
            if let old = state.entries.removeValue(forKey: id) { state.bytes -= old.body.bytes.count }
            guard state.entries.count < limits.maxEntries else { return .tooManyBodies(limit: limits.maxEntries) }
            guard state.bytes + body.bytes.count <= limits.maxBytes else { return .storeFull(limit: limits.maxBytes) }
            state.entries[id] = Entry(body: body, expires: instant + limits.ttl)
            state.bytes += body.bytes.count
            return nil
        }
        if let result { throw result }
    }

    /// Removes and returns the body stored under `id`; nil when there is none or it expired.
    public func take(_ id: String) -> StoredBody? {
        let instant = now()
        return state.withLock { state in
            Self.dropExpired(&state, at: instant)
            guard let entry = state.entries.removeValue(forKey: id) else { return nil }
            state.bytes -= entry.body.bytes.count
            return entry.body
        }
    }

    public var count: Int { state.withLock { $0.entries.count } }
    public var bytes: Int { state.withLock { $0.bytes } }

    private static func dropExpired(_ state: inout State, at instant: ContinuousClock.Instant) {
        for (id, entry) in state.entries where entry.expires <= instant {
            state.entries.removeValue(forKey: id)
            state.bytes -= entry.body.bytes.count
        }
    }

    static func isValidID(_ id: String) -> Bool {
        (1...128).contains(id.utf8.count) && id.utf8.allSatisfy {
            ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D || $0 == 0x5F
        }
    }
}
