import Foundation
import SatchelCore
import SatchelEngine
import SatchelTestSupport
@testable import SatchelHost
import Testing

@Suite("The one page set-up both WebKit adapters install")
struct PageSetupTests {
    struct NoPackages: PackageSource {
        func servedPackages() throws -> [ServedPackage] { [] }
        func changeToken() -> [Int64] { [0] }
        func pin(_ packages: [ServedPackage]) throws -> any Sendable { 0 }
    }

    @Test("defaults come from the engine (the proof secret, the cookie endpoint, the bridge); names and origins from the app's configuration")
    func completed() throws {
        let engine = try ResourceEngine(source: NoPackages())
        let setup = try #require(PageSetup(hook: HookScript.Configuration(origins: ["satchel://m.shop.com", "https://m.shop.com"]), engine: engine))
        #expect(setup.hook.proofSecret == engine.bodyProofSecret)
        #expect(setup.hook.cookieEndpoint == PageCookies.path)
        #expect(setup.bodyHandlerName == "satchelBody" && setup.bridgeHandlerName == PageSetup.defaultBridgeHandler)
        #expect(setup.allowList == ["satchel://m.shop.com/*", "https://m.shop.com/*"])
        #expect(setup.script == HookScript.render(setup.hook))
        #expect(setup.script.contains(try #require(engine.bodyProofSecret).text))

        // An app that names its handlers gets those names in both adapters (the Apple one hard-coded satchelBody).
        var custom = HookScript.Configuration(origins: ["satchel://m.shop.com"], messageHandler: "shopBodies")
        custom.bridgeHandler = "shopBridge"
        let named = try #require(PageSetup(hook: custom, engine: engine))
        #expect(named.bodyHandlerName == "shopBodies" && named.bridgeHandlerName == "shopBridge")
        #expect(named.script.contains(#""messageHandler":"shopBodies""#) && named.script.contains(#""bridgeHandler":"shopBridge""#))
        #expect(PageSetup(hook: nil, engine: engine) == nil)
    }
}
