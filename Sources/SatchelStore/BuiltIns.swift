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
/// files. A bundle replaced or touched in any of those ways is verified again, except where the system seals it
/// (decision 0035): there `builtins/<id>.content.json` also records the SHA-256 of the whole archive that the app's
/// code signature seals, and the same bytes at a new place (an app update: a new path, new inodes and change times)
/// are trusted by that digest, unread. Only successes are recorded: a refused bundle is checked again next time (a
/// read error must not become a permanent refusal).
enum BuiltIns {
    struct Loaded {
        var packages: [PackageID: BuiltInPackage] = [:]
        var refusals: [BuiltInRefusal] = []
    }

    /// Must run under the store lock: it may write verification records.
    static func load(_ paths: [String], configuration: StoreConfiguration, layout: StoreLayout) throws(StoreError) -> Loaded {
        var loaded = Loaded()
        var candidates: [BuiltInPackage] = []
        var seal = SealLookup(root: configuration.sealedRoot)
        for file in expand(paths, refusals: &loaded.refusals) {
            do throws(BuiltInRefusal) {
                candidates.append(try open(file, configuration: configuration, layout: layout, seal: &seal))
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
    /// that this very bundle passed, or, where the system seals it, that these very bytes passed.
    static func open(
        _ path: String, configuration: StoreConfiguration, layout: StoreLayout, seal: inout SealLookup
    ) throws(BuiltInRefusal) -> BuiltInPackage {
        let bundle: InPlaceBundle
        do { bundle = try InPlaceBundle(path: path, trustedKeys: configuration.trustedKeys, limits: configuration.archiveLimits) } catch {
            if case .archive(.io(let operation, _, let code)) = error {
                throw BuiltInRefusal(bundle: path, id: nil, version: nil, problem: .unreadable(operation: operation, errno: code))
            }
            throw BuiltInRefusal(bundle: path, id: nil, version: nil, problem: .invalid(error))
        }
        let identity: Identity
        do { identity = try Self.identity(of: bundle) } catch { throw refusal(bundle, .unreadable(operation: "stat", errno: error.code)) }
        let recordPath = layout.builtInRecord(bundle.manifest.id)
        if let recorded = try? FileSystem.read(recordPath, maxBytes: DocumentLimits.builtInRecord), recorded == identity.record {
            return BuiltInPackage(bundle: bundle, verifiedNow: false)
        }
        // Not the file verified before. Where the system seals it, the same bytes elsewhere are as good: the record
        // moves to the new place, so the next launch needs no seal.
        let contentPath = layout.builtInContentRecord(bundle.manifest.id)
        let content = seal.sha256(of: bundle.path).map { identity.content(sealed: $0) }
        if let content, let recorded = try? FileSystem.read(contentPath, maxBytes: DocumentLimits.builtInRecord), recorded == content {
            record([(identity.record, recordPath)], in: layout)
            return BuiltInPackage(bundle: bundle, verifiedNow: false)
        }
        do { try bundle.verifyFiles() } catch { throw refusal(bundle, .invalid(error)) }
        record([(identity.record, recordPath)] + (content.map { [($0, contentPath)] } ?? []), in: layout)
        return BuiltInPackage(bundle: bundle, verifiedNow: true)
    }

    /// Writes verification records. Not being able to costs a verification at the next launch, nothing else: the
    /// bundle is valid.
    private static func record(_ records: [(bytes: [UInt8], path: String)], in layout: StoreLayout) {
        do {
            try FileSystem.makeDirectory(layout.builtIns)
            for (bytes, path) in records {
                try FileSystem.writeAtomically(bytes, to: path) { FaultInjection.checkpoint("record") }
            }
        } catch {}
    }

    struct StatFailure: Error { let code: Int32 }

    /// What the records of a verified bundle hold: canonical JSON of everything that changes when the bundle does.
    struct Identity {
        /// `builtins/<id>.json`: the file (where it is, which inode, when it changed) and its content's digests.
        let record: [UInt8]
        /// The fields that do not depend on where the file lies.
        let contentFields: [String: CanonicalJSON]

        /// `builtins/<id>.content.json`: the content's digests and the whole archive's SHA-256 as the system seals it.
        func content(sealed sha256: String) -> [UInt8] {
            var fields = contentFields
            fields["sealed"] = .string(sha256)
            return CanonicalJSON.object(fields).bytes
        }
    }

    static func identity(of bundle: InPlaceBundle) throws(StatFailure) -> Identity {
        var info = stat()
        guard stat(bundle.path, &info) == 0 else { throw StatFailure(code: errno) }
        let content: [String: CanonicalJSON] = [
            "directory": .string(bundle.directoryDigest),
            "id": .string(bundle.manifest.id.value),
            "manifest": .string(Digests.sha256Hex(bundle.manifestBytes)),
            "size": .integer(Int64(info.st_size)),
            "verified": .string("every file"),
            "version": .string(bundle.manifest.version.description),
        ]
        let file: [String: CanonicalJSON] = [
            "bundle": .string(bundle.path),
            "changed": .integer(FileTimes.changed(info)),
            "device": .integer(Int64(truncatingIfNeeded: info.st_dev)),
            "inode": .integer(Int64(truncatingIfNeeded: info.st_ino)),
            "modified": .integer(FileTimes.modified(info)),
        ]
        return Identity(record: CanonicalJSON.object(content.merging(file) { $1 }).bytes, contentFields: content)
    }
}

/// The app's resource seal, read at the first built-in that needs it and at most once per open of the store (an
/// open that trusts every built-in's record, a launch without an app update, never reads it).
struct SealLookup {
    let root: String?
    private var seal: ResourceSeal??

    init(root: String?) { self.root = root }

    /// The SHA-256 the system seals the file at `path` with; nil where nothing seals it.
    mutating func sha256(of path: String) -> String? {
        guard let root else { return nil }
        if seal == nil { seal = .some(ResourceSeal(bundle: root)) }
        return seal??.sha256(of: path)
    }
}

extension StoreLayout {
    /// The record that a built-in's sealed bytes were verified, wherever they lie (decision 0035).
    func builtInContentRecord(_ id: PackageID) -> String { builtIns + "/" + id.value + ".content.json" }
}
