// Range and the conditional headers (RFC 9110 §13-14): no crash, and a partial answer always lies inside the
// representation, lower bound first.
import FuzzDriver
import SatchelCore

@_cdecl("range_main")
public func entry(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 { FuzzDriver.run(argc, argv, fuzz) }

public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard bytes.count >= 8 else { return 0 }
    // The first 8 bytes choose the representation's size; the rest are header values split by newlines.
    let sizeBits = bytes[..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    let representationSize = Int64(sizeBits % (UInt64(1) << 42))
    let fields = String(decoding: bytes[8...], as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    var headers = HTTPHeaders()
    let names = ["Range", "If-Range", "If-None-Match", "If-Match", "If-Modified-Since", "If-Unmodified-Since"]
    for (index, name) in names.enumerated() where index < fields.count { headers.add(name, fields[index]) }
    if let range = headers["Range"], let parsed = RangeRequest.parse(range) {
        for resolved in parsed.resolve(against: representationSize) {
            require(resolved.lowerBound >= 0 && resolved.upperBound < representationSize, "\(resolved) outside 0..<\(representationSize)")
        }
    }
    let validators = Validators(etag: "\"abc\"", lastModified: Timestamp(secondsSinceEpoch: 1_445_412_480))
    switch RepresentationSelection.select(method: "GET", headers: headers, validators: validators, size: representationSize) {
    case .partial(let range):
        require(range.lowerBound >= 0 && range.upperBound < representationSize, "partial \(range) outside \(representationSize)")
    case .unsatisfiable, .notModified, .preconditionFailed, .full: break
    }
    return 0
}
