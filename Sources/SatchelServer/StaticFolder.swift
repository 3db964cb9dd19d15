import Foundation
import SatchelCore
import SatchelEngine
import SatchelHTTP
import SatchelPlatform

/// Serves a folder of bundles and catalogs (`--publish`) as plain static files, with the same Range,
/// If-Range and ETag rules as packages, and the caching each kind of file allows (``ReleaseCaching``). The ETag is
/// derived from size and modification time, since these files have no manifest.
struct StaticFolder: Sendable {
    let root: String

    func respond(to request: ResourceRequest, path rawPath: String) -> ResourceResponse? {
        guard let decoded = try? URLPath.decode(rawPath), let relative = try? URLPath.filePath(forDecoded: decoded, under: "/") else { return nil }
        let location = root + "/" + relative.value
        var info = stat()
        guard stat(location, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        let size = Int64(info.st_size)
        let etag = "\"\(String(size, radix: 16))-\(String(FileTimes.modified(info), radix: 16))\""
        var headers: HTTPHeaders = [
            "Content-Type": MIMETable.entry(for: relative).type, "ETag": etag, "Accept-Ranges": "bytes",
            "Cache-Control": ReleaseCaching.cacheControl(forPublished: relative.value),
        ]
        let modified = Timestamp(secondsSinceEpoch: FileTimes.modifiedSeconds(info))
        headers.add("Last-Modified", modified.httpDate)
        // A file written within the last second may change again within it: its date is then a weak validator.
        let validators = Validators(etag: etag, lastModified: modified, lastModifiedIsStrong: Int64(time(nil)) > modified.secondsSinceEpoch)
        let answer = RepresentationSelection.select(method: request.method, headers: request.headers, validators: validators, size: size).answer(size: size)
        answer.addFraming(to: &headers)
        guard answer.sendsBody, request.method != .head else { return ResourceResponse(status: answer.status, headers: headers) }
        guard let region = FileRegion(path: location, offset: answer.offset, length: answer.length) else { return nil }
        return ResourceResponse(status: answer.status, headers: headers, body: .file(region))
    }
}
