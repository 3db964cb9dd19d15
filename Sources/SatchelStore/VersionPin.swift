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
///
/// While its app may be suspended the pin holds no lock (iOS ends an app suspended with a file lock in a shared
/// container, decision 0037): ``suspend(until:)`` first appends a lease line, `suspended until <ms since 1970>`, then
/// lets go of the lock, and a pin file whose lock is free is a dead process's only once its lease has ended.
/// ``resume(folder:)`` takes the lock back, or, when another process swept the pin meanwhile, pins again what is still
/// the folder it pinned.
public final class VersionPin: Sendable {
    /// The pin file (another name after a pin swept while suspended is made again).
    public var path: String { state.withLock { $0.path } }
    private let state: Locked<State>

    private struct State {
        var path: String
        /// The pin file's descriptor; -1 once released. While suspended it stays open without a lock: an open file
        /// is no reason for iOS to end a suspended app, and it tells resume whether the file at `path` is still this one.
        var descriptor: Int32
        var held: Held
        /// The versions pinned and the identity their folder had when pinned.
        var versions: [PackageID: Pinned]
        /// The bytes of the `id version` lines, which the lease line follows.
        var linesLength: Int
    }

    enum Held: Equatable {
        case locked, suspended, released
    }

    struct Pinned: Equatable {
        let version: SemanticVersion
        /// The version folder's stamp when pinned; nil when there was none (the version has no folder, so nothing of
        /// it can be lost).
        let folder: String?
        let identity: FolderStamp?
    }

    /// A version folder as it was when pinned: its device and inode, and its change time. A version folder removed and
    /// installed again under the same number is another folder, whose files the engine has not indexed; the file
    /// system may give it the inode the removed one had (seen in tests), never the same change time, since creating it
    /// sets one. Nothing changes an installed version's folder afterwards.
    struct FolderStamp: Equatable {
        let file: FileIdentity
        let changed: Int64
    }

    /// A file's device and inode (SatchelPlatform's ``FileIdentity``), nil when nothing is at `path`.
    static func identity(of path: String) -> FileIdentity? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileIdentity(info)
    }

    /// A folder's ``FolderStamp``, nil when nothing is at `path`.
    static func stamp(of path: String) -> FolderStamp? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FolderStamp(file: FileIdentity(info), changed: FileTimes.changed(info))
    }

    /// The line that keeps a pin whose lock is free: three words, so that runtimes from before it, which read lines of
    /// exactly two, ignore it.
    static func leaseLine(until: Int64) -> String { "suspended until \(until)\n" }

    /// Pins `versions` (with `folders`, the version folders, remembered by identity) in a new file in `folder`. With
    /// `suspendedUntil`, the pin is made as a suspended one: written with its lease, and its lock let go at once.
    init(
        folder: String, versions: [PackageID: SemanticVersion], folders: [PackageID: String] = [:], suspendedUntil: Int64? = nil
    ) throws(StoreError) {
        let pinned = Dictionary(uniqueKeysWithValues: versions.map { id, version in
            (id, Pinned(version: version, folder: folders[id], identity: folders[id].flatMap { Self.stamp(of: $0) }))
        })
        let (path, descriptor, length) = try Self.create(in: folder, pinned, suspendedUntil: suspendedUntil)
        state = Locked(State(
            path: path, descriptor: descriptor, held: suspendedUntil == nil ? .locked : .suspended, versions: pinned, linesLength: length))
    }

    /// Creates a locked, written pin file under a temporary name and renames it to its `.pin` name; with
    /// `suspendedUntil`, the lease line is written too and the lock let go after the rename.
    private static func create(
        in folder: String, _ versions: [PackageID: Pinned], suspendedUntil: Int64?
    ) throws(StoreError) -> (path: String, descriptor: Int32, linesLength: Int) {
        try FileSystem.makeDirectory(folder)
        let name = FileSystem.randomName("engine")
        let temporary = folder + "/" + name + ".pin.tmp"
        let descriptor = open(temporary, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .system("create", temporary) }
        let lines = Array(versions.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value.version)\n" }.joined().utf8)
        do throws(StoreError) {
            if let code = FileLock.lock(descriptor, .exclusive) { throw .system("flock", temporary, code) }
            try FileSystem.writeAll(descriptor, lines + Array((suspendedUntil.map(leaseLine) ?? "").utf8), path: temporary)
            guard rename(temporary, folder + "/" + name + ".pin") == 0 else { throw .system("rename", temporary) }
        } catch {
            unlink(temporary)
            close(descriptor)
            throw error
        }
        if suspendedUntil != nil { FileLock.unlock(descriptor) }
        return (folder + "/" + name + ".pin", descriptor, lines.count)
    }

    /// Whether the pin let go of its lock for a suspension and has not taken it back.
    var isSuspended: Bool { state.withLock { $0.held == .suspended } }

    /// The versions pinned.
    var versions: [PackageID: SemanticVersion] { state.withLock { $0.versions.mapValues(\.version) } }

    /// Ends the pin. Also happens when the pin is deinitialised or the process exits.
    public func release() {
        state.withLock { state in
            unlink(state.path)
            if state.descriptor >= 0, state.held == .locked { FileLock.unlock(state.descriptor) }
            state.held = .released
        }
    }

    deinit {
        release()
        state.withLock { state in
            if state.descriptor >= 0 { close(state.descriptor) }
            state.descriptor = -1
        }
    }

    /// What ``suspend(until:)`` did.
    enum Suspension: Equatable {
        /// The lock was let go, the lease written first; or the lease could not be written (the error): the lock was
        /// let go all the same (a lock held into the suspension ends the app), and the pin keeps nothing meanwhile.
        case suspended(unprotected: StoreError?)
        /// Not locked: suspended already, or released.
        case notHeld
    }

    /// Appends the lease line, then lets go of the lock. Needs no pin lock: a sweeper that finds the lock free (it
    /// tries it before it reads) reads the lease, written before the lock was let go.
    func suspend(until: Int64) -> Suspension {
        state.withLock { state in
            guard state.held == .locked else { return .notHeld }
            var failure: StoreError?
            let line = Array(Self.leaseLine(until: until).utf8)
            if let code = line.withUnsafeBytes({ POSIXIO.writeAll($0, to: state.descriptor, at: Int64(state.linesLength)) }) {
                failure = .system("write", state.path, code)
            }
            FileLock.unlock(state.descriptor)
            state.held = .suspended
            return .suspended(unprotected: failure)
        }
    }

    /// What ``resume(folder:)`` found.
    enum Resumption: Equatable {
        /// The file was as the pin left it: locked again, its lease line cut off.
        case held
        /// Another process swept the file after its lease ended. Versions whose folder is still the one pinned are
        /// pinned again in a new file (none when `lost` is all of them: the pin is then released); `lost` are not.
        case swept(repinned: Bool, lost: [PackageID: SemanticVersion])
        case notSuspended
    }

    /// Takes the lock back. The caller holds the pin lock, which every sweep holds too: a pin file still here and still
    /// this file (same device and inode as the open descriptor) was found live by every sweep so far, so no version
    /// it pins was deleted; one that is gone may have taken its versions with it, and only folders that are still the
    /// ones pinned are pinned again.
    func resume(folder: String) throws(StoreError) -> Resumption {
        try state.withLock { state in Result { () throws(StoreError) in try Self.resume(&state, folder: folder) } }.get()
    }

    private static func resume(_ state: inout State, folder: String) throws(StoreError) -> Resumption {
        guard state.held == .suspended else { return .notSuspended }
        var info = stat()
        if fstat(state.descriptor, &info) == 0, info.st_nlink > 0, identity(of: state.path) == FileIdentity(info) {
            if let code = FileLock.lock(state.descriptor, .exclusive) { throw .system("flock", state.path, code) }
            // Locked again, the lease line is only in the way: cut off, a pin left by a crash is a dead process's at once.
            // Failing to cut it costs nothing but time: the lease outlives this process by at most its length.
            _ = ftruncate(state.descriptor, off_t(state.linesLength))
            state.held = .locked
            return .held
        }
        var kept: [PackageID: Pinned] = [:]
        var lost: [PackageID: SemanticVersion] = [:]
        for (id, pinned) in state.versions {
            if pinned.identity == nil || pinned.folder.flatMap({ stamp(of: $0) }) == pinned.identity {
                kept[id] = pinned
            } else {
                lost[id] = pinned.version
            }
        }
        close(state.descriptor)
        state.descriptor = -1
        guard !kept.isEmpty else {
            state.held = .released
            state.versions = [:]
            return .swept(repinned: false, lost: lost)
        }
        let (path, descriptor, length) = try create(in: folder, kept, suspendedUntil: nil)
        state = State(path: path, descriptor: descriptor, held: .locked, versions: kept, linesLength: length)
        return .swept(repinned: true, lost: lost)
    }

    /// The versions of a live pin; nil (after deleting the file) when its owner is gone: its lock is free and it has no
    /// lease that ends after `now` (milliseconds since 1970).
    static func readIfHeld(_ path: String, now: Int64) -> [(PackageID, SemanticVersion)]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        let free = FileLock.tryLock(descriptor, .shared)
        guard let bytes = try? FileSystem.read(path, maxBytes: DocumentLimits.pinFile) else {
            if free { unlink(path) }
            return nil
        }
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n")
        if free {
            let lease = lines.lazy.compactMap { line -> Int64? in
                let words = line.split(separator: " ")
                return words.count == 3 && words[0] == "suspended" && words[1] == "until" ? Int64(words[2]) : nil
            }.first
            guard let lease, now < lease else {
                unlink(path)
                return nil
            }
        }
        return lines.compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 2, let id = try? PackageID(String(parts[0])), let version = try? SemanticVersion(String(parts[1])) else { return nil }
            return (id, version)
        }
    }
}
