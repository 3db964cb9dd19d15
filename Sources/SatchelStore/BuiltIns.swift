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

/// A read-only bundle shipped with the app and served straight from its archive: the floor under its package.
public struct BuiltInPackage: Sendable {
    public let bundle: InPlaceBundle
    public var id: PackageID { bundle.manifest.id }
    public var version: SemanticVersion { bundle.manifest.version }
    public var manifest: Manifest { bundle.manifest }
    /// Whether this launch hashed every file (false: a record of an earlier full verification was trusted).
    public let verifiedNow: Bool
}

/// A built-in bundle the store would not serve, and why. Refusals are reported (``PackageStore/builtInRefusals``,
/// `satchel check`, a warning from every command), never thrown: the app keeps being served from what is valid.
public struct BuiltInRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Problem: Equatable, Sendable {
        case unreadable(operation: String, errno: Int32)
        case invalid(BundleError)
        /// Another built-in of the same package, newer, is used instead.
        case superseded(by: String)
        case scopeConflict(otherID: String, host: String, pathPrefix: String)
    }

    /// The bundle file (or the folder that was to hold bundles).
    public let bundle: String
    /// The package, when the manifest could be read.
    public let id: String?
    public let version: String?
    public let problem: Problem

    public var description: String {
        let what = id.map { " (\($0) \(version ?? "?"))" } ?? ""
        let why: String
        switch problem {
        case .unreadable(let operation, let code): why = "\(operation) failed: \(String(cString: strerror(code)))"
        case .invalid(let error): why = "\(error)"
        case .superseded(let other): why = "another built-in of the same package is newer: \(other)"
        case .scopeConflict(let other, let host, let prefix): why = "it claims host \(host) with prefix \(prefix), which package \(other) already claims"
        }
        return "built-in bundle \(bundle)\(what) refused: \(why)"
    }
}

/// Finding, checking and verifying the configured built-in bundles when a store opens.
///
/// A built-in's structure, manifest and signature are checked at every open (a central directory, one manifest,
/// one Ed25519 verification: milliseconds). Hashing every file is done once per bundle: the result is recorded in
/// `builtins/<id>.json`, keyed by the bundle's identity (path, size, inode, device, modification and change
/// times, the manifest's SHA-256 and a digest of the zip directory), so later launches start without reading the
/// files. A bundle replaced or touched in any of those ways is verified again. Only successes are recorded: a
/// refused bundle is checked again next time (a read error must not become a permanent refusal).
enum BuiltIns {
    struct Loaded {
        var packages: [PackageID: BuiltInPackage] = [:]
        var refusals: [BuiltInRefusal] = []
    }

    /// Must run under the store lock: it may write verification records.
    static func load(_ paths: [String], configuration: StoreConfiguration, layout: StoreLayout) throws(StoreError) -> Loaded {
        var loaded = Loaded()
        var candidates: [BuiltInPackage] = []
        for file in expand(paths, refusals: &loaded.refusals) {
            do throws(BuiltInRefusal) {
                candidates.append(try open(file, configuration: configuration, layout: layout))
            } catch {
                loaded.refusals.append(error)
            }
        }
        // One built-in per package: the newest; then no two packages may claim one host and prefix.
        var byID: [PackageID: BuiltInPackage] = [:]
        for candidate in candidates {
            if let other = byID[candidate.id] {
                let (kept, dropped) = candidate.version > other.version ? (candidate, other) : (other, candidate)
                byID[candidate.id] = kept
                loaded.refusals.append(refusal(dropped.bundle, .superseded(by: kept.bundle.path)))
            } else {
                byID[candidate.id] = candidate
            }
        }
        for candidate in candidates where byID[candidate.id]?.bundle === candidate.bundle {
            if let conflict = loaded.packages.values.lazy.compactMap({ scopeConflict(candidate.manifest, $0.manifest) }).first {
                loaded.refusals.append(refusal(candidate.bundle, conflict))
                continue
            }
            loaded.packages[candidate.id] = candidate
        }
        return loaded
    }

    static func refusal(_ bundle: InPlaceBundle, _ problem: BuiltInRefusal.Problem) -> BuiltInRefusal {
        BuiltInRefusal(bundle: bundle.path, id: bundle.manifest.id.value, version: bundle.manifest.version.description, problem: problem)
    }

    /// The same host and path prefix claimed by two different packages.
    static func scopeConflict(_ manifest: Manifest, _ other: Manifest) -> BuiltInRefusal.Problem? {
        guard other.id != manifest.id, other.scope.pathPrefix == manifest.scope.pathPrefix,
            let host = manifest.scope.hosts.first(where: { other.scope.hosts.contains($0) })
        else { return nil }
        return .scopeConflict(otherID: other.id.value, host: host.value, pathPrefix: other.scope.pathPrefix.value)
    }

    /// Bundle files named directly, and the bundles inside named folders (`*.zip`, `*.tar.gz`, `*.tgz`: a tar.gz
    /// is listed so that it is refused by name rather than silently skipped).
    static func expand(_ paths: [String], refusals: inout [BuiltInRefusal]) -> [String] {
        var files: [String] = []
        for path in paths {
            var info = stat()
            guard stat(path, &info) == 0 else {
                refusals.append(BuiltInRefusal(bundle: path, id: nil, version: nil, problem: .unreadable(operation: "stat", errno: errno)))
                continue
            }
            guard info.st_mode & S_IFMT == S_IFDIR else {
                files.append(absolute(path))
                continue
            }
            for name in FileSystem.list(path) where name.hasSuffix(".zip") || name.hasSuffix(".tar.gz") || name.hasSuffix(".tgz") {
                files.append(absolute(path + "/" + name))
            }
        }
        return files
    }

    private static func absolute(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Opens one bundle: structure, manifest, signature; then every file's hash unless an earlier launch recorded
    /// that this very bundle passed.
    static func open(_ path: String, configuration: StoreConfiguration, layout: StoreLayout) throws(BuiltInRefusal) -> BuiltInPackage {
        let bundle: InPlaceBundle
        do { bundle = try InPlaceBundle(path: path, trustedKeys: configuration.trustedKeys, limits: configuration.archiveLimits) } catch {
            if case .archive(.io(let operation, _, let code)) = error {
                throw BuiltInRefusal(bundle: path, id: nil, version: nil, problem: .unreadable(operation: operation, errno: code))
            }
            throw BuiltInRefusal(bundle: path, id: nil, version: nil, problem: .invalid(error))
        }
        let identity: [UInt8]
        do { identity = try Self.identity(of: bundle) } catch { throw refusal(bundle, .unreadable(operation: "stat", errno: error.code)) }
        let recordPath = layout.builtInRecord(bundle.manifest.id)
        if let recorded = try? FileSystem.read(recordPath, maxBytes: 1 << 16), recorded == identity {
            return BuiltInPackage(bundle: bundle, verifiedNow: false)
        }
        do { try bundle.verifyFiles() } catch { throw refusal(bundle, .invalid(error)) }
        do {
            try FileSystem.makeDirectory(layout.builtIns)
            try FileSystem.writeAtomically(identity, to: recordPath) { FaultInjection.checkpoint("record") }
        } catch {
            // Not being able to record costs a verification at the next launch, nothing else; the bundle is valid.
        }
        return BuiltInPackage(bundle: bundle, verifiedNow: true)
    }

    struct StatFailure: Error { let code: Int32 }

    /// The record of a verified bundle: canonical JSON of everything that changes when the bundle does.
    static func identity(of bundle: InPlaceBundle) throws(StatFailure) -> [UInt8] {
        var info = stat()
        guard stat(bundle.path, &info) == 0 else { throw StatFailure(code: errno) }
        let modified = FileTimes.modified(info)
        let changed = FileTimes.changed(info)
        return CanonicalJSON.object([
            "bundle": .string(bundle.path),
            "changed": .integer(changed),
            "device": .integer(Int64(truncatingIfNeeded: info.st_dev)),
            "directory": .string(bundle.directoryDigest),
            "id": .string(bundle.manifest.id.value),
            "inode": .integer(Int64(truncatingIfNeeded: info.st_ino)),
            "manifest": .string(Digests.sha256Hex(bundle.manifestBytes)),
            "modified": .integer(modified),
            "size": .integer(Int64(info.st_size)),
            "verified": .string("every file"),
            "version": .string(bundle.manifest.version.description),
        ]).bytes
    }
}
