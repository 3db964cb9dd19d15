import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The files under `root` (relative paths, sorted) on which some open file description holds an `flock`, this
/// process's included: each file is opened anew and its lock tried without waiting. flock locks belong to the open
/// file description, so a lock the store holds through its own descriptor conflicts with this one even in the same
/// process (tests assert that on a held pin before they trust an empty answer). What iOS checks at suspension
/// (0xdead10cc) is exactly such a lock on a file in a shared container.
public func lockedFiles(under root: String) -> [String] {
    var locked: [String] = []
    let enumerator = FileManager.default.enumerator(atPath: root)
    while let path = enumerator?.nextObject() as? String {
        var info = stat()
        guard lstat(root + "/" + path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
        let descriptor = open(root + "/" + path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { continue }
        // Closing drops the lock this took, if it took one.
        defer { close(descriptor) }
        if flock(descriptor, LOCK_EX | LOCK_NB) != 0, errno == EWOULDBLOCK { locked.append(path) }
    }
    return locked.sorted()
}
