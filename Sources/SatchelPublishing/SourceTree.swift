import Foundation
import SatchelArchive
import SatchelBundle
import SatchelCore
import SatchelPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file found in a source folder, ready to be hashed and packed.
public struct SourceFile: Sendable, Equatable {
    /// Where it goes in the package (NFC, checked by ``SafePath``).
    public let path: SafePath
    /// Where its bytes are read from on disk (a symlink's target when the folder holds a link).
    public let location: String
    public let size: Int64
    /// Seconds since 1970.
    public let modificationTime: Int64
}

/// Which names a pack leaves out: `.git/`, `.DS_Store` and `Thumbs.db` always, plus the caller's globs.
///
/// A glob without `/` matches a file or folder name at any depth (`*.map`, `node_modules`); a glob with `/`
/// matches the whole relative path (`drafts/*.html`); a trailing `/` limits it to folders (`tmp/`). Matching
/// is `fnmatch(3)` with `FNM_PATHNAME`, so `*` never crosses a `/`.
public struct ExcludeRules: Sendable, Equatable {
    public static let defaultGlobs = [".git/", ".DS_Store", "Thumbs.db"]
    public let globs: [String]

    public init(adding globs: [String] = []) {
        self.globs = Self.defaultGlobs + globs
    }

    public func excludes(relativePath: String, isFolder: Bool) -> Bool {
        let name = relativePath.split(separator: "/").last.map(String.init) ?? relativePath
        for glob in globs {
            var pattern = Substring(glob)
            if pattern.hasSuffix("/") {
                guard isFolder else { continue }
                pattern = pattern.dropLast()
            }
            let subject = pattern.contains("/") ? relativePath : name
            if fnmatch(String(pattern), subject, FNM_PATHNAME) == 0 { return true }
        }
        return false
    }
}

/// Lists the files of a source folder, refusing anything a package cannot hold: names that ``SafePath``
/// refuses, names that collide after NFC and case folding, symlinks that lead outside the folder, and entries
/// that are not regular files.
public enum SourceTree {
    public static func scan(root: String, excludes: ExcludeRules = ExcludeRules()) throws(PackError) -> [SourceFile] {
        var info = stat()
        guard stat(root, &info) == 0 else { throw .sourceMissing(root) }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw .sourceNotFolder(root) }
        guard let realRoot = realpath(root, nil) else { throw .sourceMissing(root) }
        let rootPath = String(cString: realRoot)
        free(realRoot)
        var walker = Walker(rootRealPath: rootPath, excludes: excludes)
        walker.visited.insert(FileIdentity(info))
        try walker.walk(folder: rootPath, relative: "")
        guard !walker.files.isEmpty else { throw .sourceEmpty(root) }
        return walker.files.sorted { $0.path < $1.path }
    }


    private struct Walker {
        let rootRealPath: String
        let excludes: ExcludeRules
        var files: [SourceFile] = []
        var visited = Set<FileIdentity>()
        var collisionKeys: [String: SafePath] = [:]

        mutating func walk(folder: String, relative: String) throws(PackError) {
            guard let directory = opendir(folder) else {
                throw .unreadable(path: relative.isEmpty ? "." : relative, errno: errno)
            }
            defer { closedir(directory) }
            var names: [String] = []
            while let item = readdir(directory) {
                let name = withUnsafeBytes(of: item.pointee.d_name) { raw -> String? in
                    let bytes = raw.prefix { $0 != 0 }
                    return UTF8Text.decode(bytes)
                }
                guard let name else {
                    throw .unsafePath(SafePathError(path: relative + "/?", reason: .invalidEncoding))
                }
                if name != ".", name != ".." { names.append(name) }
            }
            for name in names.sorted() {
                let relativePath = relative.isEmpty ? name : relative + "/" + name
                let diskPath = folder + "/" + name
                var info = stat()
                guard lstat(diskPath, &info) == 0 else { throw .unreadable(path: relativePath, errno: errno) }
                var location = diskPath
                if info.st_mode & S_IFMT == S_IFLNK {
                    guard let resolved = realpath(diskPath, nil) else { throw .brokenSymlink(path: relativePath) }
                    location = String(cString: resolved)
                    free(resolved)
                    guard location == rootRealPath || location.hasPrefix(rootRealPath + "/") else {
                        throw .symlinkEscapes(path: relativePath, target: location)
                    }
                    guard stat(location, &info) == 0 else { throw .brokenSymlink(path: relativePath) }
                }
                switch info.st_mode & S_IFMT {
                case S_IFDIR:
                    if excludes.excludes(relativePath: relativePath, isFolder: true) { continue }
                    // A symlink back up the tree would loop forever; each real folder is walked once.
                    guard visited.insert(FileIdentity(info)).inserted else {
                        throw .symlinkLoop(path: relativePath)
                    }
                    try walk(folder: location, relative: relativePath)
                case S_IFREG:
                    if excludes.excludes(relativePath: relativePath, isFolder: false) { continue }
                    try add(relativePath: relativePath, location: location, info: info)
                default:
                    if excludes.excludes(relativePath: relativePath, isFolder: false) { continue }
                    throw .notRegularFile(path: relativePath)
                }
            }
        }

        mutating func add(relativePath: String, location: String, info: stat) throws(PackError) {
            let path: SafePath
            do { path = try SafePath(normalizing: relativePath) } catch { throw .unsafePath(error) }
            if path.segments.count == 1, Manifest.reservedRootNames.contains(path.value) {
                throw .reservedName(path: path.value)
            }
            if let other = collisionKeys.updateValue(path, forKey: path.collisionKey) {
                throw .pathCollision(other.value, path.value)
            }
            let seconds = FileTimes.modifiedSeconds(info)
            files.append(SourceFile(path: path, location: location, size: Int64(info.st_size), modificationTime: seconds))
        }
    }
}
