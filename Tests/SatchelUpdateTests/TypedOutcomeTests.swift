import Foundation
import SatchelCore
import SatchelStore
import SatchelTestSupport
import Testing
@testable import SatchelUpdate

/// Issue 49, part 5: outcomes and the updater's record hold typed values; what they write is the words they wrote
/// as strings (`satchel update --json` end to end: SatchelCLITests' UpdateJSONTests).
@Suite("Typed update outcomes and failure kinds")
struct TypedOutcomeTests {
    static let installID = String(repeating: "ab", count: 32)

    /// A record as a runtime from before typed failures wrote it (sorted keys, no spaces, slashes escaped), with a word
    /// this runtime does not know, as a newer one might write.
    static let recordOnDisk = #"""
        {"failures":{"shop 1.0.0":"revoked","shop 1.1.0":"verification","shop 1.2.0":"install-store","shop 1.3.0":"install-quota"},"installID":"\#(installID)","serials":{"https:\/\/cdn.example\/catalog.json":42}}
        """#

    @Test("updater.json's failures read as cases, an unknown word as .other; written back byte for byte")
    func recordRoundTrips() throws {
        try withTemporaryFolder { folder in
            try Data(Self.recordOnDisk.utf8).write(to: URL(fileURLWithPath: folder + "/" + UpdaterRecord.fileName))
            let record = try UpdaterRecord.load(from: folder)
            // Not the fresh record `load` makes of one it cannot read: the install id (so the cohorts) is kept.
            #expect(record.installID == Self.installID)
            #expect(record.failures == [
                "shop 1.0.0": .revoked, "shop 1.1.0": .verification, "shop 1.2.0": .installStore, "shop 1.3.0": .other("install-quota"),
            ])
            try record.save(to: folder)
            #expect(String(decoding: try readBytes(folder + "/" + UpdaterRecord.fileName), as: UTF8.self) == Self.recordOnDisk)
        }
    }

    @Test("a failure's word: the cases map to and from it, and .other never holds a word a case has")
    func failureWords() throws {
        for (failure, word) in [(UpdaterRecord.Failure.revoked, "revoked"), (.verification, "verification"), (.installStore, "install-store")] {
            #expect(failure.rawValue == word && UpdaterRecord.Failure(rawValue: word) == failure)
            #expect(String(decoding: try JSONEncoder().encode([failure]), as: UTF8.self) == "[\"\(word)\"]")
        }
        #expect(UpdaterRecord.Failure(rawValue: "install-quota") == .other("install-quota"))
        // Made by hand with a known word, it is that case (as it would be once saved and read back).
        #expect(UpdaterRecord.Failure.other("revoked") == .revoked)
        #expect(Set([UpdaterRecord.Failure.other("revoked"), .revoked]).count == 1)
        #expect(try JSONDecoder().decode([UpdaterRecord.Failure].self, from: Data(#"["", "verification"]"#.utf8)) == [.other(""), .verification])
    }

    @Test("the device report gives an unknown recorded word as it was written")
    func reportKeepsUnknownWords() throws {
        let state = PackageState(active: try SemanticVersion("1.0.0"), trial: nil, launches: 0, history: [try SemanticVersion("1.0.0")])
        let version = try SemanticVersion("1.1.0")
        #expect(DeviceReporter.why(version, state: state, recorded: .other("install-quota")) == "install-quota")
        #expect(DeviceReporter.why(version, state: state, recorded: .installStore) == "install-store")
        #expect(DeviceReporter.why(version, state: state, recorded: nil) == "trial")
    }

    @Test("failureKind: verification for what the download or its checks refused, install-store for the store's own, nothing for the network")
    func failureKinds() {
        let url = "https://cdn.example/shop-1.1.0.zip"
        #expect(Updater.failureKind(.checksumMismatch(url: url, expected: "a", actual: "b")) == .verification)
        #expect(Updater.failureKind(.content(url: url, "no object")) == .verification)
        #expect(Updater.failureKind(.store(.bundleChecksumMismatch(expected: "a", actual: "b"))) == .verification)
        #expect(Updater.failureKind(.store(.io(operation: "rename", path: "/x", errno: 5))) == .installStore)
        #expect(Updater.failureKind(.httpStatus(url: url, status: 503)) == nil)
        #expect(Updater.failureKind(.cancelled) == nil)
    }

    @Test("an outcome's JSON: via and each fallback or refusal as the words it printed as a string")
    func outcomeEncoding() throws {
        var outcome = UpdateOutcome(id: "shop", action: .installed, from: "1.0.0", to: "1.1.0", via: .full, downloadedBytes: 7, resumed: false)
        let objects = UpdateError.checksumMismatch(url: "https://cdn.example/objects/ab/abcd", expected: "abcd", actual: "ef01")
        let delta = StoreError.baseFileDamaged(id: "shop", version: "1.0.0", path: "app.js")
        let refusal = DiffRefusal.sourceSize(url: "https://cdn.example/diffs/x", declared: 3, held: 4)
        let index = DiffRefusal.download(.httpStatus(url: "https://cdn.example/diffs.json.gz", status: 404))
        outcome.objectsFallback = objects
        outcome.deltaFallback = delta
        outcome.diffRefusals = [refusal]
        outcome.diffIndexFallback = index
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json = try #require(try JSONSerialization.jsonObject(with: encoder.encode(outcome)) as? [String: Any])
        #expect(json["via"] as? String == "full")
        #expect(json["objectsFallback"] as? String == objects.description)
        #expect(json["deltaFallback"] as? String == delta.description)
        #expect(json["diffRefusals"] as? [String] == [refusal.description])
        #expect(json["diffIndexFallback"] as? String == index.description)
        // Absent fields stay absent, as the synthesized encoding left them.
        #expect(Set(json.keys) == ["id", "action", "from", "to", "via", "downloadedBytes", "resumed", "objectsFallback", "deltaFallback", "diffRefusals", "diffIndexFallback"])
        for (via, word) in [(UpdateOutcome.Via.objects, "objects"), (.delta, "delta"), (.full, "full")] {
            #expect(String(decoding: try JSONEncoder().encode([via]), as: UTF8.self) == "[\"\(word)\"]")
        }
    }
}
