import Foundation
import SatchelCore

/// The latest requests and how each was answered, for the status page.
public final class RequestLog: Sendable {
    public struct Entry: Sendable, Codable, Equatable {
        public var time: String
        public var method: String
        public var url: String
        public var status: Int
        /// offline-hit, not-modified, range, network, package-after-network-failure, offline-page, satchel, published, error
        public var outcome: String
        /// The channel that restored the request's body, if any.
        public var bodyChannel: String?
        public var milliseconds: Double
    }

    private let entries = Locked([Entry]())
    public let capacity: Int

    public init(capacity: Int = 200) { self.capacity = capacity }

    func record(_ entry: Entry) {
        entries.withLock { list in
            list.append(entry)
            if list.count > capacity { list.removeFirst(list.count - capacity) }
        }
    }

    /// Newest first.
    public var recent: [Entry] { entries.withLock { $0.reversed() } }
}
