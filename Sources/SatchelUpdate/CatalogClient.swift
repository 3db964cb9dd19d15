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

    /// The absolute URL of an entry's or delta's `url`, which may be relative to the catalog.
    public func resolve(_ reference: String) throws(UpdateError) -> String {
        guard let base = URL(string: url), let resolved = URL(string: reference, relativeTo: base)?.absoluteURL,
            let scheme = resolved.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else { throw .invalidURL(reference) }
        return resolved.absoluteString
    }
}

/// Fetches `catalog.json` with a conditional GET (the copy and its ETag are cached under the store's
/// `downloads/`), checks its signature (`catalog.json.sig`) when keys are trusted, and refuses it once expired.
/// Every check runs on every fetch, the cached copy included: a 304 does not make an expired catalog fresh.
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
        var attempt = 1
        while true {
            do {
                return try await fetchOnce(url, trustedKeys: trustedKeys, now: now, headers: extra)
            } catch {
                guard case .catalogSignatureInvalid = error, attempt < retry.attempts else { throw error }
                attempt += 1
                do { try await Task.sleep(for: retry.delay(beforeAttempt: attempt)) } catch { throw .cancelled }
            }
        }
    }

    private func fetchOnce(_ url: String, trustedKeys: [VerifyingKey], now: Timestamp, headers extra: HTTPHeaders) async throws(UpdateError) -> FetchedCatalog {
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

    func cachePath(for url: String) -> String {
        "\(cacheFolder)/catalog-" + String(Digests.sha256Hex(Array(url.utf8)).prefix(16)) + ".json"
    }

    /// The copy of `url`'s catalog kept from the last fetch, unchecked (for what a device reports before it fetches).
    public func cached(_ url: String) -> Catalog? {
        guard let data = FileManager.default.contents(atPath: cachePath(for: url)) else { return nil }
        return try? Catalog.decode(Array(data))
    }

    /// A small GET, retried with backoff on network errors and 5xx.
    private func get(_ url: String, headers: HTTPHeaders, maxBytes: Int) async throws(UpdateError) -> (Int, HTTPHeaders, [UInt8]) {
        var attempt = 0
        while true {
            attempt += 1
            do {
                let response = try await fetcher.fetch(ResourceRequest(method: .get, url: url, headers: headers), timeouts: timeouts)
                var body: [UInt8] = []
                for try await chunk in response.body.chunks() {
                    body += chunk
                    guard body.count <= maxBytes else { throw UpdateError.catalog(url: url, .tooLarge(body.count)) }
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
