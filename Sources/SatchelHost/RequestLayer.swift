import Foundation
import SatchelCore
import SatchelEngine
import SatchelHTTP

/// Everything a host does with a request between its I/O and the ``ResourceLoader``, decided once for every host
/// (satchel serve, the WebKitGTK adapter, the Apple adapter) by its ``HostConfiguration``:
///
/// 1. the layer's endpoints: the hook's `document.cookie` requests (with an app cookie jar) and its body store over
///    HTTP (``bodyStoreEndpoint``);
/// 2. the request as the engine sees it (bodies dropped when emulating WebKit's loss);
/// 3. the loader (packages, strategies, the network);
/// 4. the answer as the client gets it: `Set-Cookie` stored in the app's jar, a navigation's redirect as a page, the
///    hook written into the package's HTML.
///
/// The hosts translate types and move bytes; none reads a header or picks a status. A package hit needs none of the
/// asynchronous steps and is answered before ``start(_:on:completion:)`` returns, on the caller's thread (the
/// server's event loop).
public final class RequestLayer: Sendable {
    public let loader: ResourceLoader
    public let configuration: HostConfiguration
    /// What a WebKit adapter installs in each web view (``HostConfiguration/HookDelivery/userScript(_:)``); nil for
    /// the other deliveries.
    public let pageSetup: PageSetup?
    public var engine: ResourceEngine { loader.engine }

    public init(loader: ResourceLoader, configuration: HostConfiguration) {
        self.loader = loader
        self.configuration = configuration
        if case .userScript(let hook) = configuration.hook { pageSetup = PageSetup(hook: hook, engine: loader.engine) } else { pageSetup = nil }
    }

    /// An answer as every host reports it.
    public struct Answer: Sendable {
        public var response: ResourceResponse
        public var label: AnswerLabel
        /// Which channel restored the request's body.
        public var bodyChannel: BodyChannel
        /// A package answered, unchanged by anything whose freshness is not the engine's to judge: what a host may
        /// keep and reuse (satchel serve's encoded-response cache).
        public var fromPackage: Bool
    }

    /// How ``start(_:on:completion:)`` went: answered before returning, or pending with a handle that cancels it.
    public typealias Start = Started<Answer>

    /// Answers `request`: on `executor`, with no task or hop for what needs none.
    public func start(_ request: ResourceRequest, on executor: any AnswerExecutor, completion: @escaping @Sendable (Answer) -> Void) -> Start {
        if let endpoint = endpoint(for: request) {
            switch endpoint {
            case .bodyStore(let id):
                return .answered(Answer(response: storeBody(id: id, request: request), label: .endpoint, bodyChannel: .none, fromPackage: false))
            case .pageCookies(let pageRequest, let jar):
                return .pending(TaskHandle(Task {
                    let response = await Self.answer(pageRequest, jar: jar, proofCheck: engine.proofCheck)
                    executor.execute { completion(Answer(response: response, label: .endpoint, bodyChannel: .none, fromPackage: false)) }
                }))
            }
        }
        let incoming = engineRequest(request)
        /// What still waits (the jar, a streamed page) runs in a task whose answer goes to the executor.
        @Sendable func later(_ work: @escaping @Sendable () async -> Answer) -> TaskHandle {
            TaskHandle(Task {
                let finished = await work()
                executor.execute { completion(finished) }
            })
        }
        let start = loader.start(incoming, on: executor) { answer in
            switch self.finish(answer, of: incoming) {
            case .ready(let finished): completion(finished)
            case .later(let work): _ = later(work)
            }
        }
        switch start {
        case .pending(let handle):
            return .pending(handle)
        case .answered(let answer):
            switch finish(answer, of: incoming) {
            case .ready(let finished): return .answered(finished)
            case .later(let work): return .pending(later(work))
            }
        }
    }

    /// The answer awaited (``AwaitedCallback`` over ``start(_:on:completion:)``); cancelling the task cancels it.
    public func respond(to request: ResourceRequest) async -> Answer {
        await AwaitedCallback.value(starting: { start(request, on: InlineExecutor.shared, completion: $0) })
    }

    /// The request fields an answer depends on, for a host that reuses answers (satchel serve's encoded answers):
    /// the engine's, the document-or-data question when the hook goes into pages, and the request's cache directives
    /// when an HTTP cache answers the network's part.
    public var fieldsThatChangeAnswers: [String] {
        var fields = engine.headersThatChangeResponses
        if case .inlineInPages = configuration.hook { fields.append(RequestField.secFetchDest.rawValue) }
        if loader.fetcher.responseCache != nil { fields += ["Cache-Control", "Pragma"] }
        return fields
    }

    // MARK: Endpoints

    private enum Endpoint {
        case bodyStore(id: String)
        case pageCookies(PageCookies.Request, AppCookieJar)
    }

    private func endpoint(for request: ResourceRequest) -> Endpoint? {
        if let jar = configuration.cookies,
            let pageRequest = PageCookies.request(request, proofHeader: channels.proofHeader),
            engine.configuration.customSchemes.contains(RequestURL(request.url)?.scheme ?? "")
        {
            return .pageCookies(pageRequest, jar)
        }
        if configuration.bodyStoreEndpoint, request.method == .post, let url = RequestURL(request.url),
            url.rawPath.hasPrefix(HookScript.Configuration.defaultBodyEndpoint)
        {
            return .bodyStore(id: String(url.rawPath.dropFirst(HookScript.Configuration.defaultBodyEndpoint.count)))
        }
        return nil
    }

    private var channels: BodyChannels { engine.configuration.bodyChannels ?? BodyChannels() }

    /// The hook's body store over HTTP: the same proof as a restored body's, bound to the id, so only the app's hook
    /// can fill the store; 204 once stored.
    private func storeBody(id: String, request: ResourceRequest) -> ResourceResponse {
        do {
            try engine.proofCheck?.verify(request.headers[channels.proofHeader].map { Substring($0) }, channel: .bodyStore, binding: id)
        } catch {
            return .error(HTTPStatus.forbidden, error.description)
        }
        do throws(BodyStore.Refusal) {
            try engine.bodyStore.put(
                id, StoredBody(bytes: request.body ?? [], contentType: request.headers[RequestField.contentType], method: request.headers[channels.methodHeader]))
            return .noContent
        } catch {
            return .error(error.status, error.description)
        }
    }

    /// A body the hook hands a script message handler (`{id, base64, contentType, method}`, the handler named by
    /// ``PageSetup/bodyHandlerName``): stored for the request that follows. Both WebKit adapters call this; one that
    /// knows the sending frame's origin (Apple's) passes it, and a frame of another origin is refused.
    /// - Throws: ``BodyMessageError``, whose description the page's promise rejects with.
    public func storeBody(message: BodyMessage, from origin: FrameOrigin? = nil) throws(BodyMessageError) {
        if let origin, pageSetup?.admits(origin) != true { throw .foreignFrame(origin) }
        guard let id = message.id, let encoded = message.base64, let bytes = Data(base64Encoded: encoded) else {
            throw .malformed(handler: pageSetup?.bodyHandlerName ?? HookScript.Configuration.defaultMessageHandler)
        }
        do {
            try engine.bodyStore.put(id, StoredBody(bytes: Array(bytes), contentType: message.contentType, method: message.method))
        } catch {
            throw .refused(error)
        }
    }

    /// A page's `document.cookie` read or write (``PageCookies``): 403 without the hook's proof.
    static func answer(_ request: PageCookies.Request, jar: AppCookieJar, proofCheck: BodyProofCheck?) async -> ResourceResponse {
        if let proofCheck {
            do {
                try proofCheck.verify(request.proof.map { Substring($0) }, channel: .cookie, binding: PageCookies.binding(path: request.documentPath, write: request.write))
            } catch {
                return .error(HTTPStatus.forbidden, "cookies: \(error.reason)")
            }
        }
        do throws(CookieStoreError) {
            var refused: String?
            if let write = request.write, case .failure(let refusal) = try await jar.pageWrote(write, at: request.documentURL) {
                refused = refusal.description
            }
            var response = ResourceResponse.text(try await jar.documentCookie(for: request.documentURL))
            if let refused { response.headers.add(PageCookies.refusedHeader, refused) }
            return response
        } catch {
            return .error(HTTPStatus.gatewayTimeout, "cookies: \(error)")
        }
    }

    // MARK: The request and the answer

    /// The request as the engine sees it, with the body dropped when emulating WebKit's loss.
    private func engineRequest(_ request: ResourceRequest) -> ResourceRequest {
        guard configuration.dropsRequestBodies, request.body != nil else { return request }
        var dropped = request
        dropped.headers.remove(RequestField.contentLength.rawValue)
        dropped.body = nil
        return dropped
    }

    private enum Finished {
        case ready(Answer)
        case later(@Sendable () async -> Answer)
    }

    /// The loader's answer as the client gets it. Only what needs to wait (the jar, a streamed page) is left for a task.
    private func finish(_ answer: ResourceLoader.Answer, of request: ResourceRequest) -> Finished {
        let injects = injectsHook(into: answer, for: request)
        let needsJar = configuration.cookies != nil && answer.response.headers.contains(ResponseField.setCookie)
        let needsRead = injects && HookInjection.mustRead(answer.response)
        guard needsJar || needsRead else { return .ready(decorated(answer.response, answer, request, injects: injects)) }
        return .later { [self] in
            var response = answer.response
            if needsJar, let jar = configuration.cookies {
                let fields = response.headers.values(ResponseField.setCookie)
                response.headers.remove(ResponseField.setCookie)
                do throws(CookieStoreError) {
                    try await jar.received(fields, for: request.url, request: request)
                } catch {
                    // The cookies the response sets could not be kept: the page must not go on as if they were.
                    return Answer(response: .error(HTTPStatus.gatewayTimeout, error.description), label: .error, bodyChannel: answer.bodyChannel, fromPackage: false)
                }
            }
            if needsRead { response = await HookInjection.reading(response) }
            return decorated(response, answer, request, injects: injects)
        }
    }

    /// The synchronous decorations: a navigation's redirect as a page, the hook into the page.
    private func decorated(_ response: ResourceResponse, _ answer: ResourceLoader.Answer, _ request: ResourceRequest, injects: Bool) -> Answer {
        var response = response
        if configuration.redirectsAsPages, let page = NavigationRedirect.page(for: response, of: request) { response = page }
        if injects { response = HookInjection.inserting(inlineHookScript(), into: response) }
        return Answer(response: response, label: AnswerLabel(answer.outcome, status: response.status), bodyChannel: answer.bodyChannel,
                      fromPackage: answer.outcome == .package)
    }

    /// The hook goes inline into the app's own documents that a package served (a page, its offline page, a page
    /// after a network failure), never into HTML a script fetches as data or a page from the network.
    private func injectsHook(into answer: ResourceLoader.Answer, for request: ResourceRequest) -> Bool {
        guard case .inlineInPages = configuration.hook,
            answer.outcome == .package || answer.outcome == .offlinePage || answer.outcome == .packageAfterNetworkFailure
        else { return false }
        return request.kind.loadsDocument && HookInjection.isPage(answer.response)
    }

    /// The hook as it goes inline (``HostConfiguration/HookDelivery/inlineInPages(extraHosts:)``), configured for every
    /// host the installed packages claim and the extra hosts, with the launch's proof secret unless `withSecret` is false
    /// (a `<script src>` any site may load must not carry it).
    public func inlineHookScript(withSecret: Bool = true) -> String {
        // Rendered once per set of served packages (its origins come from them), not once per page.
        let generation = engine.generation
        if let cached = renderedHook.withLock({ $0 }), cached.generation == generation, cached.withSecret == withSecret { return cached.script }
        let script = renderInlineHook(withSecret: withSecret)
        renderedHook.withLock { $0 = (generation, withSecret, script) }
        return script
    }

    private let renderedHook = Locked<(generation: Int, withSecret: Bool, script: String)?>(nil)

    private func renderInlineHook(withSecret: Bool) -> String {
        var origins: [String] = []
        for package in engine.servedPackages {
            for host in package.manifest.scope.hosts where !host.isWildcard {
                origins += ["http://\(host.value)", "https://\(host.value)"]
                origins += engine.configuration.customSchemes.sorted().map { "\($0)://\(host.value)" }
            }
        }
        if case .inlineInPages(let extraHosts) = configuration.hook {
            for host in extraHosts where !host.isWildcard { origins += ["http://\(host.value)", "https://\(host.value)"] }
        }
        return HookScript.render(HookScript.Configuration(
            channels: channels, origins: Array(Set(origins)).sorted(), proofSecret: withSecret ? engine.bodyProofSecret : nil))
    }
}

/// A body message as a script message handler received it, each field nil when absent or not a string.
public struct BodyMessage: Sendable {
    public var id: String?
    public var base64: String?
    public var contentType: String?
    public var method: String?

    public init(id: String?, base64: String?, contentType: String?, method: String?) {
        self.id = id
        self.base64 = base64
        self.contentType = contentType
        self.method = method
    }
}

/// Why a body message was not stored; the page's promise rejects with the description.
public enum BodyMessageError: Error, Sendable, Equatable, CustomStringConvertible {
    case malformed(handler: String)
    case refused(BodyStore.Refusal)
    /// Sent by a frame that is not of one of the app's origins.
    case foreignFrame(FrameOrigin)

    public var description: String {
        switch self {
        case .malformed(let handler): "\(handler): expected {id, base64, contentType, method}"
        case .foreignFrame(let origin): "satchel: bodies are not taken from frames of \(origin)"
        case .refused(let refusal): refusal.description
        }
    }
}

extension BodyStore.Refusal {
    /// The status a refused body gets over HTTP.
    var status: Int {
        switch self {
        case .bodyTooLarge, .storeFull, .tooManyBodies: HTTPStatus.contentTooLarge
        case .invalidID: HTTPStatus.badRequest
        }
    }
}
