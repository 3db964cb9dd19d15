import Foundation
import Logging
import SatchelCache
import SatchelCore
import NIOCore
import SatchelEngine
import SatchelHTTP
import SatchelNetwork
import SatchelStore

/// Takes an answer that ``ServerResponder/answerOnEventLoop(_:destination:executor:receiver:)`` produces later, on
/// the event loop (the connection handler).
protocol LoopAnswerReceiver: AnyObject {
    func answerArrived(_ response: ResourceResponse)
}

/// Everything `satchel serve` does with one request, independent of the socket: map origin-form and
/// absolute-form targets to the URL the engine sees, answer the `/_satchel/` endpoints, drop bodies when
/// emulating WebKit, run the engine and the network fallback, inject the hook into HTML, and record the
/// outcome for the status page.
public final class ServerResponder: Sendable {
    public let loader: ResourceLoader
    public let store: PackageStore
    public let configuration: ServerConfiguration
    public let log: RequestLog
    let logger: Logger
    let publish: StaticFolder?
    let reports: ReportLog?
    /// The HTTP cache in front of the network, for the status page.
    public let cache: HTTPCache?

    public init(
        store: PackageStore, loader: ResourceLoader, configuration: ServerConfiguration, log: RequestLog = RequestLog(),
        logger: Logger = Logger(label: "satchel.access"), cache: HTTPCache? = nil
    ) {
        self.store = store
        self.loader = loader
        self.cache = cache
        self.configuration = configuration
        self.log = log
        self.logger = logger
        publish = configuration.publishFolder.map { StaticFolder(root: $0) }
        reports = configuration.publishFolder == nil ? nil : configuration.reports
        redactedParameters = (loader.engine.configuration.bodyChannels ?? BodyChannels()).allParameters
    }

    /// Query parameters whose values never reach the log or the status page (``LogRedaction``).
    let redactedParameters: [String]

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
            // One byte comparison rules out every endpoint for nearly all requests (the checks below compare strings).
            if path.utf8.starts(with: "/_satchel".utf8) {
                if path.hasPrefix(HookScript.Configuration.defaultBodyEndpoint) { return .endpoint }
                // Device reports arrive through a CDN, under whatever Host it forwards; the endpoint only appends.
                if path == "/_satchel/reports", reports != nil { return .endpoint }
                // The status page and the hook answer on the server's own address only: under a host a package or
                // the upstream list claims, a page (or anything it embeds) could read every other page's requests.
                if path == "/_satchel" || path.hasPrefix("/_satchel/"), isOwnAddress(target) { return .endpoint }
            }
            if target.isAbsolute { return .engine(url: target.raw) }
            if loader.engine.claims(host: target.host) { return .engine(url: Self.httpsURL(host: target.host, target.pathAndQuery)) }
            return .ownAddress(url: Self.httpsURL(host: configuration.defaultHost ?? target.host, target.pathAndQuery))
        }
    }

    /// `https://<host><path and query>`, built in one allocation (interpolation grows the string as it goes).
    static func httpsURL(host: String, _ pathAndQuery: String) -> String {
        var url = "https://"
        url.reserveCapacity(8 + host.utf8.count + pathAndQuery.utf8.count)
        url += host
        url += pathAndQuery
        return url
    }

    /// The addresses the server answers as itself: loopback names and the bind address, on the bound port.
    private let ownAddress = Locked<(hosts: Set<String>, port: Int)?>(nil)

    /// Called once the server is bound (with `--port 0` the port is known only then).
    func bound(to port: Int) {
        var hosts: Set<String> = ["127.0.0.1", "localhost", "[::1]"]
        let bind = configuration.bindHost.lowercased()
        hosts.insert(bind.contains(":") && !bind.hasPrefix("[") ? "[\(bind)]" : bind)
        ownAddress.withLock { $0 = (hosts, port) }
    }

    func isOwnAddress(_ target: RequestTarget) -> Bool {
        guard let own = ownAddress.withLock({ $0 }) else { return false }
        let defaultPort = target.form == .absolute(scheme: "https") ? 443 : 80
        return own.hosts.contains(target.host) && (target.port ?? defaultPort) == own.port
    }

    /// The full path: endpoints, published files, the engine and the network, with the outcome recorded.
    func respond(to request: ServerRequest, destination: Destination) async -> ResourceResponse {
        let started = ContinuousClock.now
        let (response, outcome, channel) = await answer(request, destination: destination)
        record(request.method, request.target, status: response.status, outcome: outcome, channel: channel, started: started)
        return response
    }

    /// An answer produced without a task, on the connection's event loop.
    enum LoopAnswer {
        /// Ready now: a package hit, a cache hit or a definite error; `fromPackage` when the package answered it
        /// (what the encoded-response cache may keep: another answer's freshness is not the engine's to judge).
        case now(ResourceResponse, fromPackage: Bool)
        /// The network's answer (or what the strategy makes of its failure) goes to the receiver on the loop;
        /// cancelling the handle stops what is in flight (the upstream request).
        case later(any FetchHandle)
    }

    /// A ``LoopAnswer/later(_:)`` with nothing to cancel (a page read in a task that ends by itself).
    private final class NoHandle: FetchHandle {
        func cancel() {}
    }

    /// The fast path: the loader on the connection's event loop, so a package hit is answered at once and a miss
    /// is fetched on the same loop (``NIOFetcher`` runs its exchange there), with no task or thread hop. Nil when the
    /// request needs ``respond(to:destination:)``: an endpoint or published files.
    func answerOnEventLoop(_ request: ServerRequest, destination: Destination, executor: EventLoopExecutor, receiver: some LoopAnswerReceiver) -> LoopAnswer? {
        let started = ContinuousClock.now
        guard let url = engineURL(destination) else { return nil }
        let bound = NIOLoopBound(receiver, eventLoop: executor.eventLoop)
        let start = loader.start(engineRequest(request, url: url), on: executor) { answer in
            self.finished(answer, request, started: started, executor: executor) { bound.value.answerArrived($0) }
        }
        switch start {
        case .pending(let handle):
            return .later(handle)
        case .answered(let answer):
            guard !isHTMLStream(answer.response, answer.outcome) else {
                // HTML the engine decodes as it sends (a large page of a built-in bundle) gets the hook once it is read,
                // in a task; its answer comes to the receiver like the network's.
                finished(answer, request, started: started, executor: executor) { bound.value.answerArrived($0) }
                return .later(NoHandle())
            }
            return .now(finished(answer.response, answer.outcome, answer.bodyChannel, request, started: started), fromPackage: answer.outcome == .package)
        }
    }

    /// Decorates and records an answer that arrives on the event loop after the fast path returned, and hands it on
    /// there; HTML the hook must go into is read first, in a task, and handed on back on the loop.
    private func finished(
        _ answer: ResourceLoader.Answer, _ request: ServerRequest, started: ContinuousClock.Instant, executor: EventLoopExecutor,
        deliver: @escaping @Sendable (ResourceResponse) -> Void
    ) {
        guard isHTMLStream(answer.response, answer.outcome) else {
            return deliver(finished(answer.response, answer.outcome, answer.bodyChannel, request, started: started))
        }
        Task {
            let response = await readingHTMLStream(answer.response)
            executor.execute { deliver(self.finished(response, answer.outcome, answer.bodyChannel, request, started: started)) }
        }
    }

    /// The engine URL of a destination the fast path and the response cache may take; nil for endpoints, and
    /// for the server's own address while published files come first.
    func engineURL(_ destination: Destination) -> String? {
        switch destination {
        case .engine(let url): url
        case .ownAddress(let url) where publish == nil: url
        case .ownAddress, .endpoint, .server: nil
        }
    }

    /// How the status page names a package answer.
    /// Logs a request answered from ``EncodedResponseCache`` (the engine's answer, reused).
    func recordReused(target: RequestTarget, status: Int, outcome: AnswerLabel) {
        record(.get, target, status: status, outcome: outcome, channel: .none, started: ContinuousClock.now)
    }

    /// The request as the engine sees it, with the body dropped when emulating WebKit's loss.
    private func engineRequest(_ request: ServerRequest, url: String) -> ResourceRequest {
        guard configuration.emulateBodyLoss else { return ResourceRequest(method: request.method, url: url, headers: request.headers, body: request.body) }
        var headers = request.headers
        headers.remove("Content-Length")
        return ResourceRequest(method: request.method, url: url, headers: headers, body: nil)
    }

    private func record(_ method: RequestMethod, _ target: RequestTarget, status: Int, outcome: AnswerLabel, channel: BodyChannel, started: ContinuousClock.Instant) {
        let elapsed = ContinuousClock.now - started
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        if !target.path.hasPrefix("/_satchel/status") {
            log.record(RequestLog.Record(
                millisecondsOfDay: RequestLog.millisecondsOfDayNow(), method: method.rawValue, target: target, secretParameters: redactedParameters,
                status: status, outcome: outcome, bodyChannel: channel == .none ? nil : channel.rawValue,
                milliseconds: (milliseconds * 10).rounded() / 10))
        }
        if configuration.accessLog {
            let shown = RequestLog.shownURL(target, secretParameters: redactedParameters)
            logger.info("\(method) \(shown) \(status) \(outcome.rawValue)\(channel == .none ? "" : " body:\(channel.rawValue)") \(String(format: "%.1f", milliseconds)) ms")
        }
    }

    private func answer(_ request: ServerRequest, destination: Destination) async -> (ResourceResponse, AnswerLabel, BodyChannel) {
        let url: String
        switch destination {
        case .endpoint:
            return (await satchelEndpoint(method: request.method, path: String(request.target.path), headers: request.headers, body: request.body), .endpoint, .none)
        case .server:
            return (ResourceResponse(status: 204, headers: ["Allow": "GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE", "Content-Length": "0"]), .endpoint, .none)
        case .engine(let engineURL):
            url = engineURL
        case .ownAddress(let engineURL):
            if let publish, let response = publish.respond(to: ResourceRequest(method: request.method, url: request.target.pathAndQuery, headers: request.headers), path: String(request.target.path)) {
                if let reports, request.target.path.hasSuffix("/" + Catalog.fileName) {
                    reports.appendHeaders(channel: request.headers[DeviceReport.channelHeader], report: request.headers[DeviceReport.reportHeader])
                }
                return (response, .published, .none)
            }
            url = engineURL
        }
        let answer = await loader.respond(to: engineRequest(request, url: url))
        let response = isHTMLStream(answer.response, answer.outcome) ? await readingHTMLStream(answer.response) : answer.response
        return (decorated(response, answer.outcome, for: request), AnswerLabel(answer.outcome, status: response.status), answer.bodyChannel)
    }

    /// A package page that arrives as a stream, read whole (bounded), so the hook can go in like any other page's.
    private func readingHTMLStream(_ response: ResourceResponse) async -> ResourceResponse {
        guard case .stream(let stream) = response.body,
            (response.body.knownLength ?? Int64(response.headers["Content-Length"] ?? "") ?? .max) <= Self.largestHookedPage
        else { return response }
        var bytes: [UInt8] = []
        do { for try await chunk in stream { bytes += chunk } } catch { return .error(500, "cannot read the page: \(error)") }
        var read = response
        read.body = .bytes(bytes)
        return read
    }

    /// Pages larger than this are passed through without the hook (HTML pages are small; this bounds memory).
    static let largestHookedPage: Int64 = 4 << 20

    /// A package's HTML arriving as a stream, which the hook injection must read first.
    private func isHTMLStream(_ response: ResourceResponse, _ outcome: ResourceLoader.Outcome) -> Bool {
        guard configuration.injectHook, outcome == .package, case .stream = response.body else { return false }
        return response.headers["Content-Type"]?.hasPrefix("text/html") == true
    }

    /// An engine or network answer as the client gets it: the hook injected into HTML the package served.
    private func decorated(_ response: ResourceResponse, _ outcome: ResourceLoader.Outcome, for request: ServerRequest) -> ResourceResponse {
        guard configuration.injectHook, outcome == .package || outcome == .offlinePage || outcome == .packageAfterNetworkFailure else { return response }
        return injectingHook(into: response, for: request)
    }

    /// Decorates and records an answer made on the event loop.
    private func finished(_ response: ResourceResponse, _ outcome: ResourceLoader.Outcome, _ channel: BodyChannel, _ request: ServerRequest, started: ContinuousClock.Instant) -> ResourceResponse {
        let response = decorated(response, outcome, for: request)
        record(request.method, request.target, status: response.status, outcome: AnswerLabel(outcome, status: response.status), channel: channel, started: started)
        return response
    }

    // MARK: /_satchel/

    private func satchelEndpoint(method: RequestMethod, path: String, headers: HTTPHeaders, body: [UInt8]?) async -> ResourceResponse {
        let route = String(path.split(separator: "?", maxSplits: 1)[0])
        switch (method, route) {
        case (.get, "/_satchel/hook.js"), (.head, "/_satchel/hook.js"):
            // Without the secret: any site can load a script from the server's address.
            return Self.text(200, hookScript(withSecret: false), type: "text/javascript; charset=utf-8")
        case (.post, _) where route.hasPrefix(HookScript.Configuration.defaultBodyEndpoint):
            let id = String(route.dropFirst(HookScript.Configuration.defaultBodyEndpoint.count))
            let channels = loader.engine.configuration.bodyChannels ?? BodyChannels()
            do {
                // The same proof as a restored body's, bound to the id: only the app's hook can fill the store.
                try loader.engine.proofCheck?.verify(headers[channels.proofHeader].map { Substring($0) }, channel: .bodyStore, binding: id)
            } catch {
                return Self.error(403, error.description)
            }
            do {
                try loader.engine.bodyStore.put(id, StoredBody(bytes: body ?? [], contentType: headers["Content-Type"], method: headers[channels.methodHeader]))
                return ResourceResponse(status: 204, headers: ["Content-Length": "0", "Cache-Control": "no-store"])
            } catch {
                let status: Int
                switch error {
                case .bodyTooLarge, .storeFull, .tooManyBodies: status = 413
                case .invalidID: status = 400
                }
                return Self.error(status, error.description)
            }
        case (.post, "/_satchel/reports") where reports != nil:
            do {
                reports!.append(try DeviceReport.decode(body ?? []), via: "post")
                return ResourceResponse(status: 204, headers: ["Content-Length": "0", "Cache-Control": "no-store"])
            } catch {
                return Self.error(400, error.description)
            }
        case (.get, "/_satchel/status.json"):
            return Self.text(200, statusJSON(), type: "application/json; charset=utf-8")
        case (.get, "/_satchel/"), (.get, "/_satchel"):
            return Self.text(200, StatusPage.html(packages: (try? store.list()) ?? [], requests: log.recent, configuration: configuration), type: "text/html; charset=utf-8")
        default:
            return Self.error(404, "no such satchel endpoint: \(method) \(route)")
        }
    }

    /// The hook, configured for every host the installed packages claim (http and https) and the upstreams, with
    /// the launch's proof secret when it goes inline into a page.
    func hookScript(withSecret: Bool = true) -> String {
        var origins: [String] = []
        for package in loader.engine.servedPackages {
            for host in package.manifest.scope.hosts where !host.isWildcard {
                origins += ["http://\(host.value)", "https://\(host.value)"]
                origins += loader.engine.configuration.customSchemes.sorted().map { "\($0)://\(host.value)" }
            }
        }
        for host in configuration.allowedUpstreams where !host.isWildcard { origins += ["http://\(host.value)", "https://\(host.value)"] }
        return HookScript.render(HookScript.Configuration(
            channels: loader.engine.configuration.bodyChannels ?? BodyChannels(), origins: Array(Set(origins)).sorted(),
            proofSecret: withSecret ? loader.engine.bodyProofSecret : nil))
    }

    func statusJSON() -> String {
        struct CacheSummary: Encodable {
            let hits, misses, revalidations, staleAnswers, collapsed, stored, entries: Int
            let storedBytes: Int64
            let hosts: [String: Int64]
        }
        struct Status: Encodable {
            let packages: [InstalledPackage]
            let requests: [RequestLog.Entry]
            let injectHook: Bool
            let emulateBodyLoss: Bool
            let cache: CacheSummary?
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let summary = cache.map { cache in
            let counts = cache.statistics
            return CacheSummary(
                hits: counts.hits, misses: counts.misses, revalidations: counts.revalidations, staleAnswers: counts.staleAnswers,
                collapsed: counts.collapsed, stored: counts.stored, entries: cache.entryCount, storedBytes: cache.storedBytes,
                hosts: cache.storedBytesPerHost())
        }
        let status = Status(
            packages: (try? store.list()) ?? [], requests: log.recent, injectHook: configuration.injectHook,
            emulateBodyLoss: configuration.emulateBodyLoss, cache: summary)
        return String(decoding: (try? encoder.encode(status)) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// Adds `<script src="/_satchel/hook.js"></script>` as the first thing in `<head>` (or the document), so it
    /// runs before the page's own scripts. HTML files are small; larger bodies are passed through untouched.
    /// The hook goes inline into the app's own documents (HTML a package served, loaded as a page or a frame:
    /// `Sec-Fetch-Dest` document, iframe or frame, or no such header), never into HTML a script fetches as data.
    /// Inline, because its configuration carries the launch's secret: a `<script src>` URL could be loaded by any
    /// site as a script and read through the hooks it installs.
    private func injectingHook(into response: ResourceResponse, for request: ServerRequest) -> ResourceResponse {
        if !RequestKind(request.headers).loadsDocument { return response }
        guard response.status == 200 || response.status == 503, response.headers["Content-Type"]?.hasPrefix("text/html") == true else { return response }
        let bytes: [UInt8]
        switch response.body {
        case .bytes(let all): bytes = all
        case .file(let region) where region.length <= Self.largestHookedPage:
            guard let all = try? region.readAll() else { return response }
            bytes = all
        default: return response
        }
        // `</` never appears inside the script element, so nothing in it can end the element early.
        let tag = Array(("<script>" + hookScript().replacingOccurrences(of: "</", with: "<\\/") + "</script>").utf8)
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

    /// An error answer (``ResourceResponse/error(_:_:)``: plain text, `nosniff`, never cached).
    static func error(_ status: Int, _ message: String) -> ResourceResponse { .error(status, message) }

}
