import Foundation
import SatchelCore
import SatchelEngine
import SatchelHost
import SatchelTestSupport
import Testing

@Suite("Trial court: which version on trial serves a URL, who answered it, and what a verdict does")
struct TrialCourtTests {
    /// A store's trial side in memory: `shop` 2.0.0 on trial, 1.0.0 its fallback unless `fallback` is false.
    final class Records: TrialRecords, @unchecked Sendable {
        let lock = NSLock()
        var trial: SemanticVersion? = try! SemanticVersion("2.0.0")
        var fallback = true
        var recorded: TrialFailure?
        func trialVersion(of id: PackageID) throws -> SemanticVersion? { lock.withLock { trial } }
        func confirmTrial(_ id: PackageID, version: SemanticVersion) throws -> Bool {
            lock.withLock {
                guard trial == version else { return false }
                trial = nil
                return true
            }
        }
        func rollBackTrial(_ id: PackageID, version: SemanticVersion, because failure: TrialFailure) throws -> TrialRollbackOutcome {
            lock.withLock {
                guard trial == version else { return .notOnTrial }
                trial = nil
                recorded = failure
                return fallback ? .rolledBack(serving: try! SemanticVersion("1.0.0")) : .failedWithoutFallback
            }
        }
    }

    struct Source: PackageSource {
        let package: ServedPackage
        func servedPackages() throws -> [ServedPackage] { [package] }
        func changeToken() -> [Int64] { [0] }
        func pin(_ packages: [ServedPackage]) throws -> any Sendable { 0 }
    }

    /// shop 2.0.0 on `*.shop.dev` and m.shop.com: index.html and app.js held; /api/ network-only, /static/ offline-only.
    func court(_ folder: String, records: Records = Records()) throws -> TrialCourt {
        let root = folder + "/pkg"
        try makeTree(root, ["index.html": "<title>shop</title>", "app.js": "1"])
        let files = try ["index.html", "app.js"].map { path in
            let bytes = Array(try String(contentsOfFile: root + "/" + path, encoding: .utf8).utf8)
            let safe = try SafePath(validating: path)
            return FileRecord(path: safe, size: Int64(bytes.count), sha256: Digests.sha256Hex(bytes), mime: MIMETable.entry(for: safe).type)
        }
        let manifest = try Manifest(
            id: PackageID("shop"), version: SemanticVersion("2.0.0"), createdAt: Timestamp(secondsSinceEpoch: 0),
            scope: Scope(hosts: [HostPattern("m.shop.com"), HostPattern("*.shop.dev")]),
            routes: [try Route(prefix: "/api/", strategy: .networkOnly), try Route(prefix: "/static/", strategy: .offlineOnly)], files: files)
        let engine = try ResourceEngine(source: Source(package: ServedPackage(manifest: manifest, folder: root)))
        return TrialCourt(engine: engine, records: records)
    }

    @Test("a version on trial serves the package's pages on the custom scheme, wildcard hosts too; never the live website on https")
    func subjects() throws {
        try withTemporaryFolder { folder throws in
            let court = try court(folder)
            let subject = try #require(court.subject(for: "satchel://eu.shop.dev/index.html"))
            #expect(subject.version.description == "2.0.0" && subject.owns("satchel://eu.shop.dev/app.js") && subject.owns("satchel://m.shop.com/x"))
            #expect(court.subject(for: "https://m.shop.com/index.html") == nil)
            #expect(court.subject(for: "satchel://other.example/") == nil)
            #expect(!court.showsPackage(subject.id, url: "https://m.shop.com/"))
        }
    }

    @Test("the package answers its own files and anything offline-only; a network route's answer is the network's")
    func packageAnswers() throws {
        try withTemporaryFolder { folder throws in
            let court = try court(folder)
            #expect(court.packageAnswers("satchel://m.shop.com/index.html"))
            #expect(court.packageAnswers("satchel://m.shop.com/static/missing.css"), "a missing file under offline-only is the package's 404")
            #expect(!court.packageAnswers("satchel://m.shop.com/api/cart"))
            #expect(!court.packageAnswers("satchel://m.shop.com/missing.js"), "offline-first without the file goes to the network")
            #expect(!court.packageAnswers("https://m.shop.com/index.html"))
            // A failed load of a file the package leaves to the network is no signal at all.
            #expect(court.signal(kind: "resource", message: "", source: "satchel://m.shop.com/api/x.js", network: false, token: nil) == nil)
        }
    }

    @Test("verdicts: a confirmation, a rollback to the fallback with its reason, none to fall back to, and one that came too late")
    func carryOut() throws {
        try withTemporaryFolder { folder throws in
            let records = Records()
            let court = try court(folder, records: records)
            let subject = try #require(court.subject(for: "satchel://m.shop.com/"))
            let rolled = court.carryOut(subject, .rolledBack(.crashed))
            #expect(rolled.outcome == .rolledBack(serving: try SemanticVersion("1.0.0")) && rolled.fallbackToShow && records.recorded == .crashed)
            #expect(court.carryOut(subject, .confirmed).outcome == .alreadyDecided)
            records.trial = subject.version
            #expect(court.carryOut(subject, .confirmed).outcome == .confirmed)
            records.trial = subject.version
            records.fallback = false
            let stuck = court.carryOut(subject, .rolledBack(.unresponsive))
            #expect(stuck.outcome == .failedWithoutFallback && !stuck.fallbackToShow && stuck.serving == subject.version)
        }
    }
}
