import SatchelCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Keeps small files' bytes in memory after their first read, so hot assets (the 4 KB modules and icons a
/// page loads again and again) cost no system call. Keys stand for files inside version folders, which never
/// change content, so entries never go stale. Bounded in bytes; the oldest entries go first.
final class SmallFileCache: Sendable {
    private struct State {
        var entries: [Int: [UInt8]] = [:]
        var order: [Int] = []
        var head = 0
        var bytes = 0
    }

    private let state = Locked(State())
    let maxFileSize: Int
    let maxBytes: Int

    init(maxFileSize: Int, maxBytes: Int) {
        self.maxFileSize = maxFileSize
        self.maxBytes = maxBytes
    }

    /// The file's bytes (`size` bytes at `offset` of the file at `path`), from memory or read now; nil when it is
    /// too large to cache or cannot be read.
    func bytes(for key: Int, at path: String, offset: Int64 = 0, size: Int64) -> [UInt8]? {
        guard size <= Int64(maxFileSize), maxBytes > 0 else { return nil }
        if let cached = state.withLock({ $0.entries[key] }) { return cached }
        guard let bytes = Self.read(path, offset: offset, size: Int(size)) else { return nil }
        store(bytes, for: key)
        return bytes
    }

    /// The same for bytes that `load` produces (a file decoded by its source). Unlike the path form, this always
    /// answers when `load` does: a file too large for the cache, or a cache turned off, is loaded and not kept.
    func bytes(for key: Int, size: Int64, load: () -> [UInt8]?) -> [UInt8]? {
        let cacheable = size <= Int64(maxFileSize) && maxBytes > 0
        if cacheable, let cached = state.withLock({ $0.entries[key] }) { return cached }
        guard let bytes = load() else { return nil }
        if cacheable { store(bytes, for: key) }
        return bytes
    }

    private func store(_ bytes: [UInt8], for key: Int) {
        state.withLock { state in
            guard state.entries[key] == nil else { return }
            while state.bytes + bytes.count > maxBytes, state.head < state.order.count {
                let oldest = state.order[state.head]
                state.head += 1
                state.bytes -= state.entries.removeValue(forKey: oldest)?.count ?? 0
            }
            if state.head > 1024, state.head * 2 > state.order.count {
                state.order.removeFirst(state.head)
                state.head = 0
            }
            if state.bytes + bytes.count <= maxBytes {
                state.entries[key] = bytes
                state.order.append(key)
                state.bytes += bytes.count
            }
        }
    }

    private static func read(_ path: String, offset: Int64, size: Int) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: size)
        var done = 0
        while done < size {
            let got = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + done, size - done, off_t(offset) + off_t(done)) }
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { return nil }
            done += got
        }
        return bytes
    }
}
