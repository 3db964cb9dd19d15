/// What an updater should do for one package, decided from the catalog, what is installed and the device's cohort
/// for each release. Pure, so every rule (runtime, downgrade, delta choice, rollouts, the cost of each way) is table-tested
/// without a network.
public enum UpdatePlan: Hashable, Sendable {
    /// The active version is the one to have (or the one to keep).
    case upToDate(PackageID, SemanticVersion)
    /// Download and install `entry`, from `delta` when it is set.
    case install(CatalogEntry, delta: CatalogDelta?, replacing: SemanticVersion?)
    /// The active version was revoked: go back to the fallback, downloading nothing.
    case revert(PackageID, SemanticVersion)

    /// Why the plan is what it is, as `satchel update --json` reports it.
    public enum Decision: String, Hashable, Sendable, Codable {
        case updated
        case upToDate = "up-to-date"
        /// The newest release is staged and this device's cohort is not (yet) in it.
        case outsideRollout = "outside-rollout"
        /// The newest release is halted: no new device gets it.
        case halted
        /// The active release was revoked.
        case revoked
    }

    /// The plan with what led to it: the release the catalog offers this package (the newest one not revoked that the
    /// runtime may install) and the device's cohort for it.
    public struct Choice: Hashable, Sendable {
        public var plan: UpdatePlan
        public var decision: Decision
        public var offered: SemanticVersion?
        public var cohort: Int?
    }

    public struct Installed: Hashable, Sendable {
        public var active: SemanticVersion?
        /// Every version on disk, the possible delta bases.
        public var versions: Set<SemanticVersion>
        /// Versions that failed on this device: never chosen again automatically.
        public var failed: Set<SemanticVersion>

        public init(active: SemanticVersion?, versions: Set<SemanticVersion>, failed: Set<SemanticVersion> = []) {
            self.active = active
            self.versions = versions
            self.failed = failed
        }
    }

    /// - Parameters:
    ///   - runtime: the app's runtime version; entries whose `minRuntime` is above it are skipped.
    ///   - allowDowngrade: accept a newest catalog version that is older than the active one (a rollback
    ///     release); without it that is refused, since it is also what a replayed old catalog looks like.
    ///   - cohort: the device's cohort (0-999) for a release; nil for a device without one (every staged release is
    ///     then out of reach).
    public static func decide(
        for id: PackageID, in catalog: Catalog, installed: Installed, runtime: SemanticVersion?, allowDowngrade: Bool,
        cohort: ((PackageID, SemanticVersion) -> Int)? = nil
    ) throws(UpdatePlanError) -> Choice {
        let visible = catalog.entries(for: id)
        let rollouts = catalog.rollouts(for: id)
        guard !visible.isEmpty || !rollouts.isEmpty else { throw .notInCatalog(id.value) }
        let standing = Dictionary(uniqueKeysWithValues: rollouts.map { ($0.entry.version, $0) })
        if let active = installed.active, standing[active]?.state == .revoked {
            return Choice(plan: .revert(id, active), decision: .revoked, offered: active, cohort: cohort?(id, active))
        }
        let listed = listedVersions(of: id, in: catalog)
        guard let offered = listed.last(where: { $0.isCompatible(withRuntime: runtime) }) else {
            let lowest = listed.compactMap(\.minRuntime).min()
            throw .needsNewerRuntime(id: id.value, minRuntime: lowest?.description ?? "?", runtime: runtime?.description ?? "?")
        }
        let offeredCohort = cohort?(id, offered.version)
        func admitted(_ entry: CatalogEntry) -> Bool {
            guard !installed.failed.contains(entry.version) else { return false }
            guard let rollout = standing[entry.version] else { return true }
            guard let cohort else { return false }
            return rollout.admits(cohort: cohort(id, entry.version))
        }
        var decision = Decision.updated
        switch standing[offered.version]?.state {
        case .halted?: decision = .halted
        case .staged? where !installed.failed.contains(offered.version) && !admitted(offered): decision = .outsideRollout
        default: break
        }
        let target = listed.last { $0.isCompatible(withRuntime: runtime) && admitted($0) }
        func choice(_ plan: UpdatePlan, _ decision: Decision) -> Choice {
            Choice(plan: plan, decision: decision, offered: offered.version, cohort: offeredCohort)
        }
        if let active = installed.active {
            // A device keeps a staged or halted release it already has: a rollout never takes a version away.
            if standing[active] != nil, target.map({ $0.version < active }) ?? true {
                return choice(.upToDate(id, active), offered.version == active ? .upToDate : decision)
            }
            guard let target else { return choice(.upToDate(id, active), decision) }
            if target.version == active { return choice(.upToDate(id, active), decision == .updated ? .upToDate : decision) }
            if target.version < active, !allowDowngrade {
                throw .downgrade(id: id.value, active: active.description, offered: target.version.description)
            }
        }
        guard let target else { throw .nothingAdmitted(id: id.value, offered: offered.version.description, decision: decision.rawValue) }
        // A delta is worth it only from a version that is on disk and when it weighs less than the bundle (one
        // request each, so: when it is smaller); the active version is preferred as the base since its files are the
        // ones most likely intact.
        let bases = [installed.active].compactMap { $0 } + installed.versions.sorted(by: >)
        let delta = bases.lazy.compactMap { target.delta(from: $0) }.first {
            cheapest(objects: nil, delta: Cost(bytes: $0.size, requests: 1), full: Cost(bytes: target.size, requests: 1)) == .delta
        }
        return choice(.install(target, delta: delta, replacing: installed.active), .updated)
    }

    /// The release the catalog offers `id` to a runtime: its newest version, released or in a rollout that is not
    /// revoked, that the runtime may install (what a device reports as `offered`, with its cohort for it).
    public static func offered(_ id: PackageID, in catalog: Catalog, runtime: SemanticVersion?) -> SemanticVersion? {
        listedVersions(of: id, in: catalog).last { $0.isCompatible(withRuntime: runtime) }?.version
    }

    static func listedVersions(of id: PackageID, in catalog: Catalog) -> [CatalogEntry] {
        (catalog.entries(for: id) + catalog.rollouts(for: id).filter { $0.state != .revoked }.map(\.entry)).sorted { $0.version < $1.version }
    }
}

public enum UpdatePlanError: Error, Equatable, Sendable, CustomStringConvertible {
    case notInCatalog(String)
    case needsNewerRuntime(id: String, minRuntime: String, runtime: String)
    case downgrade(id: String, active: String, offered: String)
    /// Nothing is installed and no listed version admits this device (staged beyond its cohort, or halted).
    case nothingAdmitted(id: String, offered: String, decision: String)

    public var description: String {
        switch self {
        case .notInCatalog(let id): "the catalog does not offer package \(id)"
        case .needsNewerRuntime(let id, let minRuntime, let runtime):
            "every version of \(id) in the catalog needs runtime \(minRuntime) or newer (this runtime is \(runtime))"
        case .downgrade(let id, let active, let offered):
            "refusing to downgrade \(id) from \(active) to \(offered) (the catalog's newest); pass --allow-downgrade to accept it"
        case .nothingAdmitted(let id, let offered, let decision):
            "no version of \(id) is for this device yet: \(offered) is \(decision) and nothing older is listed for everyone"
        }
    }
}

extension UpdatePlan {
    /// The bytes a 4G link moves in one round trip: 20 Mbit/s (2,500,000 B/s) × 80 ms, tools/link-emulator's `4g`. A
    /// request that waits for its answer leaves the link idle for that long.
    public static let roundTripBytes: Int64 = 200_000
    /// Requests an updater keeps in flight by default (`UpdaterOptions.concurrency`): their round trips overlap, so each
    /// costs a share of one.
    public static let requestsInFlight = 8
    /// What one request costs, in bytes: `roundTripBytes / requestsInFlight` = 25,000. Fixed, not the device's own
    /// concurrency, so that a release team predicts the choice from the published files alone.
    public static let bytesPerRequest: Int64 = roundTripBytes / Int64(requestsInFlight)

    /// One way of getting a version: what it downloads and in how many requests.
    public struct Cost: Hashable, Sendable, CustomStringConvertible {
        public var bytes: Int64
        public var requests: Int

        public init(bytes: Int64, requests: Int) {
            self.bytes = bytes
            self.requests = requests
        }

        /// `bytes + requests × bytesPerRequest`: what the ways are compared by.
        public var weight: Int64 { bytes + Int64(requests) * UpdatePlan.bytesPerRequest }

        public var description: String { "\(bytes) B in \(requests) request\(requests == 1 ? "" : "s") (weight \(weight))" }
    }

    public enum Way: String, Hashable, Sendable, Codable {
        case objects, step, delta, full
    }

    /// The way of least weight; a tie goes to the fewer requests and then to the simpler way: the bundle, the delta, the
    /// step, the objects (a request's cost is the estimate and its bytes are not; a step applies diffs on the device
    /// where the delta only links and copies).
    public static func cheapest(step: Cost? = nil, objects: Cost?, delta: Cost?, full: Cost) -> Way {
        var best = (way: Way.full, cost: full)
        if let delta, delta.weight < best.cost.weight { best = (.delta, delta) }
        if let step, step.weight < best.cost.weight { best = (.step, step) }
        if let objects, objects.weight < best.cost.weight { best = (.objects, objects) }
        return best.way
    }
}
