import SatchelCore
import SatchelHTTP

/// A ``NetworkFetcher`` that answers from an ``HTTPCache`` what the cache may answer, and asks the fetcher it wraps
/// for the rest, storing what may be stored. Every answer carries the cache's `Cache-Status` member. The caller's
/// executor is passed on to the wrapped fetcher, so its fast path (NIO on the server's event loop) is kept, and a
/// hit is answered on that executor before ``fetch(_:timeouts:on:completion:)`` returns, with no hop.
public final class CachingFetcher: NetworkFetcher {
    public let cache: HTTPCache
    public let upstream: any NetworkFetcher

    public init(cache: HTTPCache, upstream: any NetworkFetcher) {
        self.cache = cache
        self.upstream = upstream
    }

    public var responseCache: (any ResponseCache)? { cache }

    @discardableResult
    public func fetch(
        _ request: ResourceRequest, timeouts: FetchTimeouts, on executor: any AnswerExecutor,
        completion: @escaping @Sendable (Result<ResourceResponse, any Error>) -> Void
    ) -> (any FetchHandle)? {
        let exchange = CachedExchange(request, timeouts: timeouts, fetcher: self, executor: executor, completion: completion)
        exchange.run(collapsing: true)
        return exchange.isFinished ? nil : exchange
    }
}

/// One request through the cache: look up, answer or forward, store, and hand the answer over once.
final class CachedExchange: FetchHandle, @unchecked Sendable {
    private let request: ResourceRequest
    private let timeouts: FetchTimeouts
    private let fetcher: CachingFetcher
    private let executor: any AnswerExecutor
    fileprivate let state: Locked<State>
    private var cache: HTTPCache { fetcher.cache }
    private var mode: CacheMode { fetcher.cache.mode }
    private var key: String { request.url }

    fileprivate struct State {
        var completion: (@Sendable (Result<ResourceResponse, any Error>) -> Void)?
        var inFlight: (any FetchHandle)?
        var waiting = false
        /// This request asks the origin for the URL on behalf of the requests collapsed behind it.
        var leading = false
        var cancelled = false
    }

    init(
        _ request: ResourceRequest, timeouts: FetchTimeouts, fetcher: CachingFetcher, executor: any AnswerExecutor,
        completion: @escaping @Sendable (Result<ResourceResponse, any Error>) -> Void
    ) {
        self.request = request
        self.timeouts = timeouts
        self.fetcher = fetcher
        self.executor = executor
        state = Locked(State(completion: completion))
    }

    var isFinished: Bool { state.withLock { $0.completion == nil } }

    private func finish(_ result: Result<ResourceResponse, any Error>) {
        let completion = state.withLock { state -> (@Sendable (Result<ResourceResponse, any Error>) -> Void)? in
            defer { state.completion = nil; state.inFlight = nil }
            return state.completion
        }
        completion?(result)
    }

    private func answer(_ response: ResourceResponse) { finish(.success(response)) }

    func cancel() {
        let (inFlight, waiting) = state.withLock { state -> ((any FetchHandle)?, Bool) in
            state.cancelled = true
            return (state.inFlight, state.waiting)
        }
        if waiting {
            cache.collapsed.withLock { $0[key]?.removeAll { $0.id == ObjectIdentifier(self) } }
            finish(.failure(CancellationError()))
        }
        inFlight?.cancel()
    }

    // MARK: The decision

    /// Looks the request up and answers, validates or forwards. `collapsing`: whether to wait for another
    /// request's answer from the origin for the same URL instead of asking it too.
    func run(collapsing: Bool) {
        let method = request.method
        guard method.readsRepresentation else { return forwardUnsafe() }
        let now = cache.now()
        let requestCC = CacheControl(request.headers)
        let entries = cache.store.entries(for: key)
        if let policy = request.cachePolicy, policy.policy != .useProtocolPolicy,
            applying(policy, to: entries.first(where: { CacheRules.varyMatches($0.stored, request: request) }), now: now)
        {
            return
        }
        if let entry = entries.first(where: { CacheRules.varyMatches($0.stored, request: request) }) {
            switch CacheRules.reuse(entry.stored, request: request, requestControl: requestCC, now: now, mode: mode) {
            case .fresh(let ttl):
                if var response = reply(from: entry, now: now, status: CacheStatus(hit: true, ttl: Int(ttl.rounded(.down)))) {
                    cache.count { $0.hits += 1 }
                    response.reuse = reuse(of: response, entry: entry, now: now)
                    return answer(response)
                }
            case .staleAccepted(let ttl):
                if let response = reply(from: entry, now: now, status: CacheStatus(hit: true, ttl: Int(ttl.rounded(.down)), detail: "max-stale")) {
                    cache.count { $0.hits += 1; $0.staleAnswers += 1 }
                    return answer(response)
                }
            case .staleWhileRevalidate(let ttl):
                if let response = reply(from: entry, now: now, status: CacheStatus(hit: true, ttl: Int(ttl.rounded(.down)), detail: "stale-while-revalidate")) {
                    cache.count { $0.hits += 1; $0.staleAnswers += 1 }
                    revalidateBehind(entry)
                    return answer(response)
                }
            case .validate(let reason):
                if requestCC.has("only-if-cached") { return answer(onlyIfCached()) }
                // A HEAD cannot bring a body to store: it goes to the origin as it is.
                guard method == .get else { return forward(request, status: CacheStatus(forward: .stale)) }
                if collapsing, wait() { return }
                return validate(entry, reason: reason)
            }
        }
        // A response being stored answers this request too, read as it grows.
        if let attached = attachToFill(now: now) { return answer(attached) }
        if requestCC.has("only-if-cached") { return answer(onlyIfCached()) }
        if method == .get, collapsing, !isPassing(now: now), wait() { return }
        forward(request, status: CacheStatus(forward: entries.isEmpty ? .uriMiss : .varyMiss))
    }

    /// A cache policy other than the protocol's (``CachePolicy``): returns whether it answered, forwarded or failed
    /// the request; false leaves it to RFC 9111's rules.
    private func applying(_ policy: RequestCachePolicy, to entry: CacheEntry?, now: Double) -> Bool {
        let name = policy.policy.rawValue
        switch policy.policy {
        case .useProtocolPolicy:
            return false
        case .reloadIgnoringCache:
            forward(request, status: CacheStatus(forward: .request, detail: name))
            return true
        case .reloadRevalidating:
            guard let entry, request.method == .get else { return false }
            validate(entry, forward: .request, detail: name)
            return true
        case .returnCacheElseLoad, .returnCacheDontLoad, .staleWhileRevalidate:
            let age = entry.map { CacheRules.currentAge($0.stored, now: now) }
            if let entry, let age, policy.maxAge.map({ age <= Double($0) }) ?? true {
                let freshFor = CacheRules.freshnessLifetime(entry.stored, mode: mode).seconds - age
                var status = CacheStatus(hit: true, ttl: Int(freshFor.rounded(.down)), detail: name)
                if freshFor <= 0 { status.detail = name + "; stale" }
                if let response = reply(from: entry, now: now, status: status) {
                    cache.count { counters in
                        counters.hits += 1
                        if freshFor <= 0 { counters.staleAnswers += 1 }
                    }
                    if policy.policy == .staleWhileRevalidate, freshFor <= 0 { revalidateBehind(entry) }
                    answer(response)
                    return true
                }
            }
            if policy.policy == .returnCacheDontLoad {
                let why = age.map { "the stored answer is \(Int($0)) s old, more than \(policy.maxAge ?? 0) s" } ?? "nothing is stored for \(key)"
                cache.count { $0.misses += 1 }
                finish(.failure(FetchError.notCached(why)))
                return true
            }
            // Too old for the policy: the origin is asked, with the stored answer's validators.
            if let entry, age != nil, request.method == .get {
                validate(entry, forward: .stale, detail: name + "; older than max-age")
                return true
            }
            return false
        }
    }

    private func onlyIfCached() -> ResourceResponse {
        var response = ResourceResponse.error(504, "not in the cache, and the request said only-if-cached")
        CacheStatus(forward: .uriMiss, detail: "only-if-cached").add(to: &response.headers, cache: cache.configuration.name)
        return response
    }

    // MARK: Answering from the cache

    /// The stored response as an answer to this request: the client's preconditions and range applied, `Age` set,
    /// the cache's status added. Nil when its body is gone (evicted since the lookup).
    private func reply(from entry: CacheEntry, now: Double, status: CacheStatus) -> ResourceResponse? {
        guard let body = cache.store.body(entry) else { return nil }
        cache.store.touch(entry.id, key: entry.key)
        var response = Self.reply(stored: entry.stored, body: body, length: entry.bodyLength, to: request, now: now, mode: mode)
        status.add(to: &response.headers, cache: cache.configuration.name)
        return response
    }

    /// Builds the answer from a stored response and its body (a file region, or a fill's stream).
    static func reply(stored: StoredResponse, body: ResponseBody, length: Int64?, to request: ResourceRequest, now: Double, mode: CacheMode) -> ResourceResponse {
        var headers = stored.headers
        headers.remove("Age")
        headers.add("Age", String(Int(CacheRules.currentAge(stored, now: now))))
        // A qualified no-cache names fields that may not be reused without validation: they are left out.
        for name in stored.facts.control(mode).control.fieldNames("no-cache") ?? [] { headers.remove(name) }
        guard let length, (200...299).contains(stored.status), stored.status != 206 else {
            return ResourceResponse(status: stored.status, headers: headers, body: request.method == .head ? .empty : body)
        }
        let date = stored.facts.date ?? stored.responseTime
        // Without Last-Modified, the stored response's Date stands in for If-Modified-Since (RFC 9111 §4.3.2), never
        // for If-Range, which needs a strong validator.
        let lastModified = stored.facts.lastModified
        let validators = Validators(
            etag: stored.facts.etag, lastModified: lastModified ?? Timestamp(secondsSinceEpoch: Int64(date)),
            lastModifiedIsStrong: lastModified.map { Double($0.secondsSinceEpoch) <= date - 1 } ?? false)
        let answer = RepresentationSelection.select(method: request.method, headers: request.headers, validators: validators, size: length).answer(size: length)
        headers.remove("Content-Length")
        if answer.status == 206 { headers.remove("Content-Range") }
        if answer.status == 304 || answer.status == 412 || answer.status == 416 {
            for name in ["Content-Type", "Content-Encoding", "Content-Language"] where answer.status != 304 { headers.remove(name) }
        }
        answer.addFraming(to: &headers)
        let status = answer.status == 200 ? stored.status : answer.status
        guard answer.sendsBody, request.method != .head else { return ResourceResponse(status: status, headers: headers) }
        switch body {
        case .file(let region) where answer.length != region.length:
            guard let slice = region.slice(offset: region.offset + answer.offset, length: answer.length) else {
                return ResourceResponse(status: stored.status, headers: headers, body: body)
            }
            return ResourceResponse(status: status, headers: headers, body: .file(slice))
        case .bytes(let bytes) where answer.length != bytes.count:
            return ResourceResponse(status: status, headers: headers, body: .bytes(Array(bytes[Int(answer.offset)..<Int(answer.offset + answer.length)])))
        default:
            return ResourceResponse(status: status, headers: headers, body: body)
        }
    }

    /// How long a fresh hit's bytes stay the same for the same plain request: until its `Age` (and `ttl`) move to the
    /// next second, and while its entry stands. Only for a whole small body that no `Vary` or `no-cache=` field
    /// shapes (the server's reuse keys on the URL alone).
    private func reuse(of response: ResourceResponse, entry: CacheEntry, now: Double) -> AnswerReuse? {
        guard response.status == 200, case .bytes = response.body, entry.stored.varying.isEmpty,
            entry.stored.facts.control(mode).control.fieldNames("no-cache") == nil
        else { return nil }
        let age = CacheRules.currentAge(entry.stored, now: now)
        return AnswerReuse(until: now + (age.rounded(.down) + 1 - age), token: entry.token, clock: cache.configuration.clock)
    }

    /// Joins a fill in progress whose response this request would reuse.
    private func attachToFill(now: Double) -> ResourceResponse? {
        let fills = cache.filling.withLock { $0[key] ?? [] }
        for progress in fills where CacheRules.varyMatches(progress.stored, request: request) {
            switch CacheRules.reuse(progress.stored, request: request, now: now, mode: mode) {
            case .fresh(let ttl), .staleAccepted(let ttl), .staleWhileRevalidate(let ttl):
                guard let body = progress.fill.reader() else { continue }
                cache.count { $0.hits += 1; $0.collapsed += 1 }
                var response = Self.reply(stored: progress.stored, body: .stream(body), length: nil, to: request, now: now, mode: mode)
                CacheStatus(hit: true, ttl: Int(ttl.rounded(.down)), collapsed: true).add(to: &response.headers, cache: cache.configuration.name)
                return response
            case .validate:
                continue
            }
        }
        return nil
    }

    // MARK: Collapsing

    /// Waits behind another request for the same URL that is asking the origin already; true when waiting (the
    /// lookup runs again, on this request's executor, once that request's answer is known), false when this
    /// request is the one to ask.
    private func wait() -> Bool {
        let id = ObjectIdentifier(self)
        let resume: @Sendable () -> Void = { [self, executor] in
            state.withLock { $0.waiting = false }
            executor.execute { self.run(collapsing: false) }
        }
        let waiting = cache.collapsed.withLock { table -> Bool in
            if table[key] != nil {
                table[key]!.append(HTTPCache.Waiter(id: id, resume: resume))
                return true
            }
            table[key] = []
            return false
        }
        state.withLock { state in
            if waiting { state.waiting = true } else { state.leading = true }
        }
        if waiting { cache.count { $0.collapsed += 1 } }
        return waiting
    }

    /// This request's answer is known (stored, being stored, or not storable): if it was leading, the requests
    /// behind it look again.
    private func releaseWaiters() {
        let leading = state.withLock { state -> Bool in
            defer { state.leading = false }
            return state.leading
        }
        guard leading else { return }
        let waiters = cache.collapsed.withLock { $0.removeValue(forKey: key) } ?? []
        for waiter in waiters { waiter.resume() }
    }

    private func isPassing(now: Double) -> Bool {
        cache.passing.withLock { table in
            guard let until = table[key] else { return false }
            if until > now { return true }
            table[key] = nil
            return false
        }
    }

    // MARK: Forwarding

    /// A request the cache does not answer: forwarded as it is; an unsafe method's success invalidates (§4.4).
    private func forwardUnsafe() {
        let (cache, request) = (self.cache, self.request)
        let handle = fetcher.upstream.fetch(request, timeouts: timeouts, on: executor) { result in
            guard case .success(var response) = result else { return self.finish(result) }
            for url in CacheRules.invalidatedURLs(method: request.method, url: request.url, status: response.status, headers: response.headers) {
                cache.store.remove(key: url)
            }
            CacheStatus(forward: .method).add(to: &response.headers, cache: cache.configuration.name)
            self.answer(response)
        }
        setInFlight(handle)
    }

    private func setInFlight(_ handle: (any FetchHandle)?) {
        guard let handle else { return }
        let cancelled = state.withLock { state -> Bool in
            if state.completion != nil { state.inFlight = handle }
            return state.cancelled
        }
        if cancelled { handle.cancel() }
    }

    /// Asks the origin whether `entry` is still current (with its validators when it has them).
    private func validate(_ entry: CacheEntry, reason: CacheRules.ValidationReason) {
        validate(entry, forward: reason.forward, detail: reason.detail)
    }

    /// Asks the origin whether `entry` still holds, saying why in `Cache-Status` (`detail`: a policy's name, or nil).
    private func validate(_ entry: CacheEntry, forward: CacheStatus.Forward, detail: String?) {
        var conditional = request
        for name in Self.conditionalFields { conditional.headers.remove(name) }
        for (name, value) in CacheRules.conditionalFields(for: entry.stored) { conditional.headers.add(name, value) }
        cache.count { $0.revalidations += 1 }
        ask(conditional, status: CacheStatus(forward: forward, detail: detail), validating: entry)
    }

    /// Asks the origin for what the cache cannot answer.
    private func forward(_ upstreamRequest: ResourceRequest, status: CacheStatus) {
        cache.count { $0.misses += 1 }
        ask(upstreamRequest, status: status, validating: nil)
    }

    private func ask(_ upstreamRequest: ResourceRequest, status: CacheStatus, validating entry: CacheEntry?) {
        let requestTime = cache.now()
        let handle = fetcher.upstream.fetch(upstreamRequest, timeouts: timeouts, on: executor) { result in
            self.received(result, asked: upstreamRequest, requestTime: requestTime, status: status, validating: entry)
        }
        setInFlight(handle)
    }

    private func received(
        _ result: Result<ResourceResponse, any Error>, asked: ResourceRequest, requestTime: Double, status: CacheStatus, validating entry: CacheEntry?
    ) {
        let now = cache.now()
        var status = status
        switch result {
        case .failure(let error):
            defer { releaseWaiters() }
            if !(error is CancellationError), let entry, CacheRules.staleOnError(entry.stored, now: now, mode: mode, failure: nil),
                let response = reply(from: entry, now: now, status: CacheStatus(forward: .stale, detail: "origin unreachable; stale"))
            {
                cache.count { $0.staleAnswers += 1 }
                return answer(response)
            }
            finish(.failure(error))
        case .success(let response):
            if let entry, response.status == 304 {
                defer { releaseWaiters() }
                let freshened = CacheRules.freshened(entry.stored, with: response.headers, requestTime: requestTime, responseTime: now, mode: mode)
                cache.store.update(entry, stored: freshened)
                var updated = entry
                updated.stored = freshened
                status.forwardStatus = 304
                let ttl = CacheRules.freshnessLifetime(freshened, mode: mode).seconds - CacheRules.currentAge(freshened, now: now)
                status.ttl = Int(ttl.rounded(.down))
                if let reply = reply(from: updated, now: now, status: status) { return answer(reply) }
                return finish(.failure(FetchError.badResponse("the stored response of \(key) went while it was revalidated")))
            }
            if let entry, (500...599).contains(response.status), CacheRules.staleOnError(entry.stored, now: now, mode: mode, failure: response.status),
                let reply = reply(from: entry, now: now, status: CacheStatus(forward: .stale, forwardStatus: response.status, detail: "stale-if-error"))
            {
                releaseWaiters()
                cache.count { $0.staleAnswers += 1 }
                return answer(reply)
            }
            store(response, asked: asked, requestTime: requestTime, responseTime: now, status: status)
        }
    }

    /// A full response from the origin: stored when the rules allow (its body read by this request as the cache
    /// writes it), passed on as it is otherwise.
    private func store(_ response: ResourceResponse, asked: ResourceRequest, requestTime: Double, responseTime: Double, status: CacheStatus) {
        var response = response
        var status = status
        // A response without Date gets one before it is stored or passed on (RFC 9110 §6.6.1).
        if !response.headers.contains("Date") { response.headers.add("Date", Timestamp(secondsSinceEpoch: Int64(responseTime)).httpDate) }
        let decision = CacheRules.storability(request: asked, status: response.status, headers: response.headers, mode: mode)
        let varying = CacheRules.varyingFields(of: response.headers, request: request)
        guard asked.method == .get, decision == .store, let varying, let file = cache.store.createFillFile() else {
            if case .dontStore(let why) = decision { status.detail = why } else if varying == nil { status.detail = "Vary: *" }
            // A full answer to a plain GET that cannot be stored says so of the URL: the next misses for it go straight
            // to the origin for a while instead of waiting behind one.
            let plain = asked.method == .get && !asked.headers.contains { field in Self.conditionalFields.contains { HTTPHeaders.equalNames($0, field.name) } }
            if plain, ![206, 304, 412, 416].contains(response.status) {
                let url = key
                cache.passing.withLock { table in
                    // Refreshed once it is half gone rather than on every miss (a write hashes the URL again).
                    if let until = table[url], until > responseTime + Self.passingSeconds / 2 { return }
                    if table.count > 10_000 { table.removeAll() }
                    table[url] = responseTime + Self.passingSeconds
                }
            }
            releaseWaiters()
            status.add(to: &response.headers, cache: cache.configuration.name)
            return answer(response)
        }
        let stored = StoredResponse(
            status: response.status, headers: CacheRules.storedHeaders(response.headers, mode: mode), varying: varying,
            requestTime: requestTime, responseTime: responseTime)
        let fill = CacheFill(id: file.id, key: key, descriptor: file.descriptor, expectedLength: response.headers["Content-Length"].flatMap { Int64($0) })
        let progress = HTTPCache.InProgress(fill: fill, stored: stored)
        let (sharedCache, url, original) = (cache, key, request)
        cache.passing.withLock { $0[url] = nil }
        cache.filling.withLock { $0[url, default: []].append(progress) }
        let reader = fill.reader()
        // What the new response replaces (the entries this request selects) goes when it is committed.
        fill.start(copying: response.body, limit: cache.configuration.maxBytes) { length in
            // Stored first, then no longer in progress: a request in between finds one or the other.
            if let length {
                if sharedCache.store.commit(id: file.id, key: url, stored: stored, bodyLength: length, replacing: original) {
                    sharedCache.count { $0.stored += 1 }
                }
            } else {
                sharedCache.store.discardFill(file.id)
            }
            sharedCache.filling.withLock { table in
                table[url]?.removeAll { $0.fill === fill }
                if table[url]?.isEmpty == true { table[url] = nil }
            }
        }
        releaseWaiters()
        status.stored = true
        status.add(to: &response.headers, cache: cache.configuration.name)
        // This request reads the body as the cache writes it (the reader was joined before anything could end the fill).
        if let reader { response.body = .stream(reader) }
        answer(response)
    }

    /// The client's own conditions and range: a request with any of them is not plain, and a validation replaces them.
    static let conditionalFields = ["If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range", "Range"]

    /// How long a URL whose plain GET was not storable goes straight to the origin, without waiting behind another.
    static let passingSeconds = 60.0

    /// `stale-while-revalidate`: the stale answer goes out now; the origin is asked behind it, once for all
    /// requests, and what it says is stored for the next.
    private func revalidateBehind(_ entry: CacheEntry) {
        let filling = cache.filling
        let started = cache.collapsed.withLock { table -> Bool in
            guard table[key] == nil else { return false }
            // The revalidation before this one already has its answer and is storing it (its fill joins `filling`
            // before it leaves `collapsed`): a second would ask the origin again for what is arriving.
            guard filling.withLock({ $0[key]?.isEmpty ?? true }) else { return false }
            table[key] = []
            return true
        }
        guard started else { return }
        var background = request
        background.method = .get
        let revalidation = CachedExchange(background, timeouts: timeouts, fetcher: fetcher, executor: InlineExecutor.shared) { result in
            // Nobody waits for this answer: a stored body is read to its end by the fill alone.
            if case .success(let response) = result, case .stream(let stream) = response.body {
                Task { for try await _ in stream {} }
            }
        }
        revalidation.state.withLock { $0.leading = true }
        revalidation.validate(entry, forward: .stale, detail: "stale-while-revalidate")
    }
}
