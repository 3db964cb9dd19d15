import Foundation
import Logging
import SatchelCore
import SatchelEngine
import SatchelStore

/// Everything `satchel serve` does with one request, independent of the socket: map origin-form and
/// absolute-form targets to the URL the engine sees, answer the `/_satchel/` endpoints, drop bodies when
/// emulating WebKit, run the engine and the network fallback, inject the hook into HTML, and record the
/// outcome for the status page.
public final class ServerResponder: Sendable {
    public let pipeline: RequestPipeline
    public let store: PackageStore
    public let configuration: ServerConfiguration
    public let log: RequestLog
    let logger: Logger
    let publish: StaticFolder?

    public init(store: PackageStore, pipeline: RequestPipeline, configuration: ServerConfiguration, log: RequestLog = RequestLog(), logger: Logger = Logger(label: "satchel.access")) {
        self.store = store
        self.pipeline = pipeline
        self.configuration = configuration
        self.log = log
        self.logger = logger
        publish = configuration.publishFolder.map { StaticFolder(root: $0) }
    }

    /// Where a request goes, decided once from its parsed target: every later step (the response cache, the
    /// fast path, the full path, the log) takes this value, so none can pick another host.
    enum Destination: Sendable, Equatable {
        /// `/_satchel/…`: the status page, the hook, the body store.
        case endpoint
        /// The engine, for this URL: an absolute-form target as written, or `https://<host><path>` for a host a
        /// package claims.
        case engine(url: String)
        /// No package claims the host (the server's own address): published files first when `--publish` is
        /// given, then the engine for `--default-host`, as this URL.
        case ownAddress(url: String)
        /// `OPTIONS *`.
        case server
    }

    func destination(of target: RequestTarget) -> Destination {
        switch target.form {
        case .asterisk, .authority:
            return .server
        case .absolute, .origin:
            let path = target.path
            if path == "/_satchel" || path.hasPrefix("/_satchel/") { return .endpoint }
            if target.isAbsolute { return .engine(url: target.raw) }
            if pipeline.engine.claims(host: target.host) { return .engine(url: "https://\(target.host)\(target.pathAndQuery)") }
            return .ownAddress(url: "https://\(configuration.defaultHost ?? target.host)\(target.pathAndQuery)")
        }
    }

    /// The full path: endpoints, published files, the engine and the network, with the outcome recorded.
    func respond(to request: ServerRequest, destination: Destination) async -> ResourceResponse {
        let started = ContinuousClock.now
        let (response, outcome, channel) = await answer(request, destination: destination)
        record(request.method, request.target, status: response.status, outcome: outcome, channel: channel, started: started)
        return response
    }

    /// The fast path, for the event loop: answers when a package (or a definite error) can, with no network
    /// and no task hop; nil when the request needs ``respond(to:destination:)``.
    func respondFromPackages(_ request: ServerRequest, destination: Destination) -> ResourceResponse? {
        let started = ContinuousClock.now
        guard let url = packageURL(destination), request.method == "GET" || request.method == "HEAD" else { return nil }
        let engineRequest = engineRequest(request, url: url)
        // Only plain reads: anything else may go to the network, and a body restoration must happen once.
        guard !pipeline.engine.restoresBody(engineRequest), case .response(var response) = pipeline.engine.handleSynchronously(engineRequest) else {
            return nil
        }
        if configuration.injectHook { response = injectingHook(into: response) }
        record(request.method, request.target, status: response.status, outcome: Self.packageOutcome(response.status), channel: .none, started: started)
        return response
    }

    /// The engine URL of a destination that packages alone may answer (the event loop's fast path and the
    /// response cache); nil for endpoints, and for the server's own address while published files come first.
    func packageURL(_ destination: Destination) -> String? {
        switch destination {
        case .engine(let url): url
        case .ownAddress(let url) where publish == nil && configuration.defaultHost != nil: url
        case .ownAddress, .endpoint, .server: nil
        }
    }

    /// How the status page names a package answer.
    static func packageOutcome(_ status: Int) -> String {
        status == 304 ? "not-modified" : status == 206 ? "range" : status < 400 ? "offline-hit" : "error"
    }

    /// Logs a request answered from ``EncodedResponseCache`` (the engine's answer, reused).
    func recordReused(target: RequestTarget, status: Int, outcome: String) {
        record("GET", target, status: status, outcome: outcome, channel: .none, started: ContinuousClock.now)
    }

    /// The request as the engine sees it, with the body dropped when emulating WebKit's loss.
    private func engineRequest(_ request: ServerRequest, url: String) -> ResourceRequest {
        guard configuration.emulateBodyLoss else { return ResourceRequest(method: request.method, url: url, headers: request.headers, body: request.body) }
        var headers = request.headers
        headers.remove("Content-Length")
        return ResourceRequest(method: request.method, url: url, headers: headers, body: nil)
    }

    private func record(_ method: String, _ target: RequestTarget, status: Int, outcome: String, channel: BodyChannel, started: ContinuousClock.Instant) {
        let elapsed = ContinuousClock.now - started
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        let shown = target.isAbsolute ? target.raw : "http://\(target.host)\(target.port.map { ":\($0)" } ?? "")\(target.pathAndQuery)"
        if !target.path.hasPrefix("/_satchel/status") {
            log.record(RequestLog.Record(
                millisecondsOfDay: RequestLog.millisecondsOfDayNow(), method: method, url: shown, status: status, outcome: outcome,
                bodyChannel: channel == .none ? nil : channel.rawValue, milliseconds: (milliseconds * 10).rounded() / 10))
        }
        if configuration.accessLog {
            logger.info("\(method) \(shown) \(status) \(outcome)\(channel == .none ? "" : " body:\(channel.rawValue)") \(String(format: "%.1f", milliseconds)) ms")
        }
    }

    private func answer(_ request: ServerRequest, destination: Destination) async -> (ResourceResponse, String, BodyChannel) {
        let url: String
        switch destination {
        case .endpoint:
            return (await satchelEndpoint(method: request.method, path: String(request.target.path), headers: request.headers, body: request.body), "satchel", .none)
        case .server:
            return (ResourceResponse(status: 204, headers: ["Allow": "GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE", "Content-Length": "0"]), "satchel", .none)
        case .engine(let engineURL):
            url = engineURL
        case .ownAddress(let engineURL):
            if let publish, let response = publish.respond(to: ResourceRequest(method: request.method, url: request.target.pathAndQuery, headers: request.headers), path: String(request.target.path)) {
                return (response, "published", .none)
            }
            url = engineURL
        }
        let (response, outcome, channel) = await pipeline.respond(to: engineRequest(request, url: url))
        let label: String
        switch outcome {
        case .package: label = Self.packageOutcome(response.status)
        case .network: label = "network"
        case .packageAfterNetworkFailure: label = "package-after-network-failure"
        case .offlinePage: label = "offline-page"
        case .error: label = "error"
        }
        if configuration.injectHook, outcome == .package || outcome == .offlinePage || outcome == .packageAfterNetworkFailure {
            return (injectingHook(into: response), label, channel)
        }
        return (response, label, channel)
    }

    // MARK: /_satchel/

    private func satchelEndpoint(method: String, path: String, headers: HTTPHeaders, body: [UInt8]?) async -> ResourceResponse {
        let route = String(path.split(separator: "?", maxSplits: 1)[0])
        switch (method, route) {
        case ("GET", "/_satchel/hook.js"), ("HEAD", "/_satchel/hook.js"):
            return Self.text(200, hookScript(), type: "text/javascript; charset=utf-8")
        case ("POST", _) where route.hasPrefix("/_satchel/bodies/"):
            let id = String(route.dropFirst("/_satchel/bodies/".count))
            do {
                try pipeline.engine.bodyStore.put(id, StoredBody(bytes: body ?? [], contentType: headers["Content-Type"], method: headers["X-Satchel-Method"]))
                return ResourceResponse(status: 204, headers: ["Content-Length": "0", "Cache-Control": "no-store"])
            } catch {
                let status: Int
                switch error {
                case .bodyTooLarge, .storeFull, .tooManyBodies: status = 413
                case .invalidID: status = 400
                }
                return Self.text(status, error.description + "\n")
            }
        case ("GET", "/_satchel/status.json"):
            return Self.text(200, statusJSON(), type: "application/json; charset=utf-8")
        case ("GET", "/_satchel/"), ("GET", "/_satchel"):
            return Self.text(200, StatusPage.html(packages: (try? store.list()) ?? [], requests: log.recent, configuration: configuration), type: "text/html; charset=utf-8")
        default:
            return Self.text(404, "no such satchel endpoint: \(method) \(route)\n")
        }
    }

    /// The hook, configured for every host the installed packages claim (http and https) and the upstreams.
    func hookScript() -> String {
        var origins: [String] = []
        for package in pipeline.engine.servedPackages {
            for host in package.manifest.scope.hosts where !host.isWildcard {
                origins += ["http://\(host.value)", "https://\(host.value)"]
                origins += pipeline.engine.configuration.customSchemes.sorted().map { "\($0)://\(host.value)" }
            }
        }
        for host in configuration.allowedUpstreams where !host.isWildcard { origins += ["http://\(host.value)", "https://\(host.value)"] }
        return HookScript.render(HookScript.Configuration(channels: pipeline.engine.configuration.bodyChannels ?? BodyChannels(), origins: Array(Set(origins)).sorted()))
    }

    func statusJSON() -> String {
        struct Status: Encodable {
            let packages: [InstalledPackage]
            let requests: [RequestLog.Entry]
            let injectHook: Bool
            let emulateBodyLoss: Bool
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let status = Status(packages: (try? store.list()) ?? [], requests: log.recent, injectHook: configuration.injectHook, emulateBodyLoss: configuration.emulateBodyLoss)
        return String(decoding: (try? encoder.encode(status)) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// Adds `<script src="/_satchel/hook.js"></script>` as the first thing in `<head>` (or the document), so it
    /// runs before the page's own scripts. HTML files are small; larger bodies are passed through untouched.
    private func injectingHook(into response: ResourceResponse) -> ResourceResponse {
        guard response.status == 200 || response.status == 503, response.headers["Content-Type"]?.hasPrefix("text/html") == true else { return response }
        let bytes: [UInt8]
        switch response.body {
        case .bytes(let all): bytes = all
        case .file(let region) where region.length <= 4 << 20:
            guard let all = try? region.readAll() else { return response }
            bytes = all
        default: return response
        }
        let tag = Array("<script src=\"/_satchel/hook.js\"></script>".utf8)
        var insertAt = 0
        let lower = bytes.prefix(4096).map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
        if let head = lower.firstRange(of: Array("<head".utf8)), let close = lower[head.upperBound...].firstIndex(of: UInt8(ascii: ">")) {
            insertAt = close + 1
        } else if let doctype = lower.firstRange(of: Array("<!doctype".utf8)), let close = lower[doctype.upperBound...].firstIndex(of: UInt8(ascii: ">")) {
            insertAt = close + 1
        }
        var body = bytes
        body.insert(contentsOf: tag, at: insertAt)
        var headers = response.headers
        headers.set("Content-Length", String(body.count))
        if let etag = headers["ETag"] { headers.set("ETag", String(etag.dropLast()) + "-hook\"") }
        return ResourceResponse(status: response.status, headers: headers, body: .bytes(body))
    }

    // MARK: Helpers

    static func text(_ status: Int, _ text: String, type: String = "text/plain; charset=utf-8") -> ResourceResponse {
        let body = Array(text.utf8)
        return ResourceResponse(status: status, headers: ["Content-Type": type, "Content-Length": String(body.count), "Cache-Control": "no-store"], body: .bytes(body))
    }

    /// An error answer: plain text that no browser sniffs into anything else, never cached, the reason also in
    /// `X-Satchel-Error` for scripts.
    static func error(_ status: Int, _ message: String) -> ResourceResponse {
        let body = Array((message + "\n").utf8)
        return ResourceResponse(
            status: status,
            headers: [
                "Content-Type": "text/plain; charset=utf-8", "Content-Length": String(body.count), "Cache-Control": "no-store",
                "X-Content-Type-Options": "nosniff", "X-Satchel-Error": message,
            ],
            body: .bytes(body))
    }

}
