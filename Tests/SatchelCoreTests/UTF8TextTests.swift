import SatchelCore
import Testing

/// UTF8Text stands in for `String(validating:as:)` (iOS 18, macOS 15) below the package's floor: it must accept and
/// refuse exactly what that does, which Linux's stdlib has without the floor.
@Suite("UTF-8 validation on the package's floor")
struct UTF8TextTests {
    static let cases: [(String, [UInt8])] = [
        ("empty", []),
        ("ASCII", Array("index.html".utf8)),
        ("two, three and four bytes", Array("é€😀".utf8)),
        ("a stray continuation byte", [0x61, 0x80]),
        ("an overlong slash", [0xC0, 0xAF]),
        ("an overlong NUL in three bytes", [0xE0, 0x80, 0x80]),
        ("a surrogate", [0xED, 0xA0, 0x80]),
        ("past U+10FFFF", [0xF4, 0x90, 0x80, 0x80]),
        ("a lead byte that never leads", [0xF8, 0x88, 0x80, 0x80, 0x80]),
        ("cut short", [0xE2, 0x82]),
        ("cut short before ASCII", [0xE2, 0x82, 0x41]),
        ("NUL", [0x00]),
        ("the largest scalar", [0xF4, 0x8F, 0xBF, 0xBF]),
    ]

    @Test("accepts and refuses as String(validating:as:) does", arguments: cases)
    func table(_ name: String, _ bytes: [UInt8]) {
        #expect(UTF8Text.decode(bytes) == String(validating: bytes, as: UTF8.self), "\(name)")
    }

    @Test("agrees with String(validating:as:) on 20,000 random byte strings biased toward UTF-8's edges")
    func random() {
        var generator = SystemRandomNumberGenerator()
        let interesting: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF]
        for _ in 0..<20_000 {
            let bytes = (0..<Int.random(in: 0...8, using: &generator)).map { _ in
                Bool.random(using: &generator) ? interesting.randomElement(using: &generator)! : UInt8.random(in: 0...255, using: &generator)
            }
            #expect(UTF8Text.decode(bytes) == String(validating: bytes, as: UTF8.self), "\(bytes)")
        }
    }
}
