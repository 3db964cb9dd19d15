import Foundation
import Logging
import SatchelCache
import SatchelCore
import NIOCore
import SatchelEngine
import SatchelHTTP
import SatchelHost
import SatchelNetwork
import SatchelStore

/// Takes an answer that ``ServerResponder/answerOnEventLoop(_:destination:executor:receiver:)`` produces later, on
/// the event loop (the connection handler).
protocol LoopAnswerReceiver: AnyObject {
    func answerArrived(_ response: ResourceResponse)
}

/// Everything `satchel serve` does with one request, independent of the socket: map origin-form and
/// absolute-form targets to the URL the engine sees, answer the server's own `/_satchel/` endpoints (status, reports,
/// the hook's script) and published files, hand everything else to the ``RequestLayer`` (the body store, the engine,
/// the network, the hook in pages: the policy every host shares), and record the outcome for the status page.
public final class ServerResponder: Sendable {
    /// The request layer, with satchel serve's ``HostConfiguration``.
    public let layer: RequestLayer
    public var loader: ResourceLoader { layer.loader }
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
        layer = RequestLayer(
            loader: loader,
            configuration: .server(injectHook: configuration.injectHook, upstreams: configuration.allowedUpstreams, emulateBodyLoss: configuration.emulateBodyLoss))
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

    /// The full path: endpoints, published files, then the request layer, with the outcome recorded.
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

    /// The fast path: the request layer on the connection's event loop, so a package hit is answered at once and a
    /// miss is fetched on the same loop (``NIOFetcher`` runs its exchange there), with no task or thread hop. Nil when
    /// the request needs ``respond(to:destination:)``: an endpoint or published files.
    func answerOnEventLoop(_ request: ServerRequest, destination: Destination, executor: EventLoopExecutor, receiver: some LoopAnswerReceiver) -> LoopAnswer? {
        let started = ContinuousClock.now
        guard let url = engineURL(destination) else { return nil }
        let bound = NIOLoopBound(receiver, eventLoop: executor.eventLoop)
        let start = layer.start(ResourceRequest(method: request.method, url: url, headers: request.headers, body: request.body), on: executor) { answer in
            self.record(request, answer, started: started)
            bound.value.answerArrived(answer.response)
        }
        switch start {
        case .pending(let handle):
            return .later(handle)
        case .answered(let answer):
            record(request, answer, started: started)
            return .now(answer.response, fromPackage: answer.fromPackage)
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

    /// Logs a request answered from ``EncodedResponseCache`` (the engine's answer, reused).
    func recordReused(target: RequestTarget, status: Int, outcome: AnswerLabel) {
        record(.get, target, status: status, outcome: outcome, channel: .none, started: ContinuousClock.now)
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

    private func record(_ request: ServerRequest, _ answer: RequestLayer.Answer, started: ContinuousClock.Instant) {
        record(request.method, request.target, status: answer.response.status, outcome: answer.label, channel: answer.bodyChannel, started: started)
    }

    private func answer(_ request: ServerRequest, destination: Destination) async -> (ResourceResponse, AnswerLabel, BodyChannel) {
        let url: String
        switch destination {
        case .endpoint:
            if request.method == .post, request.target.path.hasPrefix(HookScript.Configuration.defaultBodyEndpoint) {
                // The body store is the request layer's: under the host the request names.
                url = Self.httpsURL(host: request.target.host, request.target.pathAndQuery)
                break
            }
            return (await satchelEndpoint(method: request.method, path: String(request.target.path), headers: request.headers, body: request.body), .endpoint, .none)
        case .server:
            var response = ResourceResponse.noContent
            response.headers.set(ResponseField.allow, "GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE")
            return (response, .endpoint, .none)
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
        let answer = await layer.respond(to: ResourceRequest(method: request.method, url: url, headers: request.headers, body: request.body))
        return (answer.response, answer.label, answer.bodyChannel)
    }

    // MARK: The server's own /_satchel/ endpoints

    private func satchelEndpoint(method: RequestMethod, path: String, headers: HTTPHeaders, body: [UInt8]?) async -> ResourceResponse {
        let route = String(path.split(separator: "?", maxSplits: 1)[0])
        switch (method, route) {
        case (.get, "/_satchel/hook.js"), (.head, "/_satchel/hook.js"):
            // Without the secret: any site can load a script from the server's address.
            return .text(layer.inlineHookScript(withSecret: false), type: "text/javascript; charset=utf-8")
        case (.post, "/_satchel/reports") where reports != nil:
            do {
                reports!.append(try DeviceReport.decode(body ?? []), via: "post")
                return .noContent
            } catch {
                return .error(HTTPStatus.badRequest, error.description)
            }
        case (.get, "/_satchel/status.json"):
            return .text(statusJSON(), type: "application/json; charset=utf-8")
        case (.get, "/_satchel/"), (.get, "/_satchel"):
            return .text(StatusPage.html(packages: (try? store.list()) ?? [], requests: log.recent, configuration: configuration), type: "text/html; charset=utf-8")
        default:
            return .error(HTTPStatus.notFound, "no such satchel endpoint: \(method) \(route)")
        }
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
}
