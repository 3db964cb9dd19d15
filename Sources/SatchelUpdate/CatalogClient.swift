import Foundation
import SatchelCore
import SatchelHTTP
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A catalog as fetched and accepted (``CatalogAcceptance``): its parsed form, whether a key checked it, and what the
/// device keeps for it.
public struct FetchedCatalog: Sendable {
    public var url: String
    public var catalog: Catalog
    public var signed: Bool
    /// True when the server answered 304 and the cached copy was used.
    public var notModified: Bool
    /// What the acceptance decided to keep: the trust reached (what bundles of this update are judged with), the trust
    /// documents accepted on the walk, the URL's new serial floor.
    public var accepted: AcceptedCatalog

    public init(url: String, notModified: Bool, accepted: AcceptedCatalog) {
        self.url = url
        self.catalog = accepted.catalog
        self.signed = accepted.signed
        self.notModified = notModified
        self.accepted = accepted
    }

    /// The trust version the device holds after this catalog (0: none yet); nil without root keys.
    public var trustVersion: Int64? { accepted.trust.anchor == nil ? nil : accepted.trust.version }

    /// The absolute URL of an entry's or delta's `url`, which may be relative to the catalog.
    public func resolve(_ reference: String) throws(UpdateError) -> String {
        guard let base = URL(string: url), let resolved = URL(string: reference, relativeTo: base)?.absoluteURL,
            let scheme = resolved.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else { throw .invalidURL(reference) }
        return resolved.absoluteString
    }
}

/// Fetches `catalog.json` with a conditional GET (the copy and its ETag are cached under the store's `downloads/`) and
/// what ``CatalogAcceptance`` asks for next (`trust/<n>.json` resolved against production's catalog URL, the signature
/// files), hands each to it, and returns what it accepted. Every rule of acceptance is the machine's; this type only
/// fetches: HTTP statuses (an absent file is ``FetchedDocument``'s rule), size limits while downloading, retries, and
/// the refetch of a catalog whose signatures a CDN refreshed out of step. Every check runs on every fetch, the cached
/// copy included: a 304 does not make an expired catalog fresh.
public struct CatalogClient: Sendable {
    public let fetcher: any NetworkFetcher
    public let timeouts: FetchTimeouts
    public let retry: RetryPolicy
    public let cacheFolder: String

    public init(fetcher: any NetworkFetcher, cacheFolder: String, timeouts: FetchTimeouts = FetchTimeouts(), retry: RetryPolicy = RetryPolicy()) {
        self.fetcher = fetcher
        self.cacheFolder = cacheFolder
        self.timeouts = timeouts
        self.retry = retry
    }

    /// Fetches and judges the catalog at `url`.
    ///
    /// A refusal that may come from a CDN mid-refresh (``CatalogRefusal/mayBeStale``) fetches the catalog and its
    /// signature files again, up to the retry policy's attempts: a CDN keeps `catalog.json` and its signatures as
    /// separate entries and may refresh one a moment before the other.
    /// - Parameters:
    ///   - trust: what the device trusts (an anchor and the documents kept, or plain keys alone).
    ///   - floor: `url`'s serial floor, if one was set.
    ///   - production: production's catalog URL, against which `trust/<n>.json` is resolved for every channel.
    ///   - headers: go with the catalog request (the device's report, docs/formats.md "Device reports").
    public func fetch(
        _ url: String, trust: TrustState, floor: SerialFloor?, production: String, now: Timestamp, headers extra: HTTPHeaders = HTTPHeaders()
    ) async throws(UpdateError) -> FetchedCatalog {
        var attempt = 1
        while true {
            do {
                return try await fetchOnce(url, trust: trust, floor: floor, production: production, now: now, headers: extra)
            } catch let failure {
                guard case .refused(let refusal, _, _) = failure, refusal.mayBeStale, attempt < retry.attempts else { throw failure.error(url: url) }
                attempt += 1
                do { try await Task.sleep(for: retry.delay(beforeAttempt: attempt)) } catch { throw .cancelled }
            }
        }
    }

    /// A fetch's failure: the machine's refusal (at the URL it concerns), or the network's.
    private enum Failure: Error {
        /// `plainKeys`: the device has no anchor (its refusals keep the words of plain keys' rule).
        case refused(CatalogRefusal, at: String, plainKeys: Bool)
        case fetching(UpdateError)

        /// The refusal as the updater reports it (`satchel update` prints it; the words are today's).
        func error(url: String) -> UpdateError {
            switch self {
            case .fetching(let error): error
            case .refused(let refusal, let at, let plainKeys): Self.updateError(refusal, at: at, plainKeys: plainKeys)
            }
        }

        static func updateError(_ refusal: CatalogRefusal, at url: String, plainKeys: Bool) -> UpdateError {
            switch refusal {
            case .malformed(let error): .catalog(url: url, error)
            case .trust(let refusal, _): .trust(url: url, refusal)
            case .trustDocumentMissing(_, let status): .httpStatus(url: url, status: status)
            case .signatureFile(let error): .catalogSignatures(url: url, error)
            case .signatures(.unsigned, _): .catalogUnsigned(url: url)
            case .signatures(let refusal, _): plainKeys ? .catalogSignatureInvalid(url: url) : .trust(url: url, refusal)
            case .expired(let expires, let now): .catalogExpired(url: url, expires: expires, now: now)
            case .replayed(let serial, let floor): .catalogReplayed(url: url, serial: serial, last: floor)
            }
        }
    }

    private func fetchOnce(
        _ url: String, trust: TrustState, floor: SerialFloor?, production: String, now: Timestamp, headers extra: HTTPHeaders
    ) async throws(Failure) -> FetchedCatalog {
        let (bytes, notModified) = try await catalogBytes(url, headers: extra)
        let plainKeys = trust.anchor == nil
        var acceptance: CatalogAcceptance
        do { acceptance = try CatalogAcceptance(catalog: bytes, trust: trust, floor: floor) } catch { throw .refused(error, at: url, plainKeys: plainKeys) }
        while true {
            switch acceptance.next {
            case .trustDocument(let version):
                let documentURL: String
                do { documentURL = try Self.trustURL(version, production: production) } catch { throw .fetching(error) }
                let fetched = try await document(documentURL, maxBytes: TrustDocument.maxBytes) { size in
                    .trust(url: documentURL, .document(version: version, .tooLarge(size, limit: TrustDocument.maxBytes)))
                }
                do { try acceptance.receiveTrustDocument(fetched) } catch { throw .refused(error, at: documentURL, plainKeys: plainKeys) }
            case .signatures(let keyed):
                let legacy = try await document(url + ".sig", maxBytes: DocumentLimits.legacySignature, tooLarge: nil)
                var keyedFile: FetchedDocument?
                if keyed {
                    let keyedURL = url + SignatureFile.suffix
                    keyedFile = try await document(keyedURL, maxBytes: SignatureFile.maxBytes) { size in
                        .catalogSignatures(url: keyedURL, .tooLarge(size, limit: SignatureFile.maxBytes))
                    }
                }
                acceptance.receiveSignatures(legacy: legacy, keyed: keyedFile)
            case .decide:
                do { return FetchedCatalog(url: url, notModified: notModified, accepted: try acceptance.decide(at: now)) } catch {
                    let at = if case .signatureFile = error { url + SignatureFile.suffix } else { url }
                    throw .refused(error, at: at, plainKeys: plainKeys)
                }
            }
        }
    }

    /// The catalog's bytes, by a conditional GET against the copy cached from the last fetch.
    private func catalogBytes(_ url: String, headers extra: HTTPHeaders) async throws(Failure) -> (bytes: [UInt8], notModified: Bool) {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw .fetching(.invalidURL(url))
        }
        do { try ResumableDownload.makeFolder(cacheFolder) } catch { throw .fetching(error) }
        let cachedBody = cachePath(for: url)
        let cachedTag = cachedBody + ".etag"
        var headers = extra
        let cached = try? Data(contentsOf: URL(fileURLWithPath: cachedBody))
        if cached != nil, let tag = try? String(contentsOfFile: cachedTag, encoding: .utf8), !tag.isEmpty {
            headers.add("If-None-Match", tag)
        }
        let (status, responseHeaders, body): (Int, HTTPHeaders, [UInt8])
        do { (status, responseHeaders, body) = try await get(url, headers: headers, maxBytes: Catalog.maxBytes) } catch { throw .fetching(error) }
        switch status {
        case 200:
            // The cache only saves a download; a failed write just means no 304 next time.
            if (try? Data(body).write(to: URL(fileURLWithPath: cachedBody), options: .atomic)) != nil {
                if let tag = responseHeaders["ETag"] { try? tag.write(toFile: cachedTag, atomically: true, encoding: .utf8) } else { unlink(cachedTag) }
            }
            return (body, false)
        case 304 where cached != nil:
            return (Array(cached!), true)
        default:
            throw .fetching(.httpStatus(url: url, status: status))
        }
    }

    /// A trust or signature file: present, absent (``FetchedDocument``'s statuses), or the network's failure.
    private func document(
        _ url: String, maxBytes: Int, tooLarge: (@Sendable (Int) -> UpdateError)?
    ) async throws(Failure) -> FetchedDocument {
        let (status, _, body): (Int, HTTPHeaders, [UInt8])
        do { (status, _, body) = try await get(url, headers: HTTPHeaders(), maxBytes: maxBytes, tooLarge: tooLarge) } catch { throw .fetching(error) }
        guard let fetched = FetchedDocument(status: status, body: body) else { throw .fetching(.httpStatus(url: url, status: status)) }
        return fetched
    }

    /// `trust/<version>.json`, resolved against production's catalog URL (every channel's trust is production's).
    public static func trustURL(_ version: Int64, production: String) throws(UpdateError) -> String {
        guard let base = URL(string: production), let url = URL(string: TrustDocument.path(version: version), relativeTo: base)?.absoluteURL else {
            throw .invalidURL(production)
        }
        return url.absoluteString
    }

    func cachePath(for url: String) -> String {
        "\(cacheFolder)/catalog-" + String(Digests.sha256Hex(Array(url.utf8)).prefix(16)) + ".json"
    }

    /// The copy of `url`'s catalog kept from the last fetch, unchecked (for what a device reports before it fetches).
    public func cached(_ url: String) -> Catalog? {
        guard let data = FileManager.default.contents(atPath: cachePath(for: url)) else { return nil }
        return try? Catalog.decode(Array(data))
    }

    /// A small GET, retried with backoff on network errors and 5xx; a body above `maxBytes` is cut off there and refused
    /// with `tooLarge` (endless data).
    private func get(
        _ url: String, headers: HTTPHeaders, maxBytes: Int, tooLarge: (@Sendable (Int) -> UpdateError)? = nil
    ) async throws(UpdateError) -> (Int, HTTPHeaders, [UInt8]) {
        var attempt = 0
        while true {
            attempt += 1
            do {
                let response = try await fetcher.fetch(ResourceRequest(method: .get, url: url, headers: headers), timeouts: timeouts)
                var body: [UInt8] = []
                for try await chunk in response.body.chunks() {
                    body += chunk
                    guard body.count <= maxBytes else { throw tooLarge?(body.count) ?? UpdateError.catalog(url: url, .tooLarge(body.count)) }
                }
                if response.status >= 500, attempt < retry.attempts {
                    try await Task.sleep(for: retry.delay(beforeAttempt: attempt + 1))
                    continue
                }
                return (response.status, response.headers, body)
            } catch let error as UpdateError {
                throw error
            } catch is CancellationError {
                throw .cancelled
            } catch {
                let fetchError = error as? FetchError ?? .connectionFailed("\(error)")
                guard attempt < retry.attempts else { throw .network(url: url, fetchError, attempts: attempt) }
                do { try await Task.sleep(for: retry.delay(beforeAttempt: attempt + 1)) } catch { throw .cancelled }
            }
        }
    }
}
