import Foundation
import SatchelCore
import SatchelArchive
import SatchelBundle
import SatchelPlatform

/// A release folder as `satchel catalog` publishes it: every bundle and delta verified, the catalog's entries for
/// them, and the content-addressed side written beside them in the same pass (``ReleaseContent``: each file content
/// once as an object, and each version's manifest patches from the ``patchBases`` newest older versions of its
/// package and from nothing). URLs are `baseURL` followed by the path in the folder.
public enum ReleaseFolder {
    /// How many older versions each version gets a manifest patch from. Every patch is a line of the catalog, which
    /// every device fetches on every release: patches from every older version would grow it with the square of the
    /// versions kept. A device further behind takes the patch from nothing (the whole manifest, compressed) and still
    /// fetches only the contents it lacks.
    public static let patchBases = 8

    public struct Contents: Sendable {
        public var entries: [CatalogEntry]
        public var objects: Int
        public var patches: Int
        /// Distinct per-file diffs the catalog's versions list, and their bytes in the folder.
        public var diffs: Int = 0
        public var diffBytes: Int64 = 0
        /// Of those, how many this run encoded (the rest were on disk already and still make their targets).
        public var diffsEncoded: Int = 0
        /// Pairs this run encoded and found not worth a diff (a later run does not encode them again).
        public var diffsNotWorth: Int = 0
        /// `<bundle>.sigs` files made for another manifest than their bundle's: left out of the catalog.
        public var staleSignatures: [String] = []
        /// Steps the catalog's entries name (docs/formats.md, "Steps"), and their bytes.
        public var steps: Int = 0
        public var stepBytes: Int64 = 0
    }

    /// A version apps ship as a built-in: every newer version of its package gets diffs from it, however far back.
    public struct BuiltIn: Hashable, Sendable, CustomStringConvertible {
        public var id: PackageID
        public var version: SemanticVersion

        public init(id: PackageID, version: SemanticVersion) {
            self.id = id
            self.version = version
        }

        /// `<id>@<version>`, as `satchel catalog --built-in` takes it.
        public init(parsing text: String) throws(FieldError) {
            guard let at = text.firstIndex(of: "@") else {
                throw FieldError(field: "built-in", value: text, reason: "must be <id>@<version>, like shop@1.0.0")
            }
            id = try PackageID(String(text[..<at]))
            version = try SemanticVersion(String(text[text.index(after: at)...]))
        }

        public var description: String { "\(id)@\(version)" }
    }

    /// `staged`: the versions (`"<id> <version>"`) the catalog lists as rollouts, which name steps besides each package's
    /// newest released version. `steps: false` writes none (tests of the objects way alone).
    public static func read(
        _ folder: String, baseURL: String, builtIns: [BuiltIn] = [], staged: Set<String> = [], steps writesSteps: Bool = true
    ) throws(ReleaseFolderError) -> Contents {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { throw .unreadable(folder) }
        var entries: [String: CatalogEntry] = [:]
        var versions: [String: (manifest: Manifest, bytes: [UInt8], signature: String?)] = [:]
        var deltas: [(target: String, delta: CatalogDelta, file: String)] = []
        var stale: [String] = []
        let content = ReleaseContent(folder: folder)
        for name in names.sorted() where (name.hasSuffix(".zip") || name.hasSuffix(".tar.gz")) && !name.hasPrefix(".") {
            let path = folder + "/" + name
            let digest: (size: Int64, sha256: String)
            let reader: BundleReader
            do {
                digest = try FileDigest.sha256(ofFile: path)
                reader = try BundleReader(path: path)
                if reader.delta == nil {
                    var sink = content.sink()
                    try reader.readFiles(into: &sink)
                } else {
                    var sink = DiscardingSink()
                    try reader.readFiles(into: &sink)
                }
            } catch BundleError.unsupportedFormat {
                throw .notZip(path)
            } catch {
                throw .bundle(path: path, "\(error)")
            }
            let manifest = reader.manifest
            let key = "\(manifest.id) \(manifest.version)"
            if let delta = reader.delta {
                deltas.append((key, CatalogDelta(from: delta.from, url: baseURL + name, size: digest.size, sha256: digest.sha256), name))
            } else {
                if let other = entries[key] { throw .twoBundles(key, name, other.url) }
                entries[key] = CatalogEntry(
                    id: manifest.id, version: manifest.version, url: baseURL + name, size: digest.size, sha256: digest.sha256,
                    minRuntime: manifest.minRuntime, signatures: try signatures(beside: path, over: reader.manifestBytes, stale: &stale))
                versions[key] = (manifest, reader.manifestBytes, reader.signatureBytes.map { String(decoding: $0, as: UTF8.self) })
            }
        }
        for delta in deltas {
            guard entries[delta.target] != nil else { throw .orphanDelta(delta.file, delta.target) }
            entries[delta.target]!.deltas.append(delta.delta)
        }
        // Manifest patches: to each version from its newest older versions, and from nothing.
        var patchCount = 0
        for (key, target) in versions {
            let bases = versions.values.filter { $0.manifest.id == target.manifest.id && $0.manifest.version < target.manifest.version }
                .sorted { $0.manifest.version > $1.manifest.version }.prefix(patchBases)
            var patches: [CatalogPatch] = []
            do {
                for older in [nil] + bases.map(\.manifest) {
                    let patch = try ManifestPatch.make(from: older, to: target.manifest, signature: target.signature, objects: content.objects)
                    let written = try content.write(patch, id: target.manifest.id, version: target.manifest.version)
                    patches.append(CatalogPatch(from: older?.version, url: baseURL + written.path, size: written.size, sha256: written.sha256))
                }
            } catch let error as ManifestPatchError {
                throw .content(key, error.description)
            } catch let error as ReleaseContentError {
                throw .content(key, error.description)
            } catch {
                throw .content(key, "\(error)")
            }
            patchCount += patches.count
            entries[key]!.content = CatalogContent(manifest: Digests.sha256Hex(target.bytes), objects: baseURL + "objects/", patches: patches)
        }
        for builtIn in builtIns where versions["\(builtIn.id) \(builtIn.version)"] == nil { throw .builtInNotPublished(builtIn.description) }
        // Per-file diffs, and each version's index of them.
        let diffs = ReleaseDiffs(folder: folder, content: content)
        let written: ReleaseDiffs.Written
        do { written = try diffs.write(versions: versions.values.map(\.manifest), builtIns: Set(builtIns.map(\.description))) } catch {
            throw .content("diffs", error.description)
        }
        for (key, rows) in written.indexes where !rows.isEmpty {
            guard let manifest = versions[key]?.manifest else { continue }
            do {
                let file = try diffs.writeIndex(FileDiffIndex(id: manifest.id, version: manifest.version, diffs: rows))
                entries[key]!.content!.diffs = CatalogDiffs(base: baseURL + "diffs/", url: baseURL + file.path, size: file.size, sha256: file.sha256)
            } catch {
                throw .content(key, error.description)
            }
        }
        var contents = Contents(
            entries: [], objects: content.objects.count, patches: patchCount,
            diffs: written.encoded + written.kept, diffBytes: written.bytes, diffsEncoded: written.encoded, diffsNotWorth: written.judgedNotWorth,
            staleSignatures: stale.sorted())
        // Steps, named on each package's newest released entry and on each staged one, from the predecessor and the
        // built-ins: made of the patch, the diffs and the objects just written.
        if writesSteps {
            let steps = ReleaseSteps(folder: folder, objects: content.objects, objectsFolder: content.objectsFolder, diffsFolder: diffs.diffsFolder)
            let manifests = versions.values.map(\.manifest)
            let shipped = Set(builtIns.map(\.description))
            for key in ReleaseSteps.targets(manifests.map { ($0.id, $0.version) }, staged: staged).sorted() {
                guard let target = versions[key] else { continue }
                var named: [CatalogStep] = []
                for base in ReleaseSteps.bases(of: target.manifest, among: manifests, builtIns: shipped) {
                    do {
                        let step = try steps.write(
                            target: target.manifest, signature: target.signature, base: base, diffs: written.indexes[key] ?? [])
                        named.append(CatalogStep(from: base.version, url: baseURL + step.path, size: step.size, sha256: step.sha256))
                        contents.steps += 1
                        contents.stepBytes += step.size
                    } catch {
                        throw .content(key, error.description)
                    }
                }
                if !named.isEmpty { entries[key]!.content!.steps = named }
            }
        }
        contents.entries = Array(entries.values)
        return contents
    }

    /// The keyed signatures of a bundle's `satchel.json` in `<bundle>.sigs` beside it (docs/formats.md, "Threshold
    /// signatures"), which the catalog entry carries as `signatures`: none without the file; none, and the file named in
    /// `stale`, when it was made for another manifest (a bundle packed again since); a file that breaks its format is
    /// refused.
    static func signatures(beside bundle: String, over manifest: [UInt8], stale: inout [String]) throws(ReleaseFolderError) -> [KeyedSignature] {
        let path = bundle + SignatureFile.suffix
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        let file: SignatureFile
        do { file = try SignatureFile.decode(Array(data)) } catch { throw .bundle(path: path, "\(error)") }
        guard file.covers(manifest) else {
            stale.append(path)
            return []
        }
        return file.signatures
    }
}

public enum ReleaseFolderError: Error, Equatable, Sendable, CustomStringConvertible {
    case unreadable(String)
    case bundle(path: String, String)
    case twoBundles(String, String, String)
    case orphanDelta(String, String)
    case content(String, String)
    /// A full bundle or delta that is not a zip: devices install zip only, so a catalog never lists anything else.
    case notZip(String)
    /// `--built-in` named a version the folder has no full bundle of: diffs are made from published contents only.
    case builtInNotPublished(String)

    public var description: String {
        switch self {
        case .unreadable(let folder): "cannot list bundle folder \(folder)"
        case .bundle(let path, let why): "\(path): \(why)"
        case .twoBundles(let key, let one, let other): "two bundles hold \(key) (\(one) and \(other)); keep one format per version"
        case .orphanDelta(let file, let target): "delta \(file) leads to \(target), which has no full bundle in the folder"
        case .content(let key, let why): "\(key): \(why)"
        case .builtInNotPublished(let version): "built-in \(version) has no full bundle in the folder; diffs from it need its contents: publish its bundle beside the others"
        case .notZip(let path): "\(path) is a tar.gz bundle; a catalog lists zip bundles only, since devices install zip: repack it as zip (satchel pack --format zip)"
        }
    }
}
