import Foundation
import SatchelCore
import SatchelEngine

/// Serves a folder of bundles and catalogs (`--publish`) as plain static files, with the same Range,
/// If-Range and ETag rules as packages. The ETag is derived from size and modification time, since these
/// files have no manifest.
struct StaticFolder: Sendable {
    let root: String

    func respond(to request: ResourceRequest, path rawPath: String) -> ResourceResponse? {
        guard let decoded = try? URLPath.decode(rawPath), let relative = try? URLPath.filePath(forDecoded: decoded, under: "/") else { return nil }
        let location = root + "/" + relative.value
        var info = stat()
        guard stat(location, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        let size = Int64(info.st_size)
        let etag = "\"\(String(size, radix: 16))-\(String(Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec), radix: 16))\""
        var headers: HTTPHeaders = [
            "Content-Type": MIMETable.entry(for: relative).type, "ETag": etag, "Accept-Ranges": "bytes", "Cache-Control": "no-cache",
        ]
        var range: ClosedRange<Int64>?
        switch RepresentationSelection.select(method: request.method, headers: request.headers, etag: etag, size: size) {
        case .notModified:
            return ResourceResponse(status: 304, headers: headers)
        case .unsatisfiable:
            headers.add("Content-Range", "bytes */\(size)")
            headers.add("Content-Length", "0")
            return ResourceResponse(status: 416, headers: headers)
        case .partial(let selected): range = selected
        case .full: break
        }
        let offset = range?.lowerBound ?? 0
        let length = range.map { $0.upperBound - $0.lowerBound + 1 } ?? size
        if let range { headers.add("Content-Range", "bytes \(range.lowerBound)-\(range.upperBound)/\(size)") }
        headers.add("Content-Length", String(length))
        if request.method == "HEAD" { return ResourceResponse(status: range == nil ? 200 : 206, headers: headers) }
        guard let region = FileRegion(path: location, offset: offset, length: length) else { return nil }
        return ResourceResponse(status: range == nil ? 200 : 206, headers: headers, body: .file(region))
    }
}
