import Foundation
import SatchelBundle
import SatchelCore
import SatchelHTTP
import SatchelStore
import SatchelTestSupport
import Testing
@testable import SatchelUpdate
import SatchelPublishing

/// Two signed versions of one app on a fake CDN, with catalogs the test writes per case: channels, serials, rollouts.
private struct RolloutRelease {
    let key = SigningKey.generate()
    let origin = FakeOrigin()
    let base = "https://cdn.example/releases/"
    let folder: String
    var entries: [String: CatalogEntry] = [:]

    init(folder: String) throws {
        self.folder = folder
        for version in ["1.0.0", "1.1.0"] {
            let source = folder + "/src-\(version)"
            try makeTree(source, ["index.html": "<h1>\(version)</h1>", "app.js": "console.log('\(version)')"])
            let options = PackOptions(
                id: try PackageID("shop"), version: try SemanticVersion(version), scope: try Scope(hosts: [HostPattern("m.shop.example")]),
                signingKey: key, sourceDateEpoch: 1_700_000_000)
            let bundle = try Packer.pack(source: source, options: options, outputFolder: folder + "/release").bundle
            let bytes = try readBytes(bundle)
            origin.put(base + "shop-\(version).zip", bytes)
            entries[version] = CatalogEntry(
                id: try PackageID("shop"), version: try SemanticVersion(version), url: "shop-\(version).zip", size: Int64(bytes.count),
                sha256: Digests.sha256Hex(bytes))
        }
    }

    var bundle100: String { folder + "/release/shop-1.0.0.zip" }

    /// Publishes `catalog` (signed) at production's URL or a channel's.
    func publish(_ catalog: Catalog, channel: String? = nil) throws {
        let url = base + (channel.map { "channels/\($0)/" } ?? "") + "catalog.json"
        origin.put(url, catalog.canonicalBytes)
        origin.put(url + ".sig", Array(try key.signature(for: catalog.canonicalBytes).base64.utf8))
    }

    /// `prefix` goes before each bundle's URL: a channel's catalog is two folders below the bundles.
    func catalog(serial: Int64, released: [String], rollouts: [(String, Int, RolloutState)] = [], reports: String? = nil, prefix: String = "") throws -> Catalog {
        try Catalog(
            expires: Timestamp(secondsSinceEpoch: 4_000_000_000),
            packages: released.map { var entry = entries[$0]!; entry.url = prefix + entry.url; return entry }, serial: serial, reportURL: reports,
            rollouts: rollouts.map { Rollout(entry: entries[$0.0]!, permille: $0.1, state: $0.2, since: Timestamp(secondsSinceEpoch: 1_800_000_000)) })
    }

    func store(_ name: String) throws -> PackageStore {
        let store = try PackageStore(root: folder + "/" + name, configuration: StoreConfiguration(trustedKeys: [key.verifyingKey]))
        try store.install(bundle: bundle100)
        try store.confirm(try PackageID("shop"))
        return store
    }

    func updater(_ store: PackageStore, channel: String? = nil) -> Updater {
        Updater(store: store, fetcher: origin, options: UpdaterOptions(
            catalogURL: base + "catalog.json", trustedKeys: [key.verifyingKey],
            retry: RetryPolicy(attempts: 2, initialDelay: .milliseconds(1), maxDelay: .milliseconds(2)),
            channel: try! channel.map { try ReleaseChannel($0) }))
    }

    /// The cohort the store's install id gives 1.1.0.
    func cohort(_ store: PackageStore) -> Int {
        try! UpdaterRecord.load(from: store.layout.root + "/downloads").cohorts.cohort(try! PackageID("shop"), try! SemanticVersion("1.1.0"))
    }
}

@Suite("The updater with channels, serials, rollouts and reports")
struct RolloutUpdateTests {
    @Test("a staged release reaches exactly the devices whose cohort is below its share; the others are told why")
    func stagedByCohort() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try RolloutRelease(folder: folder)
            try release.publish(try release.catalog(serial: 1, released: ["1.0.0"], rollouts: [("1.1.0", 300, .staged)]))
            var inside = 0
            for n in 0..<12 {
                let store = try release.store("store-\(n)")
                // The install id exists from the first run on; its cohort decides.
                let report = try await release.updater(store).run()
                let outcome = try #require(report.outcomes.first)
                let cohort = release.cohort(store)
                #expect(outcome.cohort == cohort && outcome.release == "1.1.0")
                if cohort < 300 {
                    inside += 1
                    #expect(outcome.action == .installed && outcome.decision == .updated, "\(outcome)")
                } else {
                    #expect(outcome.action == .upToDate && outcome.decision == .outsideRollout && outcome.downloadedBytes == 0, "\(outcome)")
                }
                // Stable: a second run decides the same.
                let again = try #require(try await release.updater(store).run().outcomes.first)
                #expect(again.cohort == cohort && again.to == (cohort < 300 ? "1.1.0" : "1.0.0"))
            }
            #expect(inside < 12, "all twelve devices inside a 30 % rollout is unlikely (p < 1e-6)")
        }
    }

    @Test("revoked: a device on the version goes back to its fallback downloading nothing, and reports it as revoked")
    func revoked() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try RolloutRelease(folder: folder)
            try release.publish(try release.catalog(serial: 1, released: ["1.0.0", "1.1.0"]))
            let store = try release.store("store")
            #expect(try await release.updater(store).run().outcomes.first?.to == "1.1.0")
            try release.publish(try release.catalog(serial: 2, released: ["1.0.0"], rollouts: [("1.1.0", 1000, .revoked)], reports: "https://cdn.example/reports"))
            release.origin.put("https://cdn.example/reports", [])
            let before = release.origin.requests.count
            let report = try await release.updater(store).run()
            let outcome = try #require(report.outcomes.first)
            #expect(outcome.action == .rolledBack && outcome.decision == .revoked && outcome.from == "1.1.0" && outcome.to == "1.0.0", "\(outcome)")
            let fetched = release.origin.requests.dropFirst(before).map(\.url)
            #expect(!fetched.contains { $0.hasSuffix(".zip") }, "\(fetched)")
            #expect(try store.state(of: PackageID("shop"))?.active == SemanticVersion("1.0.0"))
            #expect(report.reportPost?.hasPrefix("sent to https://cdn.example/reports") == true, "\(report.reportPost ?? "nil")")
            // The next check's headers say 1.1.0 failed here because it was revoked, under 1.1.0's token.
            _ = try await release.updater(store).run()
            let headers = try #require(release.origin.requests.last { $0.url.hasSuffix("/catalog.json") }?.headers)
            let sent = try DeviceReport.parse(channel: headers["Satchel-Channel"], report: try #require(headers["Satchel-Report"]))
            let failed = try #require(sent.items.first { $0.role == .failed })
            let cohorts = try UpdaterRecord.load(from: store.layout.root + "/downloads").cohorts
            let shop = try PackageID("shop"), v110 = try SemanticVersion("1.1.0")
            #expect(failed.version == v110 && failed.why == "revoked" && failed.token == cohorts.token(shop, v110))
            #expect(sent.items.contains { $0.role == .active && $0.version == (try! SemanticVersion("1.0.0")) && $0.state == "confirmed" })
        }
    }

    @Test("a trial the container rolled back is reported failed with the reason's word, never its detail")
    func judgedTrialReportsItsReason() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try RolloutRelease(folder: folder)
            try release.publish(try release.catalog(serial: 1, released: ["1.0.0"]))
            let store = try release.store("store")
            _ = try await release.updater(store).run()
            // The first version may already be confirmed (nothing to fall back to otherwise): confirm it if not.
            if try store.trialVersion(of: PackageID("shop")) != nil { try store.confirm(PackageID("shop")) }
            try release.publish(try release.catalog(serial: 2, released: ["1.0.0", "1.1.0"]))
            #expect(try await release.updater(store).run().outcomes.first?.to == "1.1.0")
            let shop = try PackageID("shop"), v110 = try SemanticVersion("1.1.0")
            #expect(try store.rollBackTrial(shop, version: v110, because: .scriptError("TypeError: card is undefined")) == .rolledBack(serving: try SemanticVersion("1.0.0")))
            _ = try await release.updater(store).run()
            let headers = try #require(release.origin.requests.last { $0.url.hasSuffix("/catalog.json") }?.headers)
            let raw = try #require(headers["Satchel-Report"])
            let sent = try DeviceReport.parse(channel: headers["Satchel-Channel"], report: raw)
            let failed = try #require(sent.items.first { $0.role == .failed })
            #expect(failed.version == v110 && failed.why == "script-error")
            #expect(!raw.contains("TypeError") && !raw.contains("card"), "the detail stays on the device: \(raw)")
        }
    }

    @Test("channels: the store follows the channel it was given, from channels/<name>/catalog.json, and remembers it")
    func channels() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try RolloutRelease(folder: folder)
            try release.publish(try release.catalog(serial: 1, released: ["1.0.0"]))
            try release.publish(try release.catalog(serial: 1, released: ["1.0.0", "1.1.0"], prefix: "../../"), channel: "beta")
            let store = try release.store("store")
            let report = try await release.updater(store, channel: "beta").run()
            #expect(report.catalog.url == "https://cdn.example/releases/channels/beta/catalog.json" && report.outcomes.first?.to == "1.1.0")
            let listed = try store.list().first?.channel
            #expect(store.channel == "beta" && listed == "beta")
            // No channel given: the remembered one.
            let next = try await release.updater(store).run()
            #expect(next.channel.name == "beta" && next.catalog.url.hasSuffix("/channels/beta/catalog.json"))
        }
    }

    @Test("outside a rollout of the only new version: the device reports the release offered and its cohort, and keeps a partial download of it")
    func outsideReportsOffered() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try RolloutRelease(folder: folder)
            try release.publish(try release.catalog(serial: 1, released: [], rollouts: [("1.1.0", 0, .staged)]))
            let store = try release.store("store")
            let partial = store.layout.root + "/downloads/\(release.entries["1.1.0"]!.sha256).part"
            try FileManager.default.createDirectory(atPath: store.layout.root + "/downloads", withIntermediateDirectories: true)
            try Data("half".utf8).write(to: URL(fileURLWithPath: partial))
            let outcome = try #require(try await release.updater(store).run().outcomes.first)
            #expect(outcome.decision == .outsideRollout && outcome.to == "1.0.0" && outcome.release == "1.1.0")
            #expect(FileManager.default.fileExists(atPath: partial), "a staged version's partial download is not stale")
            _ = try await release.updater(store).run()
            let headers = try #require(release.origin.requests.last { $0.url.hasSuffix("/catalog.json") }?.headers)
            let sent = try DeviceReport.parse(channel: headers["Satchel-Channel"], report: try #require(headers["Satchel-Report"]))
            let offered = try #require(sent.items.first { $0.role == .offered })
            #expect(offered.version == (try SemanticVersion("1.1.0")) && offered.cohort == release.cohort(store))
        }
    }

    @Test("a catalog older than the last one accepted is refused as a replay, and changes nothing")
    func replay() async throws {
        try await withTemporaryFolder { folder async throws in
            let release = try RolloutRelease(folder: folder)
            try release.publish(try release.catalog(serial: 5, released: ["1.0.0"], rollouts: [("1.1.0", 1000, .halted)]))
            let store = try release.store("store")
            #expect(try await release.updater(store).run().outcomes.first?.decision == .halted)
            // The catalog from before the halt, replayed (validly signed, unexpired).
            try release.publish(try release.catalog(serial: 4, released: ["1.0.0", "1.1.0"]))
            let before = try treeSnapshot(store.layout.root) { $0 == "lock" || $0.hasPrefix("downloads") }
            await #expect(throws: UpdateError.catalogReplayed(url: "https://cdn.example/releases/catalog.json", serial: 4, last: 5)) {
                try await release.updater(store).run()
            }
            #expect(try treeSnapshot(store.layout.root) { $0 == "lock" || $0.hasPrefix("downloads") } == before)
        }
    }
}
