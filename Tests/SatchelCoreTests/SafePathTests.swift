import Testing
@testable import SatchelCore

@Suite("SafePath: the one path rule of packer, installer and engine")
struct SafePathTests {
    @Test("accepts ordinary relative paths", arguments: [
        "index.html", "css/app.css", "a/b/c/d.js", "guide/café.html", "offline packages/index.html",
        "reference/ünïcode-名前.html", ".well-known/assetlinks.json", "a..b", "...", "x/.hidden", "emoji-😀.png",
    ])
    func acceptsValid(_ raw: String) throws {
        #expect(try SafePath(validating: raw).value == raw)
    }

    @Test("refuses unsafe paths with the reason", arguments: [
        ("", SafePathError.Reason.empty),
        ("/etc/passwd", .absolute),
        ("/", .absolute),
        ("a//b", .emptySegment),
        ("a/", .emptySegment),
        ("./a", .dotSegment),
        ("a/./b", .dotSegment),
        ("..", .dotSegment),
        ("../evil", .dotSegment),
        ("a/../../evil", .dotSegment),
        ("a/..", .dotSegment),
        ("a\\b", .backslash),
        ("..\\evil", .backslash),
        ("a\u{0}b", .nul),
        ("a\nb", .controlCharacter),
        ("tab\there", .controlCharacter),
        ("del\u{7F}", .controlCharacter),
        (String(repeating: "a", count: 256), .segmentTooLong),
        (String(repeating: "abcdefgh/", count: 120) + "x", .tooLong),
    ])
    func refusesInvalid(_ raw: String, _ reason: SafePathError.Reason) {
        #expect(throws: SafePathError(path: raw, reason: reason)) { try SafePath(validating: raw) }
    }

    @Test("validating refuses non-NFC text; normalizing accepts it as NFC")
    func normalisation() throws {
        let decomposed = "cafe\u{301}.html"
        #expect(throws: SafePathError(path: decomposed, reason: .notNFC)) { try SafePath(validating: decomposed) }
        let path = try SafePath(normalizing: decomposed)
        #expect(path.value == "caf\u{E9}.html")
        #expect(Array(path.value.utf8) == [0x63, 0x61, 0x66, 0xC3, 0xA9, 0x2E, 0x68, 0x74, 0x6D, 0x6C])
    }

    @Test("paths equal after case folding and NFC share a collision key")
    func collisionKeys() throws {
        let a = try SafePath(validating: "Café/Index.HTML")
        let b = try SafePath(normalizing: "cafe\u{301}/index.html")
        let c = try SafePath(validating: "STRASSE.txt")
        let d = try SafePath(validating: "straße.txt")
        #expect(a.collisionKey == b.collisionKey)
        #expect(c.collisionKey == d.collisionKey)
        #expect(try SafePath(validating: "a.txt").collisionKey != SafePath(validating: "b.txt").collisionKey)
    }

    @Test("the ASCII shortcut of the collision key agrees with Unicode case folding for every ASCII character")
    func asciiCollisionKeys() throws {
        for byte in UInt8(0x20)...UInt8(0x7E) where byte != UInt8(ascii: "/") && byte != UInt8(ascii: "\\") && byte != UInt8(ascii: ".") {
            let path = try SafePath(validating: "a" + String(UnicodeScalar(byte)) + "Z.txt")
            #expect(path.collisionKey == path.value.folding(options: [.caseInsensitive], locale: nil).precomposedStringWithCanonicalMapping)
        }
    }

    @Test("orders by UTF-8 bytes, not by locale or case")
    func ordering() throws {
        let raw = ["b", "a/b", "Z", "a", "é", "z", "a-b", "a.b"]
        let sorted = try raw.map { try SafePath(validating: $0) }.sorted().map(\.value)
        #expect(sorted == ["Z", "a", "a-b", "a.b", "a/b", "b", "z", "é"])
    }

    @Test("extension, file name and parent folders")
    func parts() throws {
        let path = try SafePath(validating: "assets/js/App.MJS")
        #expect(path.fileExtension == "mjs")
        #expect(path.fileName == "App.MJS")
        #expect(path.parentFolders == ["assets", "assets/js"])
        #expect(try SafePath(validating: "index.html").parentFolders == [])
        #expect(try SafePath(validating: "café/名前/a b/x.html").parentFolders == ["café", "café/名前", "café/名前/a b"])
        #expect(try SafePath(validating: ".htaccess").fileExtension == "")
        #expect(try SafePath(validating: "Makefile").fileExtension == "")
    }
}
