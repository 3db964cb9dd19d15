import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The SHA-256 of every resource file of an app bundle, as its code signature seals them
/// (`_CodeSignature/CodeResources`, the `files2` dictionary: for each path relative to the bundle, `hash2` is the
/// SHA-256 of the file's bytes). Nested code (frameworks, extensions: `cdhash`), symbolic links (`symlink`) and
/// entries without a `hash2` seal no bytes here and are left out.
///
/// Reading the seal is not checking it: a seal is only worth its digests where the system checked every sealed file
/// against the signature before the app could run and nothing can write the bundle afterwards
/// (``enforcedRoot``, decision 0035).
package struct ResourceSeal {
    /// The bundle folder, resolved.
    package let root: String
    /// `files2`: a rule by path relative to ``root``; looked up one path at a time.
    private let files: [String: Any]

    package static let codeResourcesPath = "_CodeSignature/CodeResources"
    /// An app with 100,000 resources has a seal of about 30 MB.
    package static let maxBytes = 64 << 20

    /// Reads the seal of the bundle at `root`; nil when there is none, it cannot be read, or it is not a property
    /// list with a `files2` dictionary.
    package init?(bundle root: String) {
        guard let resolved = realpath(root, nil) else { return nil }
        self.root = String(cString: resolved)
        free(resolved)
        let file = self.root + "/" + Self.codeResourcesPath
        var info = stat()
        guard stat(file, &info) == 0, info.st_mode & S_IFMT == S_IFREG, Int64(info.st_size) <= Int64(Self.maxBytes),
            let data = FileManager.default.contents(atPath: file), data.count <= Self.maxBytes,
            let plist = try? PropertyListSerialization.propertyList(from: data, options: [], format: nil),
            let top = plist as? [String: Any], let files = top["files2"] as? [String: Any]
        else { return nil }
        self.files = files
    }

    /// The sealed SHA-256 (lowercase hex) of the file at `path`, an absolute resolved path: nil unless it lies inside
    /// ``root`` and the seal lists its bytes.
    package func sha256(of path: String) -> String? {
        guard path.hasPrefix(root + "/"), let rule = files[String(path.dropFirst(root.count + 1))] as? [String: Any],
            let hash = rule["hash2"] as? Data, hash.count == 32
        else { return nil }
        return Self.hex(hash)
    }

    private static func hex(_ bytes: Data) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The folder whose every sealed file the system checked against the app's signature before the app could run,
    /// and which nothing can write afterwards: the app bundle on an iOS device (installd refuses an app whose
    /// resources differ from its seal; the bundle is read-only to every app, its own included). Nil elsewhere:
    /// macOS checks a bundle's seal when Gatekeeper assesses it, not at every launch, and its owner can change it
    /// (so can Mac Catalyst apps' owners); the Simulator checks nothing; Linux has no seal.
    package static var enforcedRoot: String? {
        #if os(iOS) && !targetEnvironment(simulator) && !targetEnvironment(macCatalyst)
        return Bundle.main.bundlePath
        #else
        return nil
        #endif
    }
}
