import Foundation
import SatchelCore
import SatchelEngine
import SatchelHTTP
@testable import SatchelHost
import SatchelTestSupport
import Testing

/// An origin in memory: `/go` redirects to `/next`, anything else is an HTML page with a cookie.
private struct ScriptedOrigin: NetworkFetcher {
    func fetch(
        _ request: ResourceRequest, timeouts: FetchTimeouts, on executor: any AnswerExecutor,
        completion: @escaping @Sendable (Result<ResourceResponse, any Error>) -> Void
    ) -> (any FetchHandle)? {
        let echo = "body=\(request.body?.count ?? -1) length=\(request.headers["Content-Length"] ?? "none")"
        let response: ResourceResponse =
            request.url.hasSuffix("/echo")
            ? ResourceResponse(status: 200, headers: ["Content-Type": "text/plain"], body: .bytes(Array(echo.utf8)))
            : request.url.hasSuffix("/go")
            ? ResourceResponse(status: 302, headers: ["Location": "https://app.example/next", "Content-Length": "0"])
            : ResourceResponse(
                status: 200, headers: ["Content-Type": "text/html", "Set-Cookie": "sid=1; Path=/", "Content-Length": "13"],
                body: .bytes(Array("<p>origin</p>".utf8)))
        executor.execute { completion(.success(response)) }
        return nil
    }
}

@Suite("The request layer: what every host does around the loader, by its configuration")
struct RequestLayerTests {
    static let page = "<!doctype html><html><head><title>t</title></head><body>hi</body></html>"

    func layer(_ folder: String, _ configuration: HostConfiguration) throws -> RequestLayer {
        let root = folder + "/pkg"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        var records: [FileRecord] = []
        for (path, text) in [("index.html", Self.page), ("data.json", "{\"a\":1}")] {
            let bytes = Array(text.utf8)
            try Data(bytes).write(to: URL(fileURLWithPath: root + "/" + path))
            let safe = try SafePath(validating: path)
            records.append(FileRecord(path: safe, size: Int64(bytes.count), sha256: Digests.sha256Hex(bytes), mime: MIMETable.entry(for: safe).type))
        }
        let manifest = try Manifest(
            id: PackageID("app"), version: SemanticVersion("1.0.0"), createdAt: Timestamp(secondsSinceEpoch: 0),
            scope: Scope(hosts: [HostPattern("app.example")], pathPrefix: PathPrefix("/app/")), files: records)
        struct Source: PackageSource {
            let package: ServedPackage
            func servedPackages() throws -> [ServedPackage] { [package] }
            func changeToken() -> [Int64] { [0] }
            func pin(_ packages: [ServedPackage]) throws -> any Sendable { 0 }
        }
        let engine = try ResourceEngine(source: Source(package: ServedPackage(manifest: manifest, folder: root)))
        var policy = NetworkPolicy(allowedHosts: [try HostPattern("app.example")])
        policy.cookies = configuration.cookies
        return RequestLayer(loader: ResourceLoader(engine: engine, fetcher: ScriptedOrigin(), policy: policy), configuration: configuration)
    }

    func text(_ response: ResourceResponse) -> String {
        if case .bytes(let bytes) = response.body { return String(decoding: bytes, as: UTF8.self) }
        if case .file(let region) = response.body, let bytes = try? region.readAll() { return String(decoding: bytes, as: UTF8.self) }
        return ""
    }

    @Test("the hook goes inline only into package pages a document loads, with its ETag marked; data, fetches and network pages pass")
    func inlineHook() async throws {
        try await withTemporaryFolder { folder in
            let server = try layer(folder, .server(injectHook: true, upstreams: [], emulateBodyLoss: false))
            let page = await server.respond(to: ResourceRequest(url: "https://app.example/app/index.html", headers: ["Sec-Fetch-Dest": "document"]))
            let body = text(page.response)
            #expect(body.hasPrefix("<!doctype html><html><head><script>") && body.contains("</script><title>t</title>"))
            #expect(page.response.headers["Content-Length"] == String(Array(body.utf8).count))
            #expect(page.response.headers["ETag"]?.hasSuffix("-hook\"") == true && page.label == .offlineHit && page.fromPackage)
            // The same page fetched by a script (data, not a document), a JSON file, and a page from the network.
            let fetched = await server.respond(to: ResourceRequest(url: "https://app.example/app/index.html", headers: ["Sec-Fetch-Dest": "empty"]))
            #expect(text(fetched.response) == Self.page)
            let data = await server.respond(to: ResourceRequest(url: "https://app.example/app/data.json", headers: ["Sec-Fetch-Dest": "document"]))
            #expect(text(data.response) == "{\"a\":1}")
            let network = await server.respond(to: ResourceRequest(url: "https://app.example/elsewhere", headers: ["Sec-Fetch-Dest": "document"]))
            #expect(text(network.response) == "<p>origin</p>" && network.label == .network && !network.fromPackage)
            // Without the hook: the page as packed, and no field of the document question in the reuse key.
            let plain = try layer(folder + "/b", .server(injectHook: false, upstreams: [], emulateBodyLoss: false))
            #expect(text(await plain.respond(to: ResourceRequest(url: "https://app.example/app/index.html")).response) == Self.page)
            #expect(server.fieldsThatChangeAnswers.contains("Sec-Fetch-Dest") && !plain.fieldsThatChangeAnswers.contains("Sec-Fetch-Dest"))
        }
    }

    @Test("a package hit is answered before start returns, on the caller's thread")
    func synchronousHit() throws {
        try withTemporaryFolder { folder in
            for configuration in [HostConfiguration.server(injectHook: true, upstreams: [], emulateBodyLoss: false), .webKit(hook: nil, cookies: nil)] {
                let layer = try layer(folder + "/\(configuration.redirectsAsPages)", configuration)
                guard case .answered(let answer) = layer.start(ResourceRequest(url: "https://app.example/app/data.json"), on: InlineExecutor.shared, completion: { _ in }) else {
                    Issue.record("a hit must not wait")
                    continue
                }
                #expect(answer.response.status == 200 && answer.fromPackage)
            }
        }
    }

    @Test("the body store over HTTP: 403 without this launch's proof, 204 and stored with it; off, the request goes to the engine")
    func bodyStoreEndpoint() async throws {
        try await withTemporaryFolder { folder in
            let layer = try layer(folder, .server(injectHook: true, upstreams: [], emulateBodyLoss: false))
            let secret = try #require(layer.engine.bodyProofSecret)
            let channels = BodyChannels()
            let url = "https://app.example" + HookScript.Configuration.defaultBodyEndpoint + "b1"
            let refused = await layer.respond(to: ResourceRequest(method: .post, url: url, body: Array("x=1".utf8)))
            #expect(refused.response.status == 403 && refused.label == .endpoint && layer.engine.bodyStore.take("b1") == nil)
            let proof = BodyProof.make(secret: secret, channel: .bodyStore, binding: "b1", time: Int64(Date().timeIntervalSince1970 * 1000), nonce: "layer-test-1")
            let stored = await layer.respond(to: ResourceRequest(
                method: .post, url: url, headers: [channels.proofHeader: proof, "Content-Type": "text/plain", channels.methodHeader: "PUT"], body: Array("x=1".utf8)))
            #expect(stored.response.status == 204)
            #expect(layer.engine.bodyStore.take("b1") == StoredBody(bytes: Array("x=1".utf8), contentType: "text/plain", method: "PUT"))
            let bad = await layer.respond(to: ResourceRequest(method: .post, url: "https://app.example" + HookScript.Configuration.defaultBodyEndpoint + "no%20good"))
            #expect(bad.response.status == 403)
            // A WebKit host has no such endpoint: the POST is the engine's (a body claimed by nothing goes to the network).
            let webKit = try self.layer(folder + "/w", .webKit(hook: nil, cookies: nil))
            let passed = await webKit.respond(to: ResourceRequest(method: .post, url: url, body: Array("x=1".utf8)))
            #expect(passed.label != .endpoint)
        }
    }

    @Test("a body message is stored, or refused with a reason the page's promise rejects with")
    func bodyMessages() throws {
        try withTemporaryFolder { folder in
            let layer = try layer(folder, .webKit(hook: HookScript.Configuration(origins: ["satchel://app.example"]), cookies: nil))
            try layer.storeBody(message: BodyMessage(id: "m1", base64: Data("hello".utf8).base64EncodedString(), contentType: "text/plain", method: "POST"))
            #expect(layer.engine.bodyStore.take("m1") == StoredBody(bytes: Array("hello".utf8), contentType: "text/plain", method: "POST"))
            #expect(throws: BodyMessageError.self) { try layer.storeBody(message: BodyMessage(id: "m2", base64: "not base64!", contentType: nil, method: nil)) }
            #expect(throws: BodyMessageError.self) { try layer.storeBody(message: BodyMessage(id: nil, base64: "", contentType: nil, method: nil)) }
            do throws(BodyMessageError) {
                try layer.storeBody(message: BodyMessage(id: "bad id", base64: "", contentType: nil, method: nil))
                Issue.record("an invalid id must be refused")
            } catch {
                #expect(error.description.contains("bad id"))
            }
        }
    }

    @Test("WebKit hosts: Set-Cookie goes to the app's jar, not the page; a navigation's redirect becomes a page. The server passes both")
    func webKitDecorations() async throws {
        try await withTemporaryFolder { folder in
            let jar = AppCookieJar(store: SlowCookieStore(delay: .zero))
            let webKit = try layer(folder, .webKit(hook: nil, cookies: jar))
            let answer = await webKit.respond(to: ResourceRequest(url: "satchel://app.example/elsewhere"))
            #expect(answer.response.headers["Set-Cookie"] == nil)
            #expect(try await jar.cookieHeader(for: "https://app.example/x", request: ResourceRequest(url: "satchel://app.example/")) == "sid=1")
            let navigation = await webKit.respond(to: ResourceRequest(url: "satchel://app.example/go", headers: ["Accept": "text/html"]))
            #expect(navigation.response.status == 200 && text(navigation.response).contains("location.replace(\"satchel://app.example/next\")"))

            let server = try layer(folder + "/s", .server(injectHook: false, upstreams: [], emulateBodyLoss: false))
            #expect(await server.respond(to: ResourceRequest(url: "https://app.example/elsewhere")).response.headers["Set-Cookie"] == "sid=1; Path=/")
            #expect(await server.respond(to: ResourceRequest(url: "https://app.example/go", headers: ["Accept": "text/html"])).response.status == 302)
        }
    }

    @Test("emulated body loss: the engine sees no body and no Content-Length, as from WebKit")
    func bodyLoss() async throws {
        try await withTemporaryFolder { folder in
            let lossy = try layer(folder, .server(injectHook: false, upstreams: [], emulateBodyLoss: true))
            let post = ResourceRequest(method: .post, url: "https://app.example/echo", headers: ["Content-Length": "3"], body: Array("a=1".utf8))
            #expect(text(await lossy.respond(to: post).response) == "body=-1 length=none")
            let kept = try layer(folder + "/k", .server(injectHook: false, upstreams: [], emulateBodyLoss: false))
            let whole = await kept.respond(to: post).response
            // The network leg frames the body itself (the policy drops the incoming framing field).
            #expect(text(whole) == "body=3 length=none", "\(whole.status) \(text(whole))")
        }
    }

    @Test("the hook goes after <head>, never inside a <header> that comes first in a page without <head>")
    func headNotHeader() {
        func at(_ html: String) -> String {
            let response = ResourceResponse(status: 200, headers: ["Content-Type": "text/html"], body: .bytes(Array(html.utf8)))
            let injected = HookInjection.inserting("/*hook*/", into: response)
            if case .bytes(let bytes) = injected.body { return String(decoding: bytes, as: UTF8.self) }
            return ""
        }
        #expect(at("<!doctype html><header>x</header><p>y") == "<!doctype html><script>/*hook*/</script><header>x</header><p>y")
        #expect(at("<html><HEAD lang=en><title>t</title>") == "<html><HEAD lang=en><script>/*hook*/</script><title>t</title>")
        #expect(at("<header>x</header><head><title>t</title>") == "<header>x</header><head><script>/*hook*/</script><title>t</title>")
    }
}

