import Foundation
import SatchelArchive
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The few POSIX operations the store is built from, each returning a ``StoreError`` that names the path.
/// Plain system calls rather than FileManager: the store needs to know exactly which call failed with
/// which errno (a full disk is not an I/O error to retry), and where fsync happens.
enum FileSystem {
    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    static func isDirectory(_ path: String) -> Bool {
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

    static func read(_ path: String, maxBytes: Int = 16 << 20) throws(StoreError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .system("open", path) }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { posixRead(descriptor, $0.baseAddress!, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .system("read", path)
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[..<count])
            if bytes.count > maxBytes { throw .corruptState(path: path, reason: "larger than \(maxBytes) bytes") }
        }
    }

    /// Writes `bytes` to `path` atomically and durably: a temporary file beside it, flushed to stable storage
    /// (``flush(_:path:)``), rename, fsync of the folder. A crash leaves either the old file or the new one,
    /// never a mix; recovery removes the temporary (its name ends in `.tmp`).
    static func writeAtomically(_ bytes: [UInt8], to path: String, beforeRename: () -> Void = {}) throws(StoreError) {
        let temporary = path + ".\(getpid())-\(UInt32.random(in: 0...UInt32.max)).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .system("create", temporary) }
        // Closed exactly once: a descriptor number closed twice may by then belong to another thread's file.
        var open = true
        do throws(StoreError) {
            try writeAll(descriptor, bytes, path: temporary)
            try flush(descriptor, path: temporary)
            open = false
            guard close(descriptor) == 0 else { throw .system("close", temporary) }
            beforeRename()
            guard rename(temporary, path) == 0 else { throw .system("rename", temporary) }
        } catch {
            if open { close(descriptor) }
            unlink(temporary)
            throw error
        }
        try syncDirectory(parent(of: path))
    }

    /// Makes a file's data durable: `F_FULLFSYNC` on Apple platforms, where `fsync` only reaches the drive's
    /// cache, else `fsync`. The one place the store flushes a file, so state files and installed files alike
    /// get the platform's real flush.
    static func flush(_ descriptor: Int32, path: String) throws(StoreError) {
        #if canImport(Darwin)
        // Some file systems (network, FAT) refuse F_FULLFSYNC; fsync is the best they offer.
        if fcntl(descriptor, F_FULLFSYNC) == 0 { return }
        guard fsync(descriptor) == 0 else { throw .system("fcntl(F_FULLFSYNC)", path) }
        #else
        guard fsync(descriptor) == 0 else { throw .system("fsync", path) }
        #endif
    }

    static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(StoreError) {
        if let code = POSIXWrite.all(bytes, to: descriptor) { throw .system("write", path, code) }
    }

    static func writeAll(_ descriptor: Int32, _ bytes: [UInt8], path: String) throws(StoreError) {
        if let code = POSIXWrite.all(bytes, to: descriptor) { throw .system("write", path, code) }
    }

    static func syncDirectory(_ path: String) throws(StoreError) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .system("open", path) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw .system("fsync", path) }
    }

    /// Flushes every dirty page of the file system holding `path` in one call (Linux `syncfs`): far cheaper
    /// than 5,000 serial fsyncs. Elsewhere, or when syncfs is missing, falls back to ``syncEach(_:)``.
    static func syncFileSystem(containing path: String, entries: [String]) throws(StoreError) {
        #if os(Linux)
        if let syncfs = syncfsFunction {
            let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard descriptor >= 0 else { throw .system("open", path) }
            defer { close(descriptor) }
            guard syncfs(descriptor) == 0 else { throw .system("syncfs", path) }
            return
        }
        #endif
        try syncEach(entries)
    }

    /// Flushes each file and folder named (folders so that the names of what they hold are durable too).
    static func syncEach(_ entries: [String]) throws(StoreError) {
        for entry in entries {
            let descriptor = open(entry, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw .system("open", entry) }
            defer { close(descriptor) }
            try flush(descriptor, path: entry)
        }
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
            let count = buffer.withUnsafeMutableBytes { posixRead(input, $0.baseAddress!, $0.count) }
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

@inline(__always) func posixRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.read(fd, buffer, count)
    #else
    Darwin.read(fd, buffer, count)
    #endif
}

#if os(Linux)
/// `syncfs` is a GNU extension the Glibc module does not declare; look it up once at run time.
private let syncfsFunction: (@convention(c) (Int32) -> Int32)? = {
    guard let symbol = dlsym(nil, "syncfs") else { return nil }
    return unsafeBitCast(symbol, to: (@convention(c) (Int32) -> Int32).self)
}()
#endif
