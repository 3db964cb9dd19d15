import Foundation
import SatchelBundle
import SatchelCore

/// Reading the store: which packages exist, their state as the rules see it, manifests, `list` and `check`.
/// Nothing here takes the lock or writes.
extension PackageStore {
    /// The ids of the packages the store has: installed ones and the app's built-ins.
    public func packageIDs() throws(StoreError) -> [PackageID] {
        Set(FileSystem.list(layout.packages).compactMap { try? PackageID($0) }).union(builtIns.keys).sorted()
    }

    /// A package's state as the rules see it: its `state.json` brought up to the built-in floor, or, for a
    /// package only the built-in provides, the built-in confirmed and active; nil when the store has no such package.
    public func state(of id: PackageID) throws(StoreError) -> PackageState? {
        PackageState.effective(stored: try storedState(of: id), builtIn: builtIns[id]?.version)
    }

    /// `state.json` as it is on disk; nil when there is none.
    public func storedState(of id: PackageID) throws(StoreError) -> PackageState? {
        let path = layout.state(id)
        guard FileSystem.exists(path) else { return nil }
        return try PackageState.decode(try FileSystem.read(path), path: path)
    }

    /// What the rules may choose from for a package.
    public func availability(of id: PackageID) -> AvailableVersions {
        AvailableVersions(installed: Set(versionFolders(of: id)), builtIn: builtIns[id]?.version)
    }

    /// Versions that can be served, oldest first: those with a folder on disk, and the built-in one.
    public func installedVersions(of id: PackageID) -> [SemanticVersion] {
        Array(Set(versionFolders(of: id)).union(builtIns[id].map { [$0.version] } ?? [])).sorted()
    }

    /// Versions with a folder on disk, oldest first.
    func versionFolders(of id: PackageID) -> [SemanticVersion] {
        FileSystem.list(layout.versions(id)).compactMap { try? SemanticVersion($0) }.sorted()
    }

    /// The built-in packages served (valid ones only; see ``builtInRefusals``).
    public var builtInPackages: [BuiltInPackage] { builtIns.values.sorted { $0.id < $1.id } }

    /// The manifest of an installed version, read from its folder.
    public func installedManifest(_ id: PackageID, _ version: SemanticVersion) throws(StoreError) -> Manifest {
        try Self.readManifest(layout.version(id, version))
    }

    static func readManifest(_ folder: String) throws(StoreError) -> Manifest {
        let path = folder + "/" + Manifest.fileName
        let bytes = try FileSystem.read(path)
        do { return try Manifest.decode(bytes) } catch { throw .corruptState(path: path, reason: error.description) }
    }

    /// The manifest of the version a package serves; nil when that version is nowhere (a built-in the store was
    /// once given and is not given now).
    func activeManifest(of id: PackageID) throws(StoreError) -> Manifest? {
        guard let state = try state(of: id) else { return nil }
        if let builtIn = builtIns[id], builtIn.version == state.active { return builtIn.manifest }
        guard FileSystem.isDirectory(layout.version(id, state.active)) else { return nil }
        return try installedManifest(id, state.active)
    }

    /// Every package, for `satchel list` and the status page.
    public func list() throws(StoreError) -> [InstalledPackage] {
        var packages: [InstalledPackage] = []
        let channel = self.channel
        for id in try packageIDs() {
            guard let state = try state(of: id) else { continue }
            let builtIn = builtIns[id]
            let manifest = try activeManifest(of: id)
            let servedByBuiltIn = builtIn?.version == state.active
            packages.append(InstalledPackage(
                id: id.value, active: state.active.description,
                state: servedByBuiltIn ? .builtIn : manifest == nil ? .missing : state.isTrial ? .trial : .confirmed,
                launches: state.launches, confirmed: state.confirmed?.description,
                fallback: state.fallback(in: availability(of: id))?.description, failed: state.failed.sorted().map(\.description),
                failureReasons: state.failed.sorted().compactMap { version in
                    state.failureReason(of: version).map { FailureReasonEntry(version: version.description, why: $0.why, detail: $0.detail) }
                },
                otherVersions: versionFolders(of: id).filter { $0 != state.active }.map(\.description),
                builtIn: builtIn?.version.description, builtInBundle: builtIn?.bundle.path,
                hosts: manifest?.scope.hosts.map(\.value) ?? [], pathPrefix: manifest?.scope.pathPrefix.value ?? "",
                fileCount: manifest?.files.count ?? 0, bytes: manifest?.totalSize ?? 0, channel: channel))
        }
        return packages
    }

    /// The release channel the store follows: `store.json`'s optional `channel`, else `production`.
    public var channel: String {
        struct Wire: Decodable { let channel: String? }
        guard let bytes = try? FileSystem.read(layout.storeFile), let wire = try? JSONDecoder().decode(Wire.self, from: Data(bytes)) else { return "production" }
        return wire.channel ?? "production"
    }

    /// Remembers the channel in `store.json` (atomically, under the store lock). Readers from before channels
    /// ignore the field (docs/formats.md, "Store layout").
    public func setChannel(_ name: String) throws(StoreError) {
        guard name != channel else { return }
        try withStoreLock { () throws(StoreError) in
            var object: [String: CanonicalJSON] = ["layout": .integer(Int64(StoreLayout.version))]
            if name != "production" { object["channel"] = .string(name) }
            try FileSystem.writeAtomically(CanonicalJSON.object(object).bytes, to: layout.storeFile)
        }
    }

    /// Re-verifies every file of every active version against its manifest (size and SHA-256), that an installed
    /// folder holds nothing else, and the signature when keys are trusted. An active built-in is hashed in full
    /// again, whatever its record says; a refused built-in is a problem too.
    public func check() throws(StoreError) -> [CheckProblem] {
        var problems: [CheckProblem] = []
        for refusal in builtInRefusals {
            problems.append(CheckProblem(id: refusal.id ?? "", version: refusal.version ?? "", path: refusal.bundle, kind: .builtInRefused))
        }
        for id in try packageIDs() {
            guard let state = try state(of: id) else { continue }
            func problem(_ path: String, _ kind: CheckProblem.Kind) {
                problems.append(CheckProblem(id: id.value, version: state.active.description, path: path, kind: kind))
            }
            if let builtIn = builtIns[id], builtIn.version == state.active {
                do { try builtIn.bundle.verifyFiles() } catch {
                    switch error {
                    case .hashMismatch(let path, _, _): problem(path, .hashMismatch)
                    default: problem(error.subject ?? builtIn.bundle.path, .unreadable)
                    }
                }
                if let kind = builtInSignatureProblem(builtIn.bundle) { problem(builtIn.bundle.path, kind) }
                continue
            }
            let folder = layout.version(id, state.active)
            guard FileSystem.isDirectory(folder) else {
                problem(folder, .missing)
                continue
            }
            let manifest = try installedManifest(id, state.active)
            var expected = Set(manifest.files.map(\.path.value))
            expected.insert(Manifest.fileName)
            expected.insert(Manifest.signatureFileName)
            for file in manifest.files {
                let path = folder + "/" + file.path.value
                guard FileSystem.exists(path) else {
                    problem(file.path.value, .missing)
                    continue
                }
                guard let (size, digest) = try? Self.sha256AndSize(ofFile: path) else {
                    problem(file.path.value, .unreadable)
                    continue
                }
                if size != file.size { problem(file.path.value, .sizeMismatch) } else if digest != file.sha256 { problem(file.path.value, .hashMismatch) }
            }
            for path in Self.allFiles(under: folder) where !expected.contains(path) { problem(path, .unexpected) }
            if let kind = signatureProblem(id, state.active) { problem(Manifest.signatureFileName, kind) }
        }
        return problems
    }
}
