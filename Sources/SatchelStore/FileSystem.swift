import Foundation
import SatchelCore
import SatchelPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The few POSIX operations the store is built from, each returning a ``StoreError`` that names the path.
/// Plain system calls rather than FileManager: the store needs to know exactly which call failed with
/// which errno (a full disk is not an I/O error to retry), and where fsync happens.
enum FileSystem {
    static func exists(_ path: String) -> Bool {
        FaultInjection.accessed(path)
        return access(path, F_OK) == 0
    }

    static func isDirectory(_ path: String) -> Bool {
        FaultInjection.accessed(path)
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    static func makeDirectory(_ path: String) throws(StoreError) {
        if mkdir(path, 0o755) != 0, errno != EEXIST { throw .system("mkdir", path) }
    }

    static func makeDirectories(_ path: String) throws(StoreError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            prefix += "/" + part
            try makeDirectory(prefix)
        }
    }

    /// Names in a folder, without `.` and `..`; empty when the folder does not exist.
    static func list(_ path: String) -> [String] {
        FaultInjection.accessed(path)
        guard let directory = opendir(path) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let item = readdir(directory) {
            let name = withUnsafeBytes(of: item.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    static func read(_ path: String, maxBytes: Int = DocumentLimits.storeState) throws(StoreError) -> [UInt8] {
        FaultInjection.accessed(path)
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .system("open", path) }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { POSIXIO.read(descriptor, $0.baseAddress!, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .system("read", path)
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[..<count])
            if bytes.count > maxBytes { throw .corruptState(path: path, reason: "larger than \(maxBytes) bytes") }
        }
    }

    /// Writes `bytes` to `path` atomically and durably: a temporary file, flushed to stable storage
    /// (``flush(_:path:)``), rename, fsync of the folder. A crash leaves either the old file or the new one,
    /// never a mix; recovery removes the temporary (its name ends in `.tmp`). The temporary is beside the target, or in
    /// `temporaryFolder` (on the same file system) when recovery should find it without looking beside every target.
    /// Without `flush`, only atomic: a cache that may be lost, never torn.
    static func writeAtomically(
        _ bytes: [UInt8], to path: String, temporaryFolder: String? = nil, flush durable: Bool = true, beforeRename: () -> Void = {}
    ) throws(StoreError) {
        let beside = temporaryFolder.map { $0 + "/" + path.split(separator: "/").last.map(String.init)! } ?? path
        let temporary = beside + ".\(getpid())-\(UInt32.random(in: 0...UInt32.max)).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .system("create", temporary) }
        // Closed exactly once: a descriptor number closed twice may by then belong to another thread's file.
        var open = true
        do throws(StoreError) {
            try writeAll(descriptor, bytes, path: temporary)
            if durable { try flush(descriptor, path: temporary) }
            open = false
            guard close(descriptor) == 0 else { throw .system("close", temporary) }
            beforeRename()
            guard rename(temporary, path) == 0 else { throw .system("rename", temporary) }
        } catch {
            if open { close(descriptor) }
            unlink(temporary)
            throw error
        }
        if durable { try syncDirectory(parent(of: path)) }
    }

    /// Makes a file's data durable on the drive itself (``Durability/flushToMedia(_:)``: `F_FULLFSYNC` on Apple
    /// platforms, where `fsync` only reaches the drive's cache). For the switch that makes an install visible (the
    /// state file) and for files written one at a time.
    static func flush(_ descriptor: Int32, path: String) throws(StoreError) {
        if let code = Durability.flushToMedia(descriptor) { throw .system(Durability.flushToMediaCall, path, code) }
    }

    static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(StoreError) {
        if let code = POSIXIO.writeAll(bytes, to: descriptor) { throw .system("write", path, code) }
    }

    static func writeAll(_ descriptor: Int32, _ bytes: [UInt8], path: String) throws(StoreError) {
        if let code = POSIXIO.writeAll(bytes, to: descriptor) { throw .system("write", path, code) }
    }

    static func syncDirectory(_ path: String) throws(StoreError) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .system("open", path) }
        defer { close(descriptor) }
        if let code = Durability.flushData(descriptor) { throw .system("fsync", path, code) }
    }

    /// Makes a staged tree durable before it is renamed into place. Linux: one `syncfs` of the file system holding
    /// `path`, far cheaper than 5,000 serial fsyncs. Elsewhere (Apple platforms, or a C library without syncfs), as
    /// Apple documents: each file's and folder's data handed to the drive in order (`F_BARRIERFSYNC`, or `fsync`),
    /// then one `F_FULLFSYNC`, which empties the drive's cache of all of it, before the rename (decision 0030).
    static func syncFileSystem(containing path: String, entries: [String]) throws(StoreError) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .system("open", path) }
        defer { close(descriptor) }
        if let result = Durability.syncFileSystem(descriptor) {
            guard result == 0 else { throw .system("syncfs", path, result) }
            return
        }
        try syncEach(entries, thenFlush: descriptor, path: path)
    }

    /// The path without syncfs: each entry's data handed to the drive in order, then one flush to the media through
    /// `folder` (any descriptor on the volume: the drive's whole cache is emptied).
    static func syncEach(_ entries: [String], thenFlush folder: Int32, path: String) throws(StoreError) {
        for entry in entries {
            let file = open(entry, O_RDONLY | O_CLOEXEC)
            guard file >= 0 else { throw .system("open", entry) }
            defer { close(file) }
            if let code = Durability.flushData(file) { throw .system("fsync", entry, code) }
        }
        try flush(folder, path: path)
    }

    /// Hard-links `source` to `destination`, or copies it where links are impossible (another file system,
    /// a link-count limit, a file system without links). Returns true for a link.
    static func linkOrCopy(_ source: String, to destination: String) throws(StoreError) -> Bool {
        if link(source, destination) == 0 { return true }
        let code = errno
        guard [EXDEV, EPERM, EMLINK, ENOTSUP, EOPNOTSUPP].contains(code) else { throw .system("link", destination, code) }
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw .system("open", source) }
        defer { close(input) }
        let output = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard output >= 0 else { throw .system("create", destination) }
        defer { close(output) }
        var buffer = [UInt8](repeating: 0, count: 256 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { POSIXIO.read(input, $0.baseAddress!, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .system("read", source)
            }
            if count == 0 { return false }
            try writeAll(output, Array(buffer[..<count]), path: destination)
        }
    }

    /// Removes a file or a whole tree. Missing paths are fine.
    static func removeTree(_ path: String) throws(StoreError) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if info.st_mode & S_IFMT == S_IFDIR {
            for name in list(path) { try removeTree(path + "/" + name) }
            guard rmdir(path) == 0 || errno == ENOENT else { throw .system("rmdir", path) }
        } else {
            guard unlink(path) == 0 || errno == ENOENT else { throw .system("unlink", path) }
        }
    }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    static func randomName(_ prefix: String) -> String {
        "\(prefix)-\(getpid())-\(String(UInt64.random(in: 0...UInt64.max), radix: 36))"
    }
}
