import Foundation
import SatchelCore
import SatchelEngine
import SatchelHTTP
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

    @Test("the handlers take messages only from frames of the app's origins (a foreign frame inside an app page sees them too)", arguments: [
        (FrameOrigin(scheme: "satchel", host: "m.shop.com", port: 0), true),
        (FrameOrigin(scheme: "SATCHEL", host: "M.Shop.com", port: 0), true),
        (FrameOrigin(scheme: "https", host: "m.shop.com", port: 443), true),
        (FrameOrigin(scheme: "https", host: "m.shop.com", port: 8443), false),
        (FrameOrigin(scheme: "https", host: "ads.example", port: 0), false),
        (FrameOrigin(scheme: "http", host: "m.shop.com", port: 0), false),
        (FrameOrigin(scheme: "satchel", host: "m.shop.com.evil.example", port: 0), false),
    ])
    func framesOfTheAppOnly(_ case: (origin: FrameOrigin, admitted: Bool)) throws {
        let engine = try ResourceEngine(source: NoPackages())
        let setup = try #require(PageSetup(hook: HookScript.Configuration(origins: ["satchel://m.shop.com", "https://m.shop.com"]), engine: engine))
        #expect(setup.admits(`case`.origin) == `case`.admitted, "\(`case`.origin)")
        let layer = RequestLayer(
            loader: ResourceLoader(engine: engine, fetcher: NoFetcher(), policy: NetworkPolicy(allowedHosts: [])),
            configuration: .webKit(hook: HookScript.Configuration(origins: ["satchel://m.shop.com", "https://m.shop.com"]), cookies: nil))
        let message = BodyMessage(id: "f1", base64: "", contentType: nil, method: nil)
        if `case`.admitted {
            try layer.storeBody(message: message, from: `case`.origin)
        } else {
            #expect(throws: BodyMessageError.foreignFrame(`case`.origin)) { try layer.storeBody(message: message, from: `case`.origin) }
        }
    }
}

private struct NoFetcher: NetworkFetcher {
    func fetch(
        _ request: ResourceRequest, timeouts: FetchTimeouts, on executor: any AnswerExecutor,
        completion: @escaping @Sendable (Result<ResourceResponse, any Error>) -> Void
    ) -> (any FetchHandle)? {
        executor.execute { completion(.failure(FetchError.connectionFailed("none"))) }
        return nil
    }
}

