/// The one MIME table: the packer writes each file's `mime` from it, the engine serves the manifest's value.
///
/// Keeping it in one place is the cure for the classic "wasm served as application/octet-stream, so
/// `instantiateStreaming` fails" and "mjs served as text/plain, so the module is refused" bugs.
public enum MIMETable {
    public struct Entry: Sendable, Equatable {
        public let type: String
        /// Worth deflating. Formats that are already compressed (images, fonts, media, archives) are stored,
        /// which saves time and never grows them.
        public let isCompressible: Bool
    }

    public static let fallback = Entry(type: "application/octet-stream", isCompressible: true)

    /// The entry for a file extension (lower-case, without the dot); ``fallback`` when unknown.
    public static func entry(forExtension ext: String) -> Entry {
        table[ext.lowercased()] ?? fallback
    }

    public static func entry(for path: SafePath) -> Entry { entry(forExtension: path.fileExtension) }

    /// Whether a response of this type is text that should carry `; charset=utf-8`.
    public static func isText(_ type: String) -> Bool {
        type.hasPrefix("text/") || type.hasSuffix("+json") || type.hasSuffix("+xml")
            || ["application/json", "application/javascript", "application/xml"].contains(type)
    }

    private static func text(_ type: String) -> Entry { Entry(type: type, isCompressible: true) }
    private static func packed(_ type: String) -> Entry { Entry(type: type, isCompressible: false) }

    static let table: [String: Entry] = [
        // documents and code
        "html": text("text/html"), "htm": text("text/html"), "xhtml": text("application/xhtml+xml"),
        "css": text("text/css"),
        "js": text("text/javascript"), "mjs": text("text/javascript"), "cjs": text("text/javascript"),
        "json": text("application/json"), "map": text("application/json"), "jsonld": text("application/ld+json"),
        "webmanifest": text("application/manifest+json"),
        "wasm": text("application/wasm"),
        "txt": text("text/plain"), "md": text("text/markdown"), "csv": text("text/csv"),
        "xml": text("application/xml"), "vtt": text("text/vtt"),
        "m3u8": text("application/vnd.apple.mpegurl"),
        // images
        "svg": text("image/svg+xml"),
        "png": packed("image/png"), "apng": packed("image/apng"),
        "jpg": packed("image/jpeg"), "jpeg": packed("image/jpeg"),
        "gif": packed("image/gif"), "webp": packed("image/webp"), "avif": packed("image/avif"),
        "ico": text("image/x-icon"), "bmp": text("image/bmp"), "tif": text("image/tiff"), "tiff": text("image/tiff"),
        // fonts
        "woff": packed("font/woff"), "woff2": packed("font/woff2"),
        "ttf": text("font/ttf"), "otf": text("font/otf"), "eot": text("application/vnd.ms-fontobject"),
        // media
        "mp4": packed("video/mp4"), "m4v": packed("video/mp4"), "webm": packed("video/webm"),
        "ogv": packed("video/ogg"), "mov": packed("video/quicktime"),
        "mp3": packed("audio/mpeg"), "m4a": packed("audio/mp4"), "aac": packed("audio/aac"),
        "ogg": packed("audio/ogg"), "oga": packed("audio/ogg"), "opus": packed("audio/ogg"),
        "flac": packed("audio/flac"), "wav": text("audio/wav"),
        // archives and other already-compressed data
        "pdf": packed("application/pdf"), "zip": packed("application/zip"), "gz": packed("application/gzip"),
        "br": packed("application/octet-stream"),
        "glb": text("model/gltf-binary"), "gltf": text("model/gltf+json"),
    ]
}
