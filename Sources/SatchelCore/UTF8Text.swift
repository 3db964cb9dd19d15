/// Text from bytes that must be UTF-8, or nil when any sequence in them is not (a stray continuation byte, an overlong
/// form, a surrogate, a scalar past U+10FFFF, a sequence cut short).
///
/// `String(validating:as:)` does the same, but Apple's SDKs declare it from iOS 18 and macOS 15, above the package's
/// floor (iOS 16, macOS 13); Linux ignores that availability, so only an Apple build would fail. The stdlib's UTF-8
/// parser has no such floor.
package enum UTF8Text {
    package static func decode<Bytes: Collection>(_ bytes: Bytes) -> String? where Bytes.Element == UInt8 {
        var iterator = bytes.makeIterator()
        var parser = Unicode.UTF8.ForwardParser()
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid: continue
            case .emptyInput: return String(decoding: bytes, as: UTF8.self)
            case .error: return nil
            }
        }
    }
}
