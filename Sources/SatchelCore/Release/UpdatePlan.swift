/// What an updater should do for one package, decided from the catalog and what is installed. Pure, so every
/// rule (runtime, downgrade, delta choice) is table-tested without a network.
public enum UpdatePlan: Hashable, Sendable {
    /// The active version is already the one to have.
    case upToDate(PackageID, SemanticVersion)
    /// Download and install `entry`, from `delta` when it is set.
    case install(CatalogEntry, delta: CatalogDelta?, replacing: SemanticVersion?)

    public struct Installed: Hashable, Sendable {
        public var active: SemanticVersion?
        /// Every version on disk, the possible delta bases.
        public var versions: Set<SemanticVersion>

        public init(active: SemanticVersion?, versions: Set<SemanticVersion>) {
            self.active = active
            self.versions = versions
        }
    }

    /// - Parameters:
    ///   - runtime: the app's runtime version; entries whose `minRuntime` is above it are skipped.
    ///   - allowDowngrade: accept a newest catalog version that is older than the active one (a rollback
    ///     release); without it that is refused, since it is also what a replayed old catalog looks like.
    public static func decide(
        for id: PackageID, in catalog: Catalog, installed: Installed, runtime: SemanticVersion?, allowDowngrade: Bool
    ) throws(UpdatePlanError) -> UpdatePlan {
        let offered = catalog.entries(for: id)
        guard !offered.isEmpty else { throw .notInCatalog(id.value) }
        guard let target = offered.last(where: { $0.isCompatible(withRuntime: runtime) }) else {
            let lowest = offered.compactMap(\.minRuntime).min()
            throw .needsNewerRuntime(id: id.value, minRuntime: lowest?.description ?? "?", runtime: runtime?.description ?? "?")
        }
        if let active = installed.active {
            if target.version == active { return .upToDate(id, active) }
            if target.version < active, !allowDowngrade {
                throw .downgrade(id: id.value, active: active.description, offered: target.version.description)
            }
        }
        // A delta is worth it only from a version that is on disk and when it is smaller than the bundle;
        // the active version is preferred as the base since its files are the ones most likely intact.
        let bases = [installed.active].compactMap { $0 } + installed.versions.sorted(by: >)
        let delta = bases.lazy.compactMap { target.delta(from: $0) }.first { $0.size < target.size }
        return .install(target, delta: delta, replacing: installed.active)
    }
}

public enum UpdatePlanError: Error, Equatable, Sendable, CustomStringConvertible {
    case notInCatalog(String)
    case needsNewerRuntime(id: String, minRuntime: String, runtime: String)
    case downgrade(id: String, active: String, offered: String)

    public var description: String {
        switch self {
        case .notInCatalog(let id): "the catalog does not offer package \(id)"
        case .needsNewerRuntime(let id, let minRuntime, let runtime):
            "every version of \(id) in the catalog needs runtime \(minRuntime) or newer (this runtime is \(runtime))"
        case .downgrade(let id, let active, let offered):
            "refusing to downgrade \(id) from \(active) to \(offered) (the catalog's newest); pass --allow-downgrade to accept it"
        }
    }
}
