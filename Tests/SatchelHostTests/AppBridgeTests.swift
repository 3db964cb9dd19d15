import Foundation
import SatchelCore
@testable import SatchelHost
import Testing

@Suite("The JS bridge's native half: proofs, handlers, replies")
struct AppBridgeTests {
    let secret = BodyProofSecret.random()

    func check() -> BodyProofCheck {
        let used = Locked<Set<String>>([])
        return BodyProofCheck(secret: secret, now: { Int64(Date().timeIntervalSince1970 * 1000) }, claimNonce: { nonce in used.withLock { $0.insert(nonce).inserted } })
    }

    func token(_ id: String, _ name: String, _ params: String, secret: BodyProofSecret? = nil) -> String {
        BodyProof.make(secret: secret ?? self.secret, channel: .bridge, binding: "\(id)\n\(name)\n\(params)", time: Int64(Date().timeIntervalSince1970 * 1000),
            nonce: "n" + UUID().uuidString.replacingOccurrences(of: "-", with: ""))
    }

    func reply(_ text: String) throws -> BridgeValue { try BridgeValue(json: text) }

    @Test("JSON values round-trip, whole numbers as integers, keys sorted")
    func values() throws {
        let value: BridgeValue = ["b": [1, 2.5, "x", true, nil], "a": ["n": -3]]
        #expect(value.json == #"{"a":{"n":-3},"b":[1,2.5,"x",true,null]}"#)
        #expect(try BridgeValue(json: value.json) == value)
        #expect(try BridgeValue(json: "\"é\\u2028\"") == .string("é\u{2028}"))
        #expect(try BridgeValue(json: "null") == .null)
        #expect(throws: (any Error).self) { try BridgeValue(json: "{") }
    }

    @Test("a call with the hook's proof reaches its handler and the reply carries the result as JSON text")
    func answered() async throws {
        let bridge = AppBridge(proofCheck: check())
        bridge.register("add") { params in .number((params["a"]?.number ?? 0) + (params["b"]?.number ?? 0)) }
        let params = #"{"a":2,"b":40}"#
        let answer = try reply(await bridge.receive(id: "c1", name: "add", params: params, token: token("c1", "add", params)))
        #expect(answer == ["ok": true, "result": "42"])
    }

    @Test("failures carry their code: no handler, the handler's own error, a forged or replayed proof, a malformed message")
    func failures() async throws {
        let bridge = AppBridge(proofCheck: check())
        bridge.register("fail") { _ in throw BridgeError("card declined") }
        bridge.register("crash") { _ in throw CocoaError(.fileNoSuchFile) }
        func code(_ text: String) throws -> (String?, String?) { let value = try reply(text); return (value["code"]?.string, value["message"]?.string) }
        #expect(try code(await bridge.receive(id: "1", name: "nope", params: "null", token: token("1", "nope", "null"))).0 == "no-handler")
        #expect(try code(await bridge.receive(id: "2", name: "fail", params: "null", token: token("2", "fail", "null"))) == ("handler-error", "card declined"))
        #expect(try code(await bridge.receive(id: "3", name: "crash", params: "null", token: token("3", "crash", "null"))).0 == "handler-error")
        #expect(try code(await bridge.receive(id: "4", name: "fail", params: "null", token: nil)).0 == "forbidden")
        #expect(try code(await bridge.receive(id: "5", name: "fail", params: "null", token: token("5", "fail", "null", secret: .random()))).0 == "forbidden")
        #expect(try code(await bridge.receive(id: "6", name: "fail", params: "1", token: token("6", "fail", "null"))).0 == "forbidden", "params not the ones proven")
        let once = token("7", "fail", "null")
        #expect(try code(await bridge.receive(id: "7", name: "fail", params: "null", token: once)).0 == "handler-error")
        #expect(try code(await bridge.receive(id: "7", name: "fail", params: "null", token: once)).0 == "forbidden", "a replayed message")
        #expect(try code(await bridge.receive(id: nil, name: "fail", params: "null", token: nil)).0 == "bad-message")
        #expect(try code(await bridge.receive(id: "8", name: "fail", params: "{", token: token("8", "fail", "{"))).0 == "bad-message")
    }

    @Test("a thousand calls at once are each answered once, with their own result")
    func concurrent() async throws {
        let bridge = AppBridge(proofCheck: check())
        bridge.register("echo") { params in
            try? await Task.sleep(for: .milliseconds(Int.random(in: 0...5)))
            return params
        }
        let replies = try await withThrowingTaskGroup(of: (Int, BridgeValue).self) { group in
            for n in 0..<1000 {
                let params = "{\"n\":\(n)}"
                let proof = token("c\(n)", "echo", params)
                group.addTask { (n, try BridgeValue(json: await bridge.receive(id: "c\(n)", name: "echo", params: params, token: proof))) }
            }
            return try await group.reduce(into: [Int: BridgeValue]()) { $0[$1.0] = $1.1 }
        }
        #expect(replies.count == 1000)
        #expect(replies.allSatisfy { n, reply in reply == ["ok": true, "result": .string("{\"n\":\(n)}")] })
    }

    @Test("the scripts native code runs in the page, and which views it may run them in")
    func scripts() {
        #expect(AppBridge.eventScript(name: "network", detail: ["online": false])
            == #"window.__satchelHook && window.__satchelHook.bridgeEvent && window.__satchelHook.bridgeEvent("network", {"online":false});"#)
        #expect(AppBridge.invocationScript(name: "cart\"", params: [1]).contains(#"bridgeInvoke("cart\"", [1])"#))
        #expect(AppBridge.mayCall(url: "satchel://m.shop.com/cart", origins: ["satchel://m.shop.com"]))
        #expect(!AppBridge.mayCall(url: "https://evil.example/", origins: ["satchel://m.shop.com"]))
        #expect(!AppBridge.mayCall(url: nil, origins: ["satchel://m.shop.com"]))
    }
}
