/// Percent-decoding (RFC 3986 §2.1), strict: every `%` must start two hex digits. Shared by the URL path
/// rules and body restoration, which differ only in which decoded bytes they refuse.
enum PercentDecoding {
    enum Failure: Error, Equatable {
        case badEscape
        /// A decoded byte that `refusing` rejected.
        case refusedByte(UInt8)
    }

    static func decode(_ text: Substring, refusing: (UInt8) -> Bool = { _ in false }) throws(Failure) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { throw .badEscape }
            let decoded = high << 4 | low
            if refusing(decoded) { throw .refusedByte(decoded) }
            bytes.append(decoded)
        }
        return bytes
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }
}
