import Foundation
import SatchelCore
import SatchelHTTP
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A catalog as fetched: its bytes and parsed form, and whether a trusted key signed it.
public struct FetchedCatalog: Sendable {
    public var url: String
    public var catalog: Catalog
    public var signed: Bool
    /// True when the server answered 304 and the cached copy was used.
    public var notModified: Bool
    /// With root keys: the walk to the trust version the catalog names, complete (its `state` is the trust the catalog
    /// was checked with; its `accepted` documents are the ones to keep once the catalog is accepted). Nil without.
    public var trust: TrustWalk?

    public init(url: String, catalog: Catalog, signed: Bool, notModified: Bool, trust: TrustWalk? = nil) {
        self.url = url
        self.catalog = catalog
        self.signed = signed
        self.notModified = notModified
        self.trust = trust
    }

    /// The trust version the device holds after this catalog (0: none yet); nil without root keys.
    public var trustVersion: Int64? { trust?.state.version }

    /// The absolute URL of an entry's or delta's `url`, which may be relative to the catalog.
    public func resolve(_ reference: String) throws(UpdateError) -> String {
        guard let base = URL(string: url), let resolved = URL(string: reference, relativeTo: base)?.absoluteURL,
            let scheme = resolved.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else { throw .invalidURL(reference) }
        return resolved.absoluteString
    }
}

/// How a catalog's signatures are checked.
public enum CatalogTrust: Sendable {
    /// Today's rule: `catalog.json.sig` by any of these keys; nothing checked without keys.
    case keys([VerifyingKey])
    /// Root keys (docs/formats.md, "Trust"): walk from `state` to the trust version the catalog names, fetching
    /// `trust/<n>.json` resolved against `production` (production's catalog URL, for every channel), then count
    /// `catalog.json.sig` and `catalog.json.sigs` against that version's catalog role.
    case chain(TrustState, production: String)
}

/// Fetches `catalog.json` with a conditional GET (the copy and its ETag are cached under the store's
/// `downloads/`), checks its signature (`catalog.json.sig`) when keys are trusted, and refuses it once expired.
/// Every check runs on every fetch, the cached copy included: a 304 does not make an expired catalog fresh.
///
/// With root keys (``CatalogTrust/chain(_:production:)``) the catalog is read first, for the trust version it names;
/// the walk fetches exactly the versions from the one after the newest held to that one, each refused above 64 KiB
/// before parsing, expiry is checked on the newest reached only, and the signatures are counted against its catalog
/// role (the legacy `.sig` counting as one). Nothing is kept here: the updater keeps the walk's documents once the
/// catalog is accepted.
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

    /// `headers` go with the catalog request (the device's report, docs/formats.md "Device reports").
    ///
    /// A signature that does not match is fetched again, catalog and all, up to the retry policy's attempts: a CDN
    /// keeps `catalog.json` and `catalog.json.sig` as two entries and may refresh one a moment before the other (one
    /// request revalidates while others get the stale copy), so a device can meet a new signature beside an old
    /// catalog for as long as one origin request takes.
    public func fetch(_ url: String, trustedKeys: [VerifyingKey], now: Timestamp, headers extra: HTTPHeaders = HTTPHeaders()) async throws(UpdateError) -> FetchedCatalog {
        try await fetch(url, trust: .keys(trustedKeys), now: now, headers: extra)
    }

    /// As ``fetch(_:trustedKeys:now:headers:)``, with `trust` saying how signatures are checked. With root keys, a
    /// signature file made for other bytes than the catalog, or a `.sig` no key the device knows verifies, is a sign of a
    /// CDN that refreshed one file before the other: refused short of the threshold, the whole is fetched again.
    public func fetch(_ url: String, trust: CatalogTrust, now: Timestamp, headers extra: HTTPHeaders = HTTPHeaders()) async throws(UpdateError) -> FetchedCatalog {
        var attempt = 1
        while true {
            var stale = false
            do {
                return try await fetchOnce(url, trust: trust, now: now, headers: extra, stale: &stale)
            } catch {
                if case .catalogSignatureInvalid = error { stale = true }
                guard stale, attempt < retry.attempts else { throw error }
                attempt += 1
                do { try await Task.sleep(for: retry.delay(beforeAttempt: attempt)) } catch { throw .cancelled }
            }
        }
    }

    /// - Parameter stale: set when a refusal may come from a CDN refreshing the catalog and its signatures out of step.
    private func fetchOnce(
        _ url: String, trust: CatalogTrust, now: Timestamp, headers extra: HTTPHeaders, stale: inout Bool
    ) async throws(UpdateError) -> FetchedCatalog {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw .invalidURL(url)
        }
        try ResumableDownload.makeFolder(cacheFolder)
        let cachedBody = cachePath(for: url)
        let cachedTag = cachedBody + ".etag"
        var headers = extra
        let cached = try? Data(contentsOf: URL(fileURLWithPath: cachedBody))
        if cached != nil, let tag = try? String(contentsOfFile: cachedTag, encoding: .utf8), !tag.isEmpty {
            headers.add("If-None-Match", tag)
        }
        let (status, responseHeaders, body) = try await get(url, headers: headers, maxBytes: Catalog.maxBytes)
        let bytes: [UInt8]
        let notModified: Bool
        switch status {
        case 200:
            bytes = body
            notModified = false
            // The cache only saves a download; a failed write just means no 304 next time.
            if (try? Data(bytes).write(to: URL(fileURLWithPath: cachedBody), options: .atomic)) != nil {
                if let tag = responseHeaders["ETag"] { try? tag.write(toFile: cachedTag, atomically: true, encoding: .utf8) } else { unlink(cachedTag) }
            }
        case 304 where cached != nil:
            bytes = Array(cached!)
            notModified = true
        default:
            throw .httpStatus(url: url, status: status)
        }
        guard case .keys(let trustedKeys) = trust else {
            guard case .chain(let state, let production) = trust else { throw .invalidURL(url) }
            return try await fetchChained(url, bytes: bytes, notModified: notModified, state: state, production: production, now: now, stale: &stale)
        }
        var signed = false
        if !trustedKeys.isEmpty {
            let signatureURL = url + ".sig"
            let (sigStatus, _, sigBody) = try await get(signatureURL, headers: HTTPHeaders(), maxBytes: 1024)
            guard sigStatus == 200 else {
                if sigStatus == 404 || sigStatus == 410 { throw .catalogUnsigned(url: url) }
                throw .httpStatus(url: signatureURL, status: sigStatus)
            }
            let text = String(decoding: sigBody, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard let signature = try? Signature(base64: text),
                (try? SignatureCheck.verify(bytes, signature: signature, trustedKeys: trustedKeys)) == true
            else { throw .catalogSignatureInvalid(url: url) }
            signed = true
        }
        let catalog: Catalog
        do { catalog = try Catalog.decode(bytes) } catch { throw .catalog(url: url, error) }
        guard !catalog.isExpired(at: now) else { throw .catalogExpired(url: url, expires: catalog.expires, now: now) }
        return FetchedCatalog(url: url, catalog: catalog, signed: signed, notModified: notModified)
    }

    /// The catalog checked under root keys: the walk, the expiry of the newest version reached, the signatures.
    private func fetchChained(
        _ url: String, bytes: [UInt8], notModified: Bool, state: TrustState, production: String, now: Timestamp, stale: inout Bool
    ) async throws(UpdateError) -> FetchedCatalog {
        let catalog: Catalog
        do { catalog = try Catalog.decode(bytes) } catch { throw .catalog(url: url, error) }
        var walk: TrustWalk
        do { walk = try state.walk(toCatalogNaming: catalog.trust) } catch { throw .trust(url: url, error) }
        while case .fetch(let version) = walk.next {
            let documentURL = try Self.trustURL(version, production: production)
            let (status, _, body) = try await get(documentURL, headers: HTTPHeaders(), maxBytes: TrustDocument.maxBytes) { size in
                .trust(url: documentURL, .document(version: version, .tooLarge(size, limit: TrustDocument.maxBytes)))
            }
            guard status == 200 else { throw .httpStatus(url: documentURL, status: status) }
            do { try walk.receive(body) } catch { throw .trust(url: documentURL, error) }
        }
        let reached: TrustState
        do { reached = try walk.finish(at: now) } catch { throw .trust(url: url, error) }
        let signers = reached.signers(for: .catalog)
        if signers.isChecked {
            // Either signature file may be absent: a 403 (object stores without list permission, and `satchel serve
            // --publish` for a path it has no file for), 404 or 410. A missing file only takes signatures away, so no
            // answer can make a catalog pass that the files present would not.
            let absent: Set<Int> = [403, 404, 410]
            let legacyURL = url + ".sig"
            let (sigStatus, _, sigBody) = try await get(legacyURL, headers: HTTPHeaders(), maxBytes: 1024)
            guard sigStatus == 200 || absent.contains(sigStatus) else { throw .httpStatus(url: legacyURL, status: sigStatus) }
            let legacy = sigStatus == 200 ? try? Signature(base64: String(decoding: sigBody, as: UTF8.self)) : nil
            let keyedURL = url + SignatureFile.suffix
            let (sigsStatus, _, sigsBody) = try await get(keyedURL, headers: HTTPHeaders(), maxBytes: SignatureFile.maxBytes) { size in
                .catalogSignatures(url: keyedURL, .tooLarge(size, limit: SignatureFile.maxBytes))
            }
            guard sigsStatus == 200 || absent.contains(sigsStatus) else { throw .httpStatus(url: keyedURL, status: sigsStatus) }
            var keyed: SignatureFile?
            if sigsStatus == 200 {
                do { keyed = try SignatureFile.decode(sigsBody) } catch { throw .catalogSignatures(url: keyedURL, error) }
            }
            let covering = keyed.map { $0.covers(bytes) } ?? true
            do { try signers.verify(bytes, signatures: covering ? keyed?.signatures ?? [] : [], legacy: legacy) } catch {
                // A .sigs made for other bytes, or a .sig no key this device knows verifies: perhaps a CDN mid-refresh.
                let knownLegacy = legacy.map { signature in
                    (Array(signers.keys.values) + Array(signers.revoked.values) + Array(signers.known.values)).contains { $0.isValid(signature, for: bytes) }
                } ?? true
                stale = !covering || !knownLegacy
                throw .trust(url: url, error)
            }
        }
        guard !catalog.isExpired(at: now) else { throw .catalogExpired(url: url, expires: catalog.expires, now: now) }
        return FetchedCatalog(url: url, catalog: catalog, signed: signers.isChecked, notModified: notModified, trust: walk)
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
