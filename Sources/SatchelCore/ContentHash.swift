import Crypto
import Foundation

/// SHA-256 helpers shared by every layer, so that the packer and the runtime cannot disagree on encoding.
public enum Digests {
    /// Lower-case hex of a SHA-256 digest.
    public static func hex<D: Digest>(_ digest: D) -> String {
        let table = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(64)
        for byte in digest {
            out.append(table[Int(byte >> 4)])
            out.append(table[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func sha256Hex<Bytes: DataProtocol>(_ bytes: Bytes) -> String { hex(SHA256.hash(data: bytes)) }

    /// Whether `text` is 64 lower-case hex digits.
    public static func isSHA256Hex(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    /// A package's contentHash (docs/formats.md, "contentHash"): SHA-256 over the lines `<path>:<sha256>\n` of every file,
    /// sorted by the UTF-8 bytes of the path. Sorting here, not trusting the caller's order, is what keeps the
    /// packer and the installer in agreement.
    public static func contentHash(of files: [(path: SafePath, sha256: String)]) -> String {
        var hasher = SHA256()
        for file in files.sorted(by: { $0.path < $1.path }) {
            hasher.update(data: Array(file.path.value.utf8))
            hasher.update(data: [UInt8(ascii: ":")])
            hasher.update(data: Array(file.sha256.utf8))
            hasher.update(data: [UInt8(ascii: "\n")])
        }
        return hex(hasher.finalize())
    }
}
