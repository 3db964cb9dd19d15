import SatchelBundle
import SatchelCore
import SatchelStore

/// A file content the device holds, and where its bytes are.
struct HeldContent: Sendable {
    let size: Int64
    /// An installed file (`.file`), or an entry of a bundle read in place (`.bundle`, a built-in).
    let source: DeltaAssembler.Source
}

/// Every content on the device a per-file diff may start from, by SHA-256 (docs/formats.md, "Diffs"): the versions of
/// the package being updated (installed folders and its built-in: the objects path's bases), and, on demand, the
/// installed versions and built-ins of the other packages.
///
/// The other packages are read only for the contents a diff index names and this package lacks, and only until each
/// is found: a store of 500 packages costs nothing when the index cannot use them, and at most one manifest read per
/// version on the way when it can.
struct HeldContents {
    private(set) var contents: [String: HeldContent] = [:]

    init(bases: [ObjectsUpdate.Base]) {
        for base in bases {
            for file in base.manifest.files where contents[file.sha256] == nil {
                contents[file.sha256] = HeldContent(size: file.size, source: base.source(file))
            }
        }
    }

    /// Exactly these contents (tests).
    init(_ contents: [String: HeldContent]) { self.contents = contents }

    subscript(sha256: String) -> HeldContent? { contents[sha256] }

    /// Adds the contents among `wanted` that another package than `id` holds: built-ins first (their manifests are in
    /// memory already), then installed versions, newest first, stopping once every wanted content is found. Returns
    /// how many were found.
    @discardableResult
    mutating func addOtherPackages(of store: PackageStore, except id: PackageID, wanted: Set<String>) -> Int {
        var missing = wanted.subtracting(contents.keys)
        let before = missing.count
        guard !missing.isEmpty else { return 0 }
        func take(_ manifest: Manifest, _ source: (FileRecord) -> DeltaAssembler.Source) {
            for file in manifest.files where missing.contains(file.sha256) {
                contents[file.sha256] = HeldContent(size: file.size, source: source(file))
                missing.remove(file.sha256)
            }
        }
        for builtIn in store.builtInPackages where builtIn.id != id {
            let bundle = builtIn.bundle
            take(builtIn.manifest) { .bundle(bundle, $0) }
            if missing.isEmpty { return before }
        }
        // A package the store cannot list is one fewer place to look, never a failure: the objects are still there.
        for other in (try? store.packageIDs()) ?? [] where other != id {
            for version in store.installedVersions(of: other).sorted(by: >) {
                guard let manifest = try? store.installedManifest(other, version) else { continue }
                let root = store.layout.version(other, version)
                take(manifest) { .file(root + "/" + $0.path.value) }
                if missing.isEmpty { return before }
            }
        }
        return before - missing.count
    }
}
