import Foundation
import SatchelCore
@testable import SatchelEngine
import SatchelTestSupport
import Testing

@Suite("The JavaScript body hook, run under node, restored by BodyRestorer")
struct HookScriptTests {
    struct Run: Decodable {
        struct Sent: Decodable {
            let label: String
            let via: String
            let method: String?
            let url: String
            let headers: [[String]]
            let body: String?
        }
        struct Stored: Decodable {
            let base64: String
            let contentType: String?
            let method: String?
        }
        let sent: [Sent]
        let stored: [String: Stored]
        let intended: [[String?]]
    }

    static let harness = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Resources/hook-harness.js").path

    static let secret = BodyProofSecret.random()

    /// A check against the hook's secret with a real clock and a ledger of used nonces. Its proofs live an hour, not
    /// the default two minutes: the harness makes them once, and a busy machine may take minutes to check them all
    /// (a full run under load took 161 s); freshness itself is the stale proof's case below, two hours old.
    static func proofCheck(_ secret: BodyProofSecret = Self.secret) -> BodyProofCheck {
        let used = Locked(Set<String>())
        return BodyProofCheck(
            secret: secret, maxAge: .seconds(3600), now: { Int64((Date().timeIntervalSince1970 * 1000).rounded()) },
            claimNonce: { nonce in used.withLock { $0.insert(nonce).inserted } })
    }

    func runHarness() async throws -> Run {
        try await withTemporaryFolder { folder async throws in
            let hook = HookScript.render(HookScript.Configuration(origins: ["https://m.shop.com", "satchel://m.shop.com"], proofSecret: Self.secret))
            try hook.write(toFile: folder + "/hook.js", atomically: true, encoding: .utf8)
            let node = ["/usr/bin/node", "/usr/local/bin/node"].first { FileManager.default.isExecutableFile(atPath: $0) }
            let outcome = try await runProcess(try #require(node, "node is required (tools/setup installs nodejs)"), [Self.harness, folder + "/hook.js"])
            try #require(outcome.status == 0, "\(outcome.stderr)")
            return try JSONDecoder().decode(Run.self, from: Data(outcome.stdout.utf8))
        }
    }

    @Test("every body kind reaches the network byte-exact through its channel; GET and other origins are untouched")
    func bodies() async throws {
        let run = try await runHarness()
        var store = run.stored.mapValues { StoredBody(bytes: Array(Data(base64Encoded: $0.base64)!), contentType: $0.contentType, method: $0.method) }
        let restorer = BodyRestorer()
        let check = Self.proofCheck()
        var channels: [String: BodyChannel] = [:]
        for (sent, intended) in zip(run.sent, run.intended) {
            #expect(sent.label == intended[0])
            var headers = HTTPHeaders()
            for pair in sent.headers { headers.add(pair[0], pair[1]) }
            // What WebKit hands native code: the request without its body.
            let request = ResourceRequest(method: RequestMethod(sent.method ?? "POST"), url: sent.url, headers: headers)
            // The JavaScript HMAC-SHA256 must agree with swift-crypto's, or every body is refused here.
            let (restored, channel) = try restorer.restore(request, takeStoredBody: { store.removeValue(forKey: $0) }, proof: check)
            channels[sent.label] = channel
            let expectedType = intended[2]
            switch sent.label {
            case "xhr get untouched", "other origin untouched":
                #expect(channel == .none, "\(sent.label)")
                #expect(!sent.headers.contains { $0[0].lowercased().hasPrefix("x-satchel") })
            case "fetch formdata file, WebKitGTK serialiser":
                // The hook wrote the parts itself: byte for byte what node's serialiser (the oracle) wrote, but for the
                // boundary, which is random in both.
                let type = try #require(restored.headers["Content-Type"])
                let nativeType = try #require(intended[2])
                let prefix = "multipart/form-data; boundary="
                #expect(type.hasPrefix(prefix + "----SatchelFormBoundary"), "the hook's own serialiser ran: \(type)")
                #expect(nativeType.hasPrefix(prefix) && nativeType != type, "\(nativeType)")
                let ours = Array(type.dropFirst(prefix.count).utf8)
                let theirs = Array(nativeType.dropFirst(prefix.count).utf8)
                let native = Array(Data(base64Encoded: try #require(intended[1]))!)
                let expected = native.replacing(theirs, with: ours)
                #expect(expected != native)
                #expect(restored.body == expected, "\(String(decoding: restored.body ?? [], as: UTF8.self))")
                #expect(channel == .bodyStore)
            case "form multipart submit()", "fetch formdata file":
                let type = try #require(restored.headers["Content-Type"])
                #expect(type.hasPrefix("multipart/form-data; boundary="), "\(sent.label): \(type)")
                let boundary = String(type.split(separator: "=", maxSplits: 1)[1])
                let text = String(decoding: try #require(restored.body), as: UTF8.self)
                #expect(text.hasPrefix("--" + boundary + "\r\n"))
                #expect(text.hasSuffix("--" + boundary + "--\r\n"))
                #expect(restored.method == "POST")
                // The file's 256 bytes arrive intact inside the multipart body.
                #expect(try #require(restored.body).firstRange(of: Array(0...255) as [UInt8]) != nil, "\(sent.label)")
            default:
                let bytes = Array(Data(base64Encoded: try #require(intended[1]))!)
                #expect(restored.body == bytes, "\(sent.label): \(restored.body?.count ?? -1) bytes, wanted \(bytes.count)")
                if let expectedType, !expectedType.isEmpty { #expect(restored.headers["Content-Type"] == expectedType, "\(sent.label)") }
                // A body the page sent without a type is restored without one (not application/octet-stream).
                if expectedType == "" { #expect(restored.headers["Content-Type"] == nil, "\(sent.label): \(restored.headers["Content-Type"] ?? "")") }
                #expect(restored.headers.filter { $0.name.lowercased().hasPrefix("x-satchel") }.isEmpty)
            }
        }
        #expect(channels["xhr text"] == .header)
        #expect(channels["xhr json unicode"] == .header)
        #expect(channels["xhr big text"] == .bodyStore)
        #expect(channels["xhr arraybuffer"] == .bodyStore)
        #expect(channels["fetch 5 MB"] == .bodyStore)
        #expect(channels["fetch empty string"] == .header)
        #expect(channels["beacon"] == .header)
        #expect(channels["form urlencoded submit event"] == .formQuery)
        #expect(channels["form clobbered, line breaks"] == .formQuery)
        #expect(channels["form multipart submit()"] == .bodyStore)
        #expect(store.isEmpty, "every stored body was claimed once")
        // A beacon is a keepalive fetch, marked so that a WebKit adapter lets it reach the network after a stop.
        let beacon = try #require(run.sent.first { $0.label == "beacon" })
        #expect(beacon.headers.contains { $0[0].lowercased() == "x-satchel-keepalive" && $0[1] == "1" }, "\(beacon.headers)")
        #expect(run.sent.filter { $0.label != "beacon" }.allSatisfy { !$0.headers.contains { $0[0].lowercased() == "x-satchel-keepalive" } })
    }

    @Test("a proof from another launch, a replayed proof, a tampered body and no proof at all are refused, and nothing is taken from the store")
    func proofsRefused() async throws {
        let run = try await runHarness()
        let restorer = BodyRestorer()
        let requests = run.sent.filter { $0.label == "xhr text" || $0.label == "form urlencoded submit event" || $0.label == "xhr big text" }
        #expect(requests.count == 3)
        for sent in requests {
            var headers = HTTPHeaders()
            for pair in sent.headers { headers.add(pair[0], pair[1]) }
            let request = ResourceRequest(method: RequestMethod(sent.method ?? "POST"), url: sent.url, headers: headers)
            var taken = 0
            let take: (String) -> StoredBody? = { _ in taken += 1; return StoredBody(bytes: []) }
            func refused(_ request: ResourceRequest, _ check: BodyProofCheck, _ what: String) {
                do {
                    _ = try restorer.restore(request, takeStoredBody: take, proof: check)
                    Issue.record("\(sent.label): \(what) must be refused")
                } catch {
                    #expect(error.status == 403, "\(sent.label): \(what): \(error)")
                }
            }
            refused(request, Self.proofCheck(BodyProofSecret.random()), "a proof made from another launch's secret")
            let check = Self.proofCheck()
            _ = try restorer.restore(request, takeStoredBody: take, proof: check)
            refused(request, check, "the same proof twice")
            var stripped = request
            stripped.headers.remove("X-Satchel-Token")
            stripped.url = stripped.url.replacingOccurrences(of: #"&SATCHEL_TOKEN=[^&]*"#, with: "", options: .regularExpression)
            #expect(stripped != request, "\(sent.label): the proof was there to strip")
            refused(stripped, Self.proofCheck(), "no proof")
            var tampered = request
            if let body = request.headers["X-Satchel-Body"] { tampered.headers.set("X-Satchel-Body", body + "%21") }
            tampered.url = tampered.url.replacingOccurrences(of: "POST_DATA=", with: "POST_DATA=x%3D1%26")
            tampered.url = tampered.url.replacingOccurrences(of: "SATCHEL_BODY_ID=", with: "SATCHEL_BODY_ID=other")
            tampered.headers.set("X-Satchel-Body-Id", "other")
            if request.headers["X-Satchel-Body-Id"] == nil { tampered.headers.remove("X-Satchel-Body-Id") }
            #expect(tampered != request, "\(sent.label): the body was there to change")
            refused(tampered, Self.proofCheck(), "another body under the same proof")
            let usesStore = request.headers["X-Satchel-Body-Id"] != nil || request.url.contains("SATCHEL_BODY_ID=")
            #expect(taken == (usesStore ? 1 : 0), "\(sent.label): only the proven request took a stored body")
        }
        // A stale proof: made two hours ago.
        let old = BodyProof.make(secret: Self.secret, channel: .header, binding: "hi", time: Int64(Date().timeIntervalSince1970 * 1000) - 7_200_000, nonce: "AAAAAAAAAAAA")
        do {
            _ = try restorer.restore(ResourceRequest(method: "POST", url: "https://m.shop.com/x", headers: ["X-Satchel-Body": "hi", "X-Satchel-Token": old]), takeStoredBody: { _ in nil }, proof: Self.proofCheck())
            Issue.record("a stale proof must be refused")
        } catch {
            #expect(error.description.contains("stale"))
        }
    }

    static let nodeHarness = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../hook-js/harness.js").standardized.path

    func runNode(_ arguments: [String]) async throws -> String {
        let node = ["/usr/bin/node", "/usr/local/bin/node"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let outcome = try await runProcess(try #require(node, "node is required (tools/setup installs nodejs)"), [Self.nodeHarness] + arguments)
        try #require(outcome.status == 0, "\(outcome.stderr)")
        return outcome.stdout
    }

    @Test("the node tests' harness (Tests/hook-js) assembles Hook/ into exactly the script HookScript.render ships")
    func nodeHarnessRendersTheSameScript() async throws {
        let configuration = HookScript.Configuration(
            origins: ["https://m.shop.com", "satchel://m.shop.com"], proofSecret: Self.secret, cookieEndpoint: "/_satchel/cookies",
            bridgeHandler: "satchelBridge", bridgeTimeout: .milliseconds(1500))
        await #expect(try runNode(["render", configuration.json]) == HookScript.render(configuration))
        let defaults = try await JSONSerialization.jsonObject(with: Data(try runNode(["defaults"]).utf8)) as? NSDictionary
        let swiftDefaults = try JSONSerialization.jsonObject(with: Data(HookScript.Configuration().json.utf8)) as? NSDictionary
        #expect(defaults != nil && defaults == swiftDefaults, "the harness's defaults are not HookScript.Configuration's")
    }

    @Test("the hook is the wrapper with every feature file, in order, and the configuration object last")
    func assembled() {
        let script = HookScript.render(HookScript.Configuration(origins: ["https://a.example"]))
        #expect(script.hasPrefix("/* Satchel body hook"))
        let starts = HookScript.files.map { script.range(of: HookScript.hookFile($0))?.lowerBound }
        #expect(starts.allSatisfy { $0 != nil }, "a feature file is missing from the script")
        #expect(starts.compactMap { $0 } == starts.compactMap { $0 }.sorted(), "the feature files are out of order")
        #expect(!script.contains(HookScript.configurationSlot) && !script.contains("@features"))
    }

    @Test("the rendered script carries only its configuration object")
    func render() {
        let script = HookScript.render(HookScript.Configuration(origins: ["https://a.example"], headerThreshold: 100))
        #expect(script.contains(#""origins":["https://a.example"]"#))
        #expect(script.contains(#""headerThreshold":100"#))
        #expect(script.contains(#""queryParameter":"POST_DATA""#))
        #expect(script.hasSuffix(");\n"))
    }
}
