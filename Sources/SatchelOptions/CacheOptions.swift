import ArgumentParser
import SatchelCache
import SatchelCore

/// `--cache <dir>` and `--cache-size <size>`: an HTTP cache on the network fallback, for every engine host that
/// answers misses (`satchel serve` in shared mode, the WebKitGTK viewer in private mode).
public struct CacheOptions: ParsableArguments {
    @Option(help: "Keep an HTTP cache (RFC 9111) of network answers in this folder (created when missing).", completion: .directory)
    public var cache: String?

    @Option(help: ArgumentHelp("The cache's bound: bytes, or with a K, M or G suffix (default 1G); least recently used entries go first.", valueName: "size"))
    public var cacheSize: ByteCount?

    public init() {}

    public func validate() throws {
        if cacheSize != nil, cache == nil { throw ValidationError("--cache-size needs --cache <dir>") }
    }

    /// The cache these options describe, opened; nil without `--cache`.
    /// - Throws: `ValidationError` naming the folder when it cannot be used.
    public func open(mode: CacheMode) throws -> HTTPCache? {
        guard let cache else { return nil }
        do {
            return try HTTPCache(configuration: CacheConfiguration(
                folder: cache, maxBytes: cacheSize?.bytes ?? CacheConfiguration.defaultMaxBytes, mode: mode))
        } catch {
            throw ValidationError("--cache: \(error)")
        }
    }
}

/// A size on the command line: `1048576`, `512K`, `64M`, `2G` (powers of 1024).
public struct ByteCount: ExpressibleByArgument, Sendable, Equatable {
    public let bytes: Int64

    public init?(argument: String) {
        let text = argument.uppercased()
        let units: [Character: Int64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30]
        var digits = Substring(text)
        var scale: Int64 = 1
        if let last = text.last, let unit = units[last] {
            scale = unit
            digits = digits.dropLast()
        }
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let value = Int64(digits), value > 0, value <= Int64.max / scale else { return nil }
        bytes = value * scale
    }
}
