import Foundation
import SatchelCore
import SatchelPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A running engine's claim on the versions it serves (`pins/<random>.pin`, one `id version` line each).
/// The file is held with an exclusive flock for the pin's lifetime; a pin file whose lock can be taken
/// belongs to a process that is gone, and is deleted.
///
/// A pin file appears under its `.pin` name only once it is locked and written: it is created as a temporary,
/// locked, filled and then renamed. (Created under its final name, it could be found unlocked between `open` and
/// `flock`, taken for a dead process's pin and deleted, leaving its versions unprotected.)
public final class VersionPin: Sendable {
    public let path: String
    private let descriptor: Int32

    init(folder: String, versions: [PackageID: SemanticVersion]) throws(StoreError) {
        try FileSystem.makeDirectory(folder)
        let name = FileSystem.randomName("engine")
        let temporary = folder + "/" + name + ".pin.tmp"
        let descriptor = open(temporary, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .system("create", temporary) }
        do throws(StoreError) {
            if let code = FileLock.lock(descriptor, .exclusive) { throw .system("flock", temporary, code) }
            let text = versions.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)\n" }.joined()
            try FileSystem.writeAll(descriptor, Array(text.utf8), path: temporary)
            guard rename(temporary, folder + "/" + name + ".pin") == 0 else { throw .system("rename", temporary) }
        } catch {
            unlink(temporary)
            close(descriptor)
            throw error
        }
        path = folder + "/" + name + ".pin"
        self.descriptor = descriptor
    }

    /// Ends the pin. Also happens when the pin is deinitialised or the process exits.
    public func release() {
        unlink(path)
        FileLock.unlock(descriptor)
    }

    deinit {
        release()
        close(descriptor)
    }

    /// The versions of a live pin; nil (after deleting the file) when its owner is gone.
    static func readIfHeld(_ path: String) -> [(PackageID, SemanticVersion)]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        if FileLock.tryLock(descriptor, .shared) {
            unlink(path)
            return nil
        }
        guard let bytes = try? FileSystem.read(path, maxBytes: 1 << 20) else { return nil }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 2, let id = try? PackageID(String(parts[0])), let version = try? SemanticVersion(String(parts[1])) else { return nil }
            return (id, version)
        }
    }
}
