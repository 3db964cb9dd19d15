import Foundation
import SatchelCore
@testable import SatchelEngine
import SatchelHTTP
@testable import SatchelStore
import SatchelTestSupport
import Testing
import SatchelPublishing

@Suite("The engine and the store's change counter")
struct ChangeTokenEngineTests {
    func bundle(_ folder: String, version: String) throws -> String {
        let source = folder + "/src-\(version)"
        try makeTree(source, ["index.html": "v\(version)"])
        let options = PackOptions(id: try PackageID("shop"), version: try SemanticVersion(version), scope: try Scope(hosts: [HostPattern("m.shop.com")]))
        return try Packer.pack(source: source, options: options, outputFolder: folder + "/out").bundle
    }

    /// Past the token's freshness, so the next request reads the counter again.
    func afterFreshness() async { try? await Task.sleep(nanoseconds: PackageStore.changeTokenFreshness * 2) }

    @Test("immediate mode serves another process's activation at its next request, and a writer's whose closing bump never came")
    func anotherProcess() async throws {
        try await withTemporaryFolder { folder async throws in
            let root = folder + "/store"
            let served = try PackageStore(root: root)
            _ = try served.install(bundle: bundle(folder, version: "1.0.0"))
            _ = try served.install(bundle: bundle(folder, version: "1.1.0"))
            let engine = try ResourceEngine(source: served, configuration: EngineConfiguration(activation: .immediate))
            #expect(try await engine.get("satchel://m.shop.com/").response?.body.collect() == Array("v1.1.0".utf8))
            let generation = engine.generation
            await afterFreshness()
            #expect(engine.generation == generation, "an unchanged store must not make the engine reload")

            // Another process (a store object sharing no memory with the engine's, as the CLI beside `satchel serve`).
            let cli = try PackageStore(root: root)
            try cli.activate(try PackageID("shop"), try SemanticVersion("1.0.0"))
            await afterFreshness()
            #expect(try await engine.get("satchel://m.shop.com/").response?.body.collect() == Array("v1.0.0".utf8))

            // A writer killed after its state switch, before its closing bump: the counter stays odd, and the switch
            // is still seen.
            let killed = try PackageStore(root: root)
            try killed.beginChange()
            var state = try #require(try killed.storedState(of: try PackageID("shop")))
            try state.activate(try SemanticVersion("1.1.0"), in: killed.availability(of: try PackageID("shop")))
            try killed.writeState(state, for: try PackageID("shop"), replacing: try killed.storedState(of: try PackageID("shop")))
            await afterFreshness()
            #expect(try await engine.get("satchel://m.shop.com/").response?.body.collect() == Array("v1.1.0".utf8))
        }
    }
}
