import Testing
@testable import SatchelCore

@Suite("The one MIME table")
struct MIMETableTests {
    @Test("types for the web's file formats", arguments: [
        ("html", "text/html"), ("css", "text/css"), ("js", "text/javascript"), ("mjs", "text/javascript"),
        ("json", "application/json"), ("map", "application/json"), ("wasm", "application/wasm"),
        ("svg", "image/svg+xml"), ("png", "image/png"), ("jpg", "image/jpeg"), ("jpeg", "image/jpeg"),
        ("webp", "image/webp"), ("gif", "image/gif"), ("ico", "image/x-icon"), ("woff", "font/woff"),
        ("woff2", "font/woff2"), ("ttf", "font/ttf"), ("mp4", "video/mp4"), ("webm", "video/webm"),
        ("mp3", "audio/mpeg"), ("m4a", "audio/mp4"), ("txt", "text/plain"), ("xml", "application/xml"),
        ("webmanifest", "application/manifest+json"), ("pdf", "application/pdf"), ("WASM", "application/wasm"),
        ("unknownext", "application/octet-stream"), ("", "application/octet-stream"),
    ])
    func types(_ ext: String, _ type: String) {
        #expect(MIMETable.entry(forExtension: ext).type == type)
    }

    @Test("already-compressed formats are stored, text is deflated")
    func compressibility() {
        for ext in ["png", "jpg", "webp", "gif", "woff", "woff2", "mp4", "webm", "mp3", "m4a", "zip", "gz", "pdf"] {
            #expect(!MIMETable.entry(forExtension: ext).isCompressible, "\(ext)")
        }
        for ext in ["html", "css", "js", "mjs", "json", "svg", "wasm", "txt", "xml", "map", "ttf"] {
            #expect(MIMETable.entry(forExtension: ext).isCompressible, "\(ext)")
        }
    }

    @Test("text types get a charset")
    func text() {
        #expect(MIMETable.isText("text/html"))
        #expect(MIMETable.isText("application/json"))
        #expect(MIMETable.isText("image/svg+xml"))
        #expect(MIMETable.isText("application/manifest+json"))
        #expect(!MIMETable.isText("image/png"))
        #expect(!MIMETable.isText("application/wasm"))
    }
}
