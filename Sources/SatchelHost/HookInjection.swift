import SatchelCore
import SatchelHTTP

/// The hook written inline into a package's HTML page (``HostConfiguration/HookDelivery/inlineInPages(extraHosts:)``):
/// as the first thing in `<head>` (or after the doctype, or at the start), so it runs before the page's own scripts.
/// Inline, because its configuration carries the launch's secret: a `<script src>` URL could be loaded by any site as a
/// script and read through the hooks it installs. Pages larger than ``largestPage`` pass untouched (HTML pages are
/// small; this bounds memory).
enum HookInjection {
    static let largestPage: Int64 = 4 << 20

    /// An HTML page the hook may go into: a 200, or the 503 of an offline page.
    static func isPage(_ response: ResourceResponse) -> Bool {
        (response.status == 200 || response.status == 503) && response.headers[ResponseField.contentType]?.hasPrefix("text/html") == true
    }

    /// The page arrives as a stream (a large page of a built-in bundle, decoded as it is sent): it must be read first.
    static func mustRead(_ response: ResourceResponse) -> Bool {
        if case .stream = response.body { return true }
        return false
    }

    /// A streamed page read whole (bounded), so the hook can go in like any other page's.
    static func reading(_ response: ResourceResponse) async -> ResourceResponse {
        guard case .stream(let stream) = response.body,
            (response.body.knownLength ?? Int64(response.headers[ResponseField.contentLength] ?? "") ?? .max) <= largestPage
        else { return response }
        var bytes: [UInt8] = []
        do { for try await chunk in stream { bytes += chunk } } catch { return .error(500, "cannot read the page: \(error)") }
        var read = response
        read.body = .bytes(bytes)
        return read
    }

    /// `response` with `script` inserted; its ETag marked, so a validator of the page without the hook never matches.
    static func inserting(_ script: String, into response: ResourceResponse) -> ResourceResponse {
        guard isPage(response) else { return response }
        let bytes: [UInt8]
        switch response.body {
        case .bytes(let all): bytes = all
        case .file(let region) where region.length <= largestPage:
            guard let all = try? region.readAll() else { return response }
            bytes = all
        default: return response
        }
        // `</` never appears inside the script element, so nothing in it can end the element early.
        let tag = Array(("<script>" + script.replacingOccurrences(of: "</", with: "<\\/") + "</script>").utf8)
        var insertAt = 0
        let lower = bytes.prefix(4096).map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
        if let head = Self.headTag(in: lower), let close = lower[head...].firstIndex(of: UInt8(ascii: ">")) {
            insertAt = close + 1
        } else if let doctype = lower.firstRange(of: Array("<!doctype".utf8)), let close = lower[doctype.upperBound...].firstIndex(of: UInt8(ascii: ">")) {
            insertAt = close + 1
        }
        var body = bytes
        body.insert(contentsOf: tag, at: insertAt)
        var headers = response.headers
        headers.set(ResponseField.contentLength, String(body.count))
        if let etag = headers[ResponseField.etag] { headers.set(ResponseField.etag, String(etag.dropLast()) + "-hook\"") }
        return ResourceResponse(status: response.status, headers: headers, body: .bytes(body))
    }

    /// Where the `<head>` start tag's name ends (`<head>` or `<head …>`, never `<header>`), in lower-cased bytes.
    static func headTag(in lower: [UInt8]) -> Int? {
        var from = lower.startIndex
        while let found = lower[from...].firstRange(of: Array("<head".utf8)) {
            let next = found.upperBound < lower.endIndex ? lower[found.upperBound] : 0
            if next == UInt8(ascii: ">") || next == 0x20 || next == 0x09 || next == 0x0A || next == 0x0D || next == 0x0C || next == UInt8(ascii: "/") {
                return found.upperBound
            }
            from = found.upperBound
        }
        return nil
    }
}
