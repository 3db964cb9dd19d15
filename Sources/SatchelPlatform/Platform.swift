#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The one home of every call whose spelling or meaning differs between Linux and Apple platforms (file times,
// the raw read and write calls, flushing to the drive, syncfs, advisory locks). Every other module calls these,
// so a platform difference is decided once, here. Nothing on this machine compiles the Darwin branches below: this
// file is what a Mac must build first (docs/testing.md, "What still needs a Mac").

/// A failed call's errno, as an error a `Result` can carry.
package struct Errno: Error, Equatable, Sendable {
    package let rawValue: Int32
    package init(_ rawValue: Int32) { self.rawValue = rawValue }
}

/// Modification and change times of a `stat` result, in nanoseconds since 1970 (Linux: `st_mtim`, Darwin:
/// `st_mtimespec`).
package enum FileTimes {
    package static func modified(_ info: stat) -> Int64 {
        #if canImport(Darwin)
        nanoseconds(info.st_mtimespec)
        #else
        nanoseconds(info.st_mtim)
        #endif
    }

    /// The inode change time: moves whenever the file is replaced or its metadata changes.
    package static func changed(_ info: stat) -> Int64 {
        #if canImport(Darwin)
        nanoseconds(info.st_ctimespec)
        #else
        nanoseconds(info.st_ctim)
        #endif
    }

    /// Whole seconds of ``modified(_:)``.
    package static func modifiedSeconds(_ info: stat) -> Int64 {
        #if canImport(Darwin)
        Int64(info.st_mtimespec.tv_sec)
        #else
        Int64(info.st_mtim.tv_sec)
        #endif
    }

    private static func nanoseconds(_ time: timespec) -> Int64 { Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec) }
}

/// The raw descriptor calls, named once (Glibc and Darwin both export them, so an unqualified call is ambiguous in a
/// file that also imports Foundation's wrappers), and the loops every writer needs.
package enum POSIXIO {
    @inline(__always) package static func read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
        #if canImport(Glibc)
        Glibc.read(fd, buffer, count)
        #else
        Darwin.read(fd, buffer, count)
        #endif
    }

    @inline(__always) package static func pread(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, _ offset: Int64) -> Int {
        #if canImport(Glibc)
        Glibc.pread(fd, buffer, count, off_t(offset))
        #else
        Darwin.pread(fd, buffer, count, off_t(offset))
        #endif
    }

    @inline(__always) package static func write(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Glibc)
        Glibc.write(fd, pointer, count)
        #else
        Darwin.write(fd, pointer, count)
        #endif
    }

    @inline(__always) package static func pwrite(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int, _ offset: Int64) -> Int {
        #if canImport(Glibc)
        Glibc.pwrite(fd, pointer, count, off_t(offset))
        #else
        Darwin.pwrite(fd, pointer, count, off_t(offset))
        #endif
    }

    @inline(__always) @discardableResult package static func close(_ fd: Int32) -> Int32 {
        #if canImport(Glibc)
        Glibc.close(fd)
        #else
        Darwin.close(fd)
        #endif
    }

    /// Writes all of `bytes`: `write(2)` may write less than asked or be interrupted, so it loops until every byte is
    /// out. Each caller turns the errno into its own error, naming its own path.
    /// - Returns: nil when every byte was written, else the errno of the call that failed.
    package static func writeAll(_ bytes: UnsafeRawBufferPointer, to fd: Int32) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let written = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            offset += written
        }
        return nil
    }

    package static func writeAll(_ bytes: [UInt8], to fd: Int32) -> Int32? {
        bytes.withUnsafeBytes { writeAll($0, to: fd) }
    }

    /// Writes all of `bytes` at `offset`, looping as ``writeAll(_:to:)`` does.
    package static func writeAll(_ bytes: UnsafeRawBufferPointer, to fd: Int32, at offset: Int64) -> Int32? {
        var done = 0
        while done < bytes.count {
            let written = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, offset + Int64(done))
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            done += written
        }
        return nil
    }

    /// Fills `buffer` from `offset`, looping over short reads (in a debug build, counted by ``ReadMeter`` for the tests
    /// that measure what a bundle's open reads).
    /// - Returns: the bytes read (fewer than asked only at the end of the file), or the errno as a failure.
    package static func readFully(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Result<Int, Errno> {
        var done = 0
        while done < buffer.count {
            let got = pread(fd, buffer.baseAddress! + done, buffer.count - done, offset + Int64(done))
            if got < 0 {
                if errno == EINTR { continue }
                return .failure(Errno(errno))
            }
            if got == 0 { break }
            done += got
        }
        ReadMeter.note(fd, done)
        return .success(done)
    }
}

/// How data reaches stable storage.
///
/// Linux: `fsync` reaches the drive. Apple platforms: `fsync` only hands the data to the drive, which may keep it in
/// its volatile cache; `F_FULLFSYNC` also flushes that cache (the whole drive's, so it is slow and one call covers
/// everything written before it), and `F_BARRIERFSYNC` orders the writes before it ahead of those after it without a
/// flush. Apple's guidance for durable replacement: each file's data with `fsync` or `F_BARRIERFSYNC`, then one
/// `F_FULLFSYNC` before the step that makes it visible. The store follows that (docs/decisions/0030-device-side-on-zlib.md).
package enum Durability {
    /// Hands a file's data to the drive, ordered before what follows (Linux: fsync; Apple: F_BARRIERFSYNC, else
    /// fsync on file systems that refuse it).
    /// - Returns: nil, or the errno of the failed call.
    package static func flushData(_ fd: Int32) -> Int32? {
        #if canImport(Darwin)
        if fcntl(fd, F_BARRIERFSYNC) == 0 { return nil }
        #endif
        return fsync(fd) == 0 ? nil : errno
    }

    /// Makes everything written so far durable on the drive itself (Linux: fsync; Apple: F_FULLFSYNC, else fsync on
    /// file systems that refuse it, such as network and FAT volumes).
    package static func flushToMedia(_ fd: Int32) -> Int32? {
        #if canImport(Darwin)
        if fcntl(fd, F_FULLFSYNC) == 0 { return nil }
        #endif
        return fsync(fd) == 0 ? nil : errno
    }

    /// The name of the call ``flushToMedia(_:)`` makes, for error messages.
    package static var flushToMediaCall: String {
        #if canImport(Darwin)
        "fcntl(F_FULLFSYNC)"
        #else
        "fsync"
        #endif
    }

    /// Flushes every dirty page of the file system holding `fd` in one call (Linux `syncfs`), far cheaper than
    /// thousands of serial fsyncs.
    /// - Returns: nil where there is no such call (Apple platforms; a C library without syncfs); else the result:
    ///   0 on success, an errno on failure.
    package static func syncFileSystem(_ fd: Int32) -> Int32? {
        #if os(Linux)
        guard let syncfs = syncfsFunction else { return nil }
        return syncfs(fd) == 0 ? 0 : errno
        #else
        return nil
        #endif
    }
}

#if os(Linux)
/// `syncfs` is a GNU extension the Glibc module does not declare; looked up once at run time.
private let syncfsFunction: (@convention(c) (Int32) -> Int32)? = {
    guard let symbol = dlsym(nil, "syncfs") else { return nil }
    return unsafeBitCast(symbol, to: (@convention(c) (Int32) -> Int32).self)
}()
#endif

/// Advisory whole-file locks (`flock`, the same call on Linux and Apple platforms): released by the kernel when the
/// holder's descriptor closes or its process dies.
package enum FileLock {
    package enum Mode: Sendable {
        case shared, exclusive

        var operation: Int32 {
            switch self {
            case .shared: LOCK_SH
            case .exclusive: LOCK_EX
            }
        }
    }

    /// Waits for the lock (retrying when a signal interrupts the wait).
    /// - Returns: nil, or the errno of the failed call.
    package static func lock(_ fd: Int32, _ mode: Mode) -> Int32? {
        while flock(fd, mode.operation) != 0 {
            if errno == EINTR { continue }
            return errno
        }
        return nil
    }

    /// Takes the lock only if it is free now.
    package static func tryLock(_ fd: Int32, _ mode: Mode) -> Bool { flock(fd, mode.operation | LOCK_NB) == 0 }

    package static func unlock(_ fd: Int32) { flock(fd, LOCK_UN) }
}
