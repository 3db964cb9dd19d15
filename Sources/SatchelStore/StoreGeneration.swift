#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The store's change counter, `<store>/generation` (docs/formats.md, "Store layout"): a file whose length is the
/// counter. Its one `stat` tells a reader whether anything under `packages/` changed, whatever the number of packages.
///
/// The length, not the contents or a time: one `stat` reads it without opening the file; it only ever grows, so two
/// different moments never show the same value (a modification time is only as fine as the kernel's clock tick, and
/// a replaced file's inode may come back); and growing it with `ftruncate` adds a hole, so the file takes no space.
///
/// A change is bracketed: the writer makes the counter odd before the first thing it changes and even after the last,
/// both under the store lock. A reader that sees an odd counter does not trust it and looks at every package (the
/// token from before the counter). So a writer killed between its change and its closing bump leaves the counter odd,
/// and the change is seen by the per-package look, until the next open of the store (which recovers, under the lock)
/// makes it even. Nothing is flushed: the counter only speaks to processes running now; after a power loss every
/// engine starts afresh and reads the states themselves.
struct StoreGeneration: Sendable {
    let path: String

    /// The file's inode and length; nil when it is missing (a store no runtime with the counter has opened since the
    /// file was deleted), which readers treat as an odd counter.
    func read() -> (inode: Int64, value: Int64)? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return (Int64(bitPattern: UInt64(info.st_ino)), Int64(info.st_size))
    }

    /// Marks a change as begun: the next odd value (a counter left odd by a writer that died moves on by two, so a
    /// reader that saw it odd sees it move).
    func begin() throws(StoreError) { try advance { $0 % 2 == 0 ? $0 + 1 : $0 + 2 } }

    /// Marks the changes as finished: the next even value.
    func end() throws(StoreError) { try advance { $0 % 2 == 0 ? $0 + 2 : $0 + 1 } }

    /// Whether a change was begun and not finished (a writer died, or one is at work now).
    var isOdd: Bool { (read()?.value ?? 1) % 2 == 1 }

    private func advance(_ next: (Int64) -> Int64) throws(StoreError) {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .system("open", path) }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw .system("fstat", path) }
        guard ftruncate(descriptor, off_t(next(Int64(info.st_size)))) == 0 else { throw .system("ftruncate", path) }
    }
}
