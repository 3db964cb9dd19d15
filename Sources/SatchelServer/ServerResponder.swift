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

    /// - Parameters:
    ///   - target: the request-target as received: origin-form (`/app/x`) or absolute-form (`http://h/app/x`).
    public func respond(method: String, target: String, headers: HTTPHeaders, body: [UInt8]?) async -> ResourceResponse {
        let started = ContinuousClock.now
        let isAbsolute = target.lowercased().hasPrefix("http://") || target.lowercased().hasPrefix("https://")
        let parsed = isAbsolute ? RequestURL(target) : nil
        let path = isAbsolute ? (parsed?.rawPath ?? "/") + (parsed?.query.map { "?" + $0 } ?? "") : target
        let hostHeader = Self.hostWithoutPort(headers["Host"] ?? "")
        let (response, outcome, channel) = await answer(method: method, target: target, isAbsolute: isAbsolute, path: path, host: hostHeader, headers: headers, body: body)
        let shown = isAbsolute ? target : "http://\(headers["Host"] ?? "?")\(target)"
        record(method: method, shown: shown, path: path, status: response.status, outcome: outcome, channel: channel, started: started)
        return response
    }

    /// The fast path, for the event loop: answers when a package (or a definite error) can, with no network
    /// and no task hop; nil when the request needs ``respond(method:target:headers:body:)``.
    public func respondFromPackages(method: String, target: String, headers: HTTPHeaders, body: [UInt8]?) -> ResourceResponse? {
        let started = ContinuousClock.now
        let isAbsolute = target.utf8.first != UInt8(ascii: "/")
        guard !isAbsolute || target.lowercased().hasPrefix("http://") || target.lowercased().hasPrefix("https://") else { return nil }
        let host = Self.hostWithoutPort(headers["Host"] ?? "")
        let url: String
        if isAbsolute {
            url = target
        } else {
            guard !target.hasPrefix("/_satchel") else { return nil }
            if pipeline.engine.claims(host: host) {
                url = "https://\(host)\(target)"
            } else {
                // The server's own address: published files (the full path checks them) or the default host.
                guard publish == nil, let defaultHost = configuration.defaultHost else { return nil }
                url = "https://\(defaultHost)\(target)"
            }
        }
        var requestHeaders = headers
        if configuration.emulateBodyLoss { requestHeaders.remove("Content-Length") }
        let request = ResourceRequest(method: method, url: url, headers: requestHeaders, body: configuration.emulateBodyLoss ? nil : body)
        // Only plain reads: anything else may go to the network, and a body restoration must happen once.
        guard method == "GET" || method == "HEAD", !pipeline.engine.restoresBody(request),
            case .response(var response) = pipeline.engine.handleSynchronously(request)
        else { return nil }
        // A body decoded as it is sent (a large deflated file of a built-in bundle) is streamed by the task path.
        if case .stream = response.body { return nil }
        let label = Self.packageOutcome(response.status)
        if configuration.injectHook { response = injectingHook(into: response) }
        record(method: method, shown: isAbsolute ? target : "http://\(headers["Host"] ?? "?")\(target)", path: target, status: response.status, outcome: label, channel: .none, started: started)
        return response
    }

    /// How the status page names a package answer.
    static func packageOutcome(_ status: Int) -> String {
        status == 304 ? "not-modified" : status == 206 ? "range" : status < 400 ? "offline-hit" : "error"
    }

    /// Logs a request answered from ``EncodedResponseCache`` (the engine's answer, reused).
    func recordReused(method: String, target: String, hostHeader: String, status: Int, outcome: String) {
        record(method: method, shown: "http://\(hostHeader)\(target)", path: target, status: status, outcome: outcome, channel: .none, started: ContinuousClock.now)
    }

    private func record(method: String, shown: String, path: String, status: Int, outcome: String, channel: BodyChannel, started: ContinuousClock.Instant) {
        let elapsed = ContinuousClock.now - started
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        if !path.hasPrefix("/_satchel/status") {
            log.record(RequestLog.Record(
                millisecondsOfDay: RequestLog.millisecondsOfDayNow(), method: method, url: shown, status: status, outcome: outcome,
                bodyChannel: channel == .none ? nil : channel.rawValue, milliseconds: (milliseconds * 10).rounded() / 10))
        }
        if configuration.accessLog {
            logger.info("\(method) \(shown) \(status) \(outcome)\(channel == .none ? "" : " body:\(channel.rawValue)") \(String(format: "%.1f", milliseconds)) ms")
        }
    }

    private func answer(method: String, target: String, isAbsolute: Bool, path: String, host: String, headers: HTTPHeaders, body: [UInt8]?) async -> (ResourceResponse, String, BodyChannel) {
        if path.hasPrefix("/_satchel/") || path == "/_satchel" {
            return (await satchelEndpoint(method: method, path: path, headers: headers, body: body), "satchel", .none)
        }
        let engine = pipeline.engine
        let url: String
        if isAbsolute {
            url = target
        } else if engine.claims(host: host) {
            url = "https://\(host)\(target)"
        } else {
            // The server's own address (no package claims it): published files first, then the default host.
            if let publish, let response = publish.respond(to: ResourceRequest(method: method, url: target, headers: headers), path: path.split(separator: "?", maxSplits: 1)[0].description) {
                return (response, "published", .none)
            }
            url = "https://\(configuration.defaultHost ?? host)\(target)"
        }
        let requestBody = configuration.emulateBodyLoss ? nil : body
        var requestHeaders = headers
        if configuration.emulateBodyLoss { requestHeaders.remove("Content-Length") }
        let (response, outcome, channel) = await pipeline.respond(to: ResourceRequest(method: method, url: url, headers: requestHeaders, body: requestBody))
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

    static func hostWithoutPort(_ host: String) -> String {
        // One pass over the bytes; most Host headers are lower-case already, so no lower-casing copy then.
        var hasUpper = false
        var colon: String.Index?
        for index in host.utf8.indices {
            let byte = host.utf8[index]
            if byte == UInt8(ascii: "[") { return bracketed(host.lowercased()) }
            if byte == UInt8(ascii: ":") {
                colon = index
                break
            }
            if byte >= 0x41, byte <= 0x5A { hasUpper = true }
        }
        let name = colon.map { String(host[..<$0]) } ?? host
        return hasUpper ? name.lowercased() : name
    }

    /// An IPv6 literal keeps its brackets and loses the port.
    private static func bracketed(_ lower: String) -> String {
        lower.split(separator: "]").first.map { $0 + "]" } ?? lower
    }

}
