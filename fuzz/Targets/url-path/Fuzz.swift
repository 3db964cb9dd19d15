// URL path decoding and SafePath: whatever the bytes, no crash, and whatever is accepted obeys the Formats'
// path rules (no empty, "." or ".." segment, no backslash, NUL or control character, NFC, not absolute).
import FuzzDriver
import SatchelCore

@_cdecl("url_path_main")
public func entry(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 { FuzzDriver.run(argc, argv, fuzz) }

public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let url = RequestURL("https://h.example" + (text.hasPrefix("/") ? text : "/" + text)) {
        if let decoded = try? URLPath.decode(url.rawPath), let path = try? URLPath.filePath(forDecoded: decoded, under: "/") {
            check(path)
        }
        _ = LogRedaction.redacting(text, secretParameters: ["POST_DATA"])
    }
    if let path = try? SafePath(validating: text) { check(path) }
    if let path = try? SafePath(normalizing: text) { check(path) }
    return 0
}

func check(_ path: SafePath) {
    let value = path.value
    require(!value.isEmpty && !value.hasPrefix("/"), "accepted an empty or absolute path: \(value.debugDescription)")
    for segment in value.split(separator: "/", omittingEmptySubsequences: false) {
        require(!segment.isEmpty && segment != "." && segment != "..", "accepted a bad segment in \(value.debugDescription)")
    }
    require(!value.unicodeScalars.contains { $0.value < 0x20 || $0 == "\\" || $0.value == 0x7F }, "accepted a control character or backslash")
    require(try! SafePath(validating: value) == path, "an accepted path is not valid on its own")
}

