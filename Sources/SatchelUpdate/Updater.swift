import Foundation
import SatchelBundle
import SatchelCore
import SatchelHTTP
import SatchelPlatform
import SatchelStore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the updater is doing, for progress bars and logs.
public enum UpdateProgress: Sendable {
    case catalog(FetchedCatalog)
    case planned(UpdatePlan)
    case downloading(id: String, version: String, received: Int64, total: Int64)
    case installing(id: String, version: String, delta: Bool)
    case finished(UpdateOutcome)
}

/// What happened to one package.
///
/// The fallbacks and refusals keep the errors themselves, so that a caller (and the ladder) decides on their cases; the
/// JSON (`satchel update --json`) gives each as its `description`, the words it always printed. Encodable only: an
/// error cannot be rebuilt from its words, and nothing reads an outcome back.
public struct UpdateOutcome: Sendable, Equatable, Encodable {
    public enum Action: String, Sendable, Codable { case installed, upToDate = "up-to-date", rolledBack = "rolled-back" }
    /// How the version came; the raw values are the JSON's.
    public enum Via: String, Sendable, Codable {
        /// The manifest patched and only the missing objects (or per-file diffs) fetched.
        case objects
        /// One ready-made download from the version the device runs: the patch, diffs and whole objects.
        case step
        case delta
        case full
    }
    public var id: String
    public var action: Action
    /// Why (updated, up-to-date, outside-rollout, halted, revoked), the release the catalog offers this package and
    /// the device's cohort (0-999) for it.
    public var decision: UpdatePlan.Decision?
    public var release: String?
    public var cohort: Int?
    public var from: String?
    public var to: String
    /// Set when something was installed.
    public var via: Via?
    /// With `.objects`: the version the manifest patch led from ("nothing" for the whole manifest), and how many
    /// objects were downloaded (the rest came from the device).
    public var patchFrom: String?
    public var objects: Int?
    /// Why the objects path was given up for the delta or the full bundle, if it was.
    public var objectsFallback: UpdateError?
    /// With `.step`: the version the step led from. `diffs`, `diffsFallback` and `diffRefusals` then count the step's
    /// diffs, `objects` the files that came whole (in the step, or fetched for a refused part) and `objectBytes` the
    /// bytes fetched besides the step.
    public var stepFrom: String?
    /// Why the step was given up for the objects, the delta or the full bundle, if it was.
    public var stepFallback: UpdateError?
    /// With `.objects`, when the catalog entry lists per-file diffs (docs/formats.md, "Diffs"; nil otherwise): files
    /// made from a diff, bytes received for the diffs and their index, bytes received for objects, and how many diffs
    /// were refused (each such file then came as its object: `objects` counts it).
    public var diffs: Int?
    public var diffBytes: Int64?
    public var objectBytes: Int64?
    public var diffsFallback: Int?
    /// Why each refused diff was refused (nil when none was).
    public var diffRefusals: [DiffRefusal]?
    /// Why the diff index was not used, when it was asked for (the update then took objects only).
    public var diffIndexFallback: DiffRefusal?
    public var downloadedBytes: Int64
    public var resumed: Bool
    /// Why a delta was given up for the full bundle, if it was: always a store refusal ``Updater/isDeltaMisfit(_:)``
    /// accepts.
    public var deltaFallback: StoreError?
    public var install: InstallResult?

    enum CodingKeys: String, CodingKey {
        case id, action, decision, release, cohort, from, to, via, patchFrom, objects, objectsFallback, stepFrom, stepFallback, diffs, diffBytes, objectBytes
        case diffsFallback, diffRefusals, diffIndexFallback, downloadedBytes, resumed, deltaFallback, install
    }

    // Written out because the errors are not Encodable; absent fields stay absent, as the synthesized encoding left them.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(action, forKey: .action)
        try container.encodeIfPresent(decision, forKey: .decision)
        try container.encodeIfPresent(release, forKey: .release)
        try container.encodeIfPresent(cohort, forKey: .cohort)
        try container.encodeIfPresent(from, forKey: .from)
        try container.encode(to, forKey: .to)
        try container.encodeIfPresent(via, forKey: .via)
        try container.encodeIfPresent(patchFrom, forKey: .patchFrom)
        try container.encodeIfPresent(objects, forKey: .objects)
        try container.encodeIfPresent(objectsFallback?.description, forKey: .objectsFallback)
        try container.encodeIfPresent(stepFrom, forKey: .stepFrom)
        try container.encodeIfPresent(stepFallback?.description, forKey: .stepFallback)
        try container.encodeIfPresent(diffs, forKey: .diffs)
        try container.encodeIfPresent(diffBytes, forKey: .diffBytes)
        try container.encodeIfPresent(objectBytes, forKey: .objectBytes)
        try container.encodeIfPresent(diffsFallback, forKey: .diffsFallback)
        try container.encodeIfPresent(diffRefusals?.map(\.description), forKey: .diffRefusals)
        try container.encodeIfPresent(diffIndexFallback?.description, forKey: .diffIndexFallback)
        try container.encode(downloadedBytes, forKey: .downloadedBytes)
        try container.encode(resumed, forKey: .resumed)
        try container.encodeIfPresent(deltaFallback?.description, forKey: .deltaFallback)
        try container.encodeIfPresent(install, forKey: .install)
    }
}

public struct UpdateReport: Sendable {
    public var catalog: FetchedCatalog
    public var channel: ReleaseChannel = .production
    /// What was sent to the catalog's report URL, and the error if that failed (nil: no report URL).
    public var reportPost: String?
    public var outcomes: [UpdateOutcome]
    public var failures: [(id: String, error: UpdateError)]
}

public struct UpdaterOptions: Sendable {
    public var catalogURL: String
    /// Keys trusted for the catalog's signature. The store's own keys check the bundles. With root keys, they count
    /// only until a first trust version is held (docs/formats.md, "Trust").
    public var trustedKeys: [VerifyingKey]
    /// The root keys the catalog's trust starts from (docs/formats.md, "Trust"); nil: the store's
    /// (``StoreConfiguration/trustAnchor``), which is what an app normally gives, once. With an anchor the updater walks
    /// `trust/<n>.json` (resolved against production's ``catalogURL`` for every channel) to the version each catalog
    /// names, checks the catalog against that version's catalog role, and keeps what it accepted in `downloads/trust/`
    /// for the store, which checks bundles against its bundles role.
    public var trustAnchor: TrustAnchor?
    /// The Satchel runtime that will read what is installed: catalog entries whose `minRuntime` is above it are
    /// skipped. By default this library's own (``SatchelRuntime/version``), which is what an app wants: `minRuntime`
    /// gates the manifest features Satchel reads, never the app's own version. nil skips no entry (tools and tests).
    public var runtime: SemanticVersion?
    public var allowDowngrade: Bool
    /// Packages to update; empty means every installed package the catalog offers.
    public var packages: [PackageID]
    public var timeouts: FetchTimeouts
    public var retry: RetryPolicy
    /// The channel to follow; nil keeps the one the store followed last (production at first). Its catalog is
    /// `channels/<name>/catalog.json` beside `catalogURL`, which is production's.
    public var channel: ReleaseChannel?
    /// Send the device's report with the catalog request and to the catalog's report URL.
    public var sendsReports: Bool
    /// Objects downloaded at once (at least 1; default ``UpdatePlan/requestsInFlight``, 8). On a phone each request
    /// waits a round trip (about 80 ms on 4G), so a few hundred objects one after another leave the link idle for
    /// most of the update; 8 overlap enough round trips that objects of a few kilobytes keep a 4G link busy, as many
    /// as a browser opens to one host (6) and a CDN serves without throttling, and hold at most 8 open files and
    /// 8 MiB of chunks. The choice of way does not depend on it (``UpdatePlan/bytesPerRequest``).
    public var concurrency: Int

    public init(
        catalogURL: String, trustedKeys: [VerifyingKey] = [], runtime: SemanticVersion? = SatchelRuntime.version, allowDowngrade: Bool = false,
        packages: [PackageID] = [], timeouts: FetchTimeouts = FetchTimeouts(connect: .seconds(15), responseHead: .seconds(60), idle: .seconds(60)),
        retry: RetryPolicy = RetryPolicy(), channel: ReleaseChannel? = nil, sendsReports: Bool = true,
        concurrency: Int = UpdatePlan.requestsInFlight, trustAnchor: TrustAnchor? = nil
    ) {
        self.trustAnchor = trustAnchor
        self.concurrency = max(1, concurrency)
        self.channel = channel
        self.sendsReports = sendsReports
        self.catalogURL = catalogURL
        self.trustedKeys = trustedKeys
        self.runtime = runtime
        self.allowDowngrade = allowDowngrade
        self.packages = packages
        self.timeouts = timeouts
        self.retry = retry
    }
}

/// Brings a store up to date with a catalog: fetch and check the catalog, decide per package
/// (``UpdatePlan``), download the delta or the full bundle with resume, verify size and SHA-256, and install
/// through the store, which checks signature and every file again and starts the new version on trial.
///
/// A delta that cannot be applied (base gone or damaged) falls back to the full bundle. Failures are per
/// package: one bad bundle does not stop the others, and leaves its package as it was.
public struct Updater: Sendable {
    public let store: PackageStore
    public let fetcher: any NetworkFetcher
    public let options: UpdaterOptions
    public var downloadsFolder: String { store.layout.root + "/downloads" }

    public init(store: PackageStore, fetcher: any NetworkFetcher, options: UpdaterOptions) {
        self.store = store
        self.fetcher = fetcher
        self.options = options
    }

    public func run(
        now: Timestamp = Timestamp(secondsSinceEpoch: Int64(Date().timeIntervalSince1970)),
        progress: @Sendable (UpdateProgress) -> Void = { _ in }
    ) async throws(UpdateError) -> UpdateReport {
        let client = CatalogClient(fetcher: fetcher, cacheFolder: downloadsFolder, timeouts: options.timeouts, retry: options.retry)
        var record = try UpdaterRecord.load(from: downloadsFolder)
        let channel = options.channel ?? (try? ReleaseChannel(store.channel)) ?? .production
        let catalogURL = try Self.catalogURL(for: channel, production: options.catalogURL)
        let reporter = DeviceReporter(store: store, record: record, channel: channel, runtime: options.runtime)
        var headers = HTTPHeaders()
        if options.sendsReports {
            // Before the fetch the device knows the catalog it last accepted: it reports what that offered it.
            for field in reporter.report(offering: client.cached(catalogURL)).headerFields { headers.add(field.name, field.value) }
        }
        // Plain keys are the state with no anchor: the same acceptance, outside the chain. What the device keeps about
        // trust (the documents, the serial floors) is the store's KeptTrust's to read and write.
        let kept = store.keptTrust
        let trust = kept.state(anchor: options.trustAnchor ?? store.configuration.trustAnchor, plainKeys: options.trustedKeys)
        let fetched = try await client.fetch(
            catalogURL, trust: trust, floor: kept.floor(for: catalogURL), production: options.catalogURL, now: now, headers: headers)
        // Accepted: kept in the order that survives a crash (documents, then the floor). Every call here that takes the
        // store lock or writes its files runs on a thread of its own: another process's install can hold the lock for
        // seconds, and a wait for it must not hold a thread of the app's cooperative pool.
        let (keeper, accepted) = (store, fetched.accepted)
        do { try await onOwnThread { () throws(StoreError) in try kept.keep(accepted, for: catalogURL) } } catch { throw .store(error) }
        let channelName = channel.name
        do { try await onOwnThread { () throws(StoreError) in try keeper.setChannel(channelName) } } catch { throw .store(error) }
        progress(.catalog(fetched))
        removeStaleDownloads(keeping: fetched.catalog)
        let installed: [PackageID]
        do { installed = try store.packageIDs() } catch { throw .store(error) }
        let wanted = options.packages.isEmpty ? fetched.catalog.packageIDs.filter(installed.contains) : options.packages
        var report = UpdateReport(catalog: fetched, channel: channel, outcomes: [], failures: [])
        if options.sendsReports, let reportURL = fetched.catalog.reportURL {
            report.reportPost = await post(reporter.report(offering: fetched.catalog), to: reportURL, from: fetched)
        }
        for id in wanted {
            do {
                let outcome = try await update(id, from: fetched, record: &record, progress: progress)
                report.outcomes.append(outcome)
                progress(.finished(outcome))
            } catch {
                if error == .cancelled { throw error }
                report.failures.append((id.value, error))
            }
        }
        try record.save(to: downloadsFolder)
        // Partial objects are kept for a run that resumes them; once every package got what it wanted, nothing will
        // (objects a failed way left behind when the delta or the bundle then installed, among them).
        if report.failures.isEmpty { removeObjectDownloads() }
        return report
    }

    func removeObjectDownloads() {
        let folder = downloadsFolder + "/objects"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] { unlink(folder + "/" + name) }
    }

    /// Production's catalog is `production` itself; another channel's is `channels/<name>/catalog.json` beside it.
    public static func catalogURL(for channel: ReleaseChannel, production: String) throws(UpdateError) -> String {
        guard channel != .production else { return production }
        guard let base = URL(string: production), let url = URL(string: channel.relativeCatalogPath, relativeTo: base)?.absoluteURL else {
            throw .invalidURL(production)
        }
        return url.absoluteString
    }

    /// POSTs the report; a failure is said, never fatal (the report is a courtesy to the release side).
    private func post(_ report: DeviceReport, to reference: String, from fetched: FetchedCatalog) async -> String {
        do {
            let url = try fetched.resolve(reference)
            let body = report.canonicalJSON.bytes
            let request = ResourceRequest(method: .post, url: url, headers: ["Content-Type": "application/json"], body: body)
            let response = try await fetcher.fetch(request, timeouts: options.timeouts)
            for try await _ in response.body.chunks() {}
            return (200..<300).contains(response.status) ? "sent to \(url)" : "\(url) answered HTTP \(response.status)"
        } catch {
            return "not sent: \(error)"
        }
    }

    /// Partial and finished downloads are named by their SHA-256; those the catalog no longer lists can never
    /// be resumed or installed, so they go (a release that was withdrawn, an update abandoned midway).
    func removeStaleDownloads(keeping catalog: Catalog) {
        var wanted = Set<String>()
        for entry in catalog.packages + catalog.rollouts.map(\.entry) {
            wanted.insert(entry.sha256)
            for delta in entry.deltas { wanted.insert(delta.sha256) }
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: downloadsFolder)) ?? []
        for name in names {
            let hash = String(name.prefix(64))
            guard name.count > 64, Digests.isSHA256Hex(hash), !wanted.contains(hash),
                [".part", ".part.validator", ".zip"].contains(String(name.dropFirst(64)))
            else { continue }
            unlink(downloadsFolder + "/" + name)
        }
    }

    /// Updates one package from an already fetched catalog.
    public func update(
        _ id: PackageID, from fetched: FetchedCatalog, record: inout UpdaterRecord, progress: @Sendable (UpdateProgress) -> Void = { _ in }
    ) async throws(UpdateError) -> UpdateOutcome {
        let state: PackageState?
        do { state = try store.state(of: id) } catch { throw .store(error) }
        let installed = UpdatePlan.Installed(active: state?.active, versions: Set(store.installedVersions(of: id)), failed: state?.failed ?? [])
        let choice: UpdatePlan.Choice
        let cohorts = record.cohorts
        do {
            choice = try UpdatePlan.decide(
                for: id, in: fetched.catalog, installed: installed, runtime: options.runtime, allowDowngrade: options.allowDowngrade,
                cohort: cohorts.cohort)
        } catch { throw .plan(error) }
        progress(.planned(choice.plan))
        var outcome = try await carryOut(choice.plan, for: id, from: fetched, record: &record, progress: progress)
        outcome.decision = choice.decision
        outcome.release = choice.offered?.description
        outcome.cohort = choice.cohort
        return outcome
    }

    private func carryOut(
        _ plan: UpdatePlan, for id: PackageID, from fetched: FetchedCatalog, record: inout UpdaterRecord, progress: @Sendable (UpdateProgress) -> Void
    ) async throws(UpdateError) -> UpdateOutcome {
        switch plan {
        case .upToDate(_, let version):
            return UpdateOutcome(id: id.value, action: .upToDate, from: version.description, to: version.description, via: nil, downloadedBytes: 0, resumed: false)
        case .revert(_, let version):
            // The store's own fallback rules; the revoked version is marked failed there, and why here.
            let state: PackageState
            let store = store
            do { state = try await onOwnThread { () throws(StoreError) in try store.rollback(id) } } catch { throw .store(error) }
            record.failures[UpdaterRecord.key(id, version)] = .revoked
            return UpdateOutcome(id: id.value, action: .rolledBack, from: version.description, to: state.active.description, via: nil, downloadedBytes: 0, resumed: false)
        case .install(let entry, let delta, let replacing):
            do {
                return try await install(entry, delta: delta, replacing: replacing, id: id, from: fetched, progress: progress)
            } catch {
                if let why = Self.failureKind(error) { record.failures[UpdaterRecord.key(id, entry.version)] = why }
                throw error
            }
        }
    }

    /// How a refused install is reported (docs/formats.md, "Device reports"); nil for what says nothing about the
    /// version (the network, a cancellation, a full disk).
    static func failureKind(_ error: UpdateError) -> UpdaterRecord.Failure? {
        switch error {
        case .checksumMismatch, .sizeMismatch, .catalogMismatch, .content: .verification
        case .store(let error):
            switch error {
            case .invalidBundle, .bundleChecksumMismatch, .untrustedBundle: .verification
            default: .installStore
            }
        default: nil
        }
    }

    private func install(
        _ entry: CatalogEntry, delta: CatalogDelta?, replacing: SemanticVersion?, id: PackageID, from fetched: FetchedCatalog,
        progress: @Sendable (UpdateProgress) -> Void
    ) async throws(UpdateError) -> UpdateOutcome {
        var outcome = UpdateOutcome(
            id: id.value, action: .installed, from: replacing?.description, to: entry.version.description, via: nil,
            downloadedBytes: 0, resumed: false)
        let deltaCost = delta.map { UpdatePlan.Cost(bytes: $0.size, requests: 1) }
        let fullCost = UpdatePlan.Cost(bytes: entry.size, requests: 1)
        let name = id.value
        let version = entry.version.description
        let objects = ObjectsUpdate(
            store: store, download: ResumableDownload(fetcher: fetcher, timeouts: options.timeouts, retry: options.retry),
            folder: downloadsFolder + "/objects", concurrency: options.concurrency)
        // The step from the version the device runs, in one request, when it weighs less than the delta and the bundle.
        if let content = entry.content, let step = Self.step(in: content, from: replacing ?? store.builtInPackages.first { $0.id == id }?.version),
            UpdatePlan.cheapest(step: UpdatePlan.Cost(bytes: step.size, requests: 1), objects: nil, delta: deltaCost, full: fullCost) == .step
        {
            var spent: Int64 = 0
            do {
                let taken = try await objects.installStep(step, entry: entry, content: content, from: fetched, spent: &spent) { received, total in
                    progress(.downloading(id: name, version: version, received: received, total: total))
                }
                outcome.install = taken.install
                outcome.via = .step
                outcome.stepFrom = step.from.description
                outcome.downloadedBytes += taken.received
                outcome.resumed = taken.resumed
                outcome.diffs = taken.diffs
                outcome.objects = taken.wholeObjects + taken.fetchedObjects
                outcome.objectBytes = taken.fetchedBytes
                outcome.diffsFallback = taken.refusals.count
                outcome.diffRefusals = taken.refusals.isEmpty ? nil : taken.refusals
                return outcome
            } catch {
                if Self.stopsEveryWay(error) { throw error }
                outcome.downloadedBytes += spent
                outcome.stepFallback = error
            }
        }
        // Only what no version on the device holds, when that weighs less than the delta or the bundle (bytes and requests).
        if let content = entry.content {
            var spent: Int64 = 0
            do {
                if let taken = try await objects.install(
                    entry, content: content, from: fetched, delta: deltaCost, full: fullCost, spent: &spent, progress: { received, total in
                    progress(.downloading(id: name, version: version, received: received, total: total))
                }) {
                    outcome.install = taken.install
                    outcome.via = .objects
                    outcome.downloadedBytes += taken.received
                    outcome.resumed = taken.resumed
                    outcome.patchFrom = taken.patchFrom
                    outcome.objects = taken.objects
                    if taken.diffs.listed {
                        outcome.diffs = taken.diffs.applied
                        outcome.diffBytes = taken.diffs.bytes
                        outcome.objectBytes = taken.objectBytes
                        outcome.diffsFallback = taken.diffs.refusals.count
                        outcome.diffRefusals = taken.diffs.refusals.isEmpty ? nil : taken.diffs.refusals
                        outcome.diffIndexFallback = taken.diffs.indexFallback
                    }
                    return outcome
                }
                outcome.downloadedBytes += spent
            } catch {
                if Self.stopsEveryWay(error) { throw error }
                outcome.downloadedBytes += spent
                outcome.objectsFallback = error
            }
        }
        if let delta {
            do {
                outcome.install = try await fetchAndInstall(
                    DownloadTarget(url: try fetched.resolve(delta.url), size: delta.size, sha256: delta.sha256),
                    entry: entry, isDelta: true, outcome: &outcome, progress: progress)
                outcome.via = .delta
                return outcome
            } catch .store(let error) where Self.isDeltaMisfit(error) {
                outcome.deltaFallback = error
            }
        }
        outcome.install = try await fetchAndInstall(
            DownloadTarget(url: try fetched.resolve(entry.url), size: entry.size, sha256: entry.sha256),
            entry: entry, isDelta: false, outcome: &outcome, progress: progress)
        outcome.via = .full
        return outcome
    }

    /// What no other way gets past, so a step or objects refused for it end the update rather than fall back: a
    /// cancellation, a full disk, and the version's signatures (refused whichever way it comes).
    static func stopsEveryWay(_ error: UpdateError) -> Bool {
        switch error {
        case .cancelled, .diskFull, .store(.untrustedBundle): true
        default: false
        }
    }

    /// The step an entry names from `base` (the version the device runs: its active version, else its built-in).
    /// Steps from other versions the device holds are not weighed: a device further back takes the objects way, which
    /// may use every version it holds.
    static func step(in content: CatalogContent, from base: SemanticVersion?) -> CatalogStep? {
        guard let base else { return nil }
        return content.steps?.first { $0.from == base }
    }

    private func fetchAndInstall(
        _ target: DownloadTarget, entry: CatalogEntry, isDelta: Bool, outcome: inout UpdateOutcome,
        progress: @Sendable (UpdateProgress) -> Void
    ) async throws(UpdateError) -> InstallResult {
        let download = ResumableDownload(fetcher: fetcher, timeouts: options.timeouts, retry: options.retry)
        let id = entry.id.value
        let version = entry.version.description
        let report = try await download.download(target, into: downloadsFolder) { received, total in
            progress(.downloading(id: id, version: version, received: received, total: total))
        }
        outcome.downloadedBytes += report.received
        outcome.resumed = outcome.resumed || report.resumed
        progress(.installing(id: id, version: version, delta: isDelta))
        defer { unlink(report.path) }
        // The catalog and the signed manifest must name the same version before the store sees the bundle: a
        // mismatch found after installing would leave the store changed by a refused update.
        do {
            let manifest = try BundleReader(path: report.path).manifest
            guard manifest.id == entry.id, manifest.version == entry.version else {
                throw UpdateError.catalogMismatch(url: target.url, catalog: "\(id) \(version)", bundle: "\(manifest.id) \(manifest.version)")
            }
        } catch let error as UpdateError {
            throw error
        } catch let error as BundleError {
            throw .store(.invalidBundle(error))
        } catch {
            throw .store(.io(operation: "read", path: report.path, errno: EIO))
        }
        // On a thread of its own, as every call here that takes the store lock: an install also flushes to the drive.
        let (store, path, sha256, signatures) = (store, report.path, target.sha256, entry.signatures)
        do {
            return try await onOwnThread { () throws(StoreError) in try store.install(bundle: path, expectedSHA256: sha256, signatures: signatures) }
        } catch { throw .store(error) }
    }

    /// Store refusals that mean "this delta does not fit what is installed", where the full bundle still can.
    static func isDeltaMisfit(_ error: StoreError) -> Bool {
        switch error {
        case .deltaBaseNotInstalled, .deltaMismatch, .baseFileDamaged: true
        default: false
        }
    }
}
