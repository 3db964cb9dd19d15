import Foundation
import Testing
import SatchelBundle
import SatchelCore
@testable import SatchelStore
import SatchelTestSupport

@Suite("A container's verdicts on trials: reasons kept on the failed version, verdicts on a past trial change nothing")
struct TrialRecordsTests {
    @Test("a rollback with a reason marks the version failed with it, persisted; list shows it; confirming is refused after")
    func rollbackWithReason() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            var store = try PackageStore(root: folder + "/store")
            _ = try store.install(bundle: factory.bundle(version: "1.0.0"))
            try store.confirm(id("shop"))
            _ = try store.install(bundle: factory.bundle(version: "1.1.0"))
            #expect(try store.trialVersion(of: id("shop")) == v("1.1.0"))
            let failure = TrialFailure.scriptError("TypeError: boom")
            #expect(try store.rollBackTrial(id("shop"), version: v("1.1.0"), because: failure) == .rolledBack(serving: v("1.0.0")))
            store = try PackageStore(root: folder + "/store")
            let state = try #require(try store.state(of: id("shop")))
            #expect(state.failureReason(of: v("1.1.0")) == failure)
            #expect(try store.list().first?.failureReasons == [FailureReasonEntry(version: "1.1.0", why: "script-error", detail: "TypeError: boom")])
            let json = String(decoding: try FileSystem.read(folder + "/store/packages/shop/state.json"), as: UTF8.self)
            #expect(json.contains(#""failureReasons":[{"detail":"TypeError: boom","version":"1.1.0","why":"script-error"}]"#))
            // A second verdict on the same trial (another view, late) changes nothing.
            let before = try snapshot(folder + "/store")
            #expect(try store.rollBackTrial(id("shop"), version: v("1.1.0"), because: .crashed) == .notOnTrial)
            #expect(try store.confirmTrial(id("shop"), version: v("1.1.0")) == false)
            #expect(try snapshot(folder + "/store") == before)
        }
    }

    @Test("a first install that fails its trial has nothing to fall back to: failed with the reason, still served, not judged again")
    func noFallback() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let store = try PackageStore(root: folder + "/store")
            _ = try store.install(bundle: factory.bundle(version: "1.0.0"))
            #expect(try store.trialVersion(of: id("shop")) == v("1.0.0"))
            #expect(try store.rollBackTrial(id("shop"), version: v("1.0.0"), because: .crashed) == .failedWithoutFallback)
            let state = try #require(try store.state(of: id("shop")))
            #expect(state.active == v("1.0.0") && state.failureReason(of: v("1.0.0")) == .crashed)
            #expect(try store.trialVersion(of: id("shop")) == nil)
            #expect(try store.confirmTrial(id("shop"), version: v("1.0.0")) == false)
            #expect(try store.rollBackTrial(id("shop"), version: v("1.0.0"), because: .unresponsive) == .notOnTrial)
        }
    }

    @Test("a confirmation ends the trial; a failure without a reason reads as trial; choosing a failed version again clears its reason")
    func confirmAndDefaults() throws {
        try withTemporaryFolder { folder throws in
            let factory = BundleFactory(folder: folder)
            let store = try PackageStore(root: folder + "/store", configuration: StoreConfiguration(maxTrialLaunches: 1))
            _ = try store.install(bundle: factory.bundle(version: "1.0.0"))
            #expect(try store.confirmTrial(id("shop"), version: v("1.0.0")))
            #expect(try store.trialVersion(of: id("shop")) == nil)
            _ = try store.install(bundle: factory.bundle(version: "1.1.0"))
            _ = try store.beginLaunch()
            _ = try store.beginLaunch()
            #expect(try store.list().first?.failureReasons == [FailureReasonEntry(version: "1.1.0", why: "trial", detail: nil)])
            _ = try store.install(bundle: factory.bundle(version: "1.2.0"))
            _ = try store.rollBackTrial(id("shop"), version: v("1.2.0"), because: .crashed)
            #expect(try store.state(of: id("shop"))?.failureReason(of: v("1.2.0")) == .crashed)
            // Chosen again explicitly: no longer failed, so no reason either.
            try store.activate(id("shop"), v("1.2.0"))
            #expect(try store.state(of: id("shop"))?.failureReasons.isEmpty == true)
        }
    }

    @Test("a reason that names a version that has not failed, or is not a word, is dropped: the state stays readable")
    func strayReasons() throws {
        let good = #"{"active":"1.0.0","failed":["1.1.0"],"failureReasons":[{"version":"1.1.0","why":"crashed"}],"history":["1.0.0"],"launches":0}"#
        #expect(try PackageState.decode(Array(good.utf8), path: "s").failureReason(of: v("1.1.0")) == .crashed)
        let stray = #"{"active":"1.0.0","failureReasons":[{"version":"1.1.0","why":"crashed"}],"history":["1.0.0"],"launches":0}"#
        let strayState = try PackageState.decode(Array(stray.utf8), path: "s")
        #expect(strayState.failureReasons.isEmpty && strayState.failureReason(of: v("1.1.0")) == nil)
        let notAWord = #"{"active":"1.0.0","failed":["1.1.0"],"failureReasons":[{"version":"1.1.0","why":"Crash!"}],"history":["1.0.0"],"launches":0}"#
        #expect(try PackageState.decode(Array(notAWord.utf8), path: "s").failureReason(of: v("1.1.0")) == .trial)
    }
}
