import SatchelArchive
import SatchelCore

/// Why a bundle is not valid. Each case names the first bad file, entry or field, which is what `satchel
/// verify` prints and what an installer reports.
public enum BundleError: Error, Equatable, Sendable, CustomStringConvertible {
    case archive(ArchiveError)
    case manifestNotFirst(found: String?)
    case manifest(ManifestError)
    case delta(DeltaManifestError)
    case signatureMalformed
    case unsigned
    case signatureMismatch
    case unsafeEntryName(SafePathError)
    case notARegularFile(entry: String, kind: String)
    case unexpectedEntry(String)
    case outOfOrder(entry: String, expected: String)
    case missingFile(String)
    case sizeMismatch(path: String, expected: Int64, actual: Int64)
    case hashMismatch(path: String, expected: String, actual: String)
    /// The zip's central directory is not one a bundle read in place may have (``InPlaceBundle``).
    case directory(ZipFormatError)
    /// The bundle cannot be served without extracting it (a tar.gz, a delta).
    case cannotServeInPlace(reason: String)
    /// The file is an archive of a kind devices do not read (a tar.gz): a device installs zip bundles only.
    case unsupportedFormat(path: String, format: String)

    /// The package file or archive entry the error is about, when there is one.
    public var subject: String? {
        switch self {
        case .archive(.corrupt(let entry, _)): entry
        case .archive(.entryTooLarge(let entry, _)), .archive(.compressionRatioExceeded(let entry, _)): entry
        case .manifestNotFirst: Manifest.fileName
        case .manifest: Manifest.fileName
        case .delta: DeltaManifest.fileName
        case .signatureMalformed, .unsigned, .signatureMismatch: Manifest.signatureFileName
        case .unsafeEntryName(let error): error.path
        case .notARegularFile(let entry, _), .unexpectedEntry(let entry), .outOfOrder(let entry, _): entry
        case .missingFile(let path), .sizeMismatch(let path, _, _), .hashMismatch(let path, _, _): path
        case .directory(let error): error.entry
        case .archive, .cannotServeInPlace, .unsupportedFormat: nil
        }
    }

    public var description: String {
        switch self {
        case .archive(let error): "\(error)"
        case .manifestNotFirst(let found):
            "the first entry must be \(Manifest.fileName), found \(found.map { $0.debugDescription } ?? "an empty archive")"
        case .manifest(let error): "\(error)"
        case .delta(let error): "\(error)"
        case .signatureMalformed: "\(Manifest.signatureFileName) is not base64 of a 64-byte Ed25519 signature"
        case .unsigned: "bundle is not signed, but a public key is trusted"
        case .signatureMismatch: "signature does not match \(Manifest.fileName) for any trusted public key"
        case .unsafeEntryName(let error): "archive entry has an unsafe name: \(error)"
        case .notARegularFile(let entry, let kind): "archive entry \(entry.debugDescription) is a \(kind), not a regular file"
        case .unexpectedEntry(let entry): "archive entry \(entry.debugDescription) is not listed in the manifest"
        case .outOfOrder(let entry, let expected): "archive entry \(entry.debugDescription) is out of manifest order (expected \(expected.debugDescription))"
        case .missingFile(let path): "file \(path.debugDescription) is listed in the manifest but missing from the archive"
        case .sizeMismatch(let path, let expected, let actual): "file \(path.debugDescription) is \(actual) bytes, the manifest says \(expected)"
        case .hashMismatch(let path, let expected, let actual): "file \(path.debugDescription) has sha256 \(actual), the manifest says \(expected)"
        case .directory(let error): "\(error)"
        case .cannotServeInPlace(let reason): "cannot be served in place: \(reason)"
        case .unsupportedFormat(let path, let format):
            "\(path) is a \(format) bundle; devices install zip bundles only: repack it as zip (satchel pack --format zip)"
        }
    }
}

extension BundleError {
    /// A bundle's manifest checked under plain keys' rule (``TrustState/judgeBundle(_:legacy:keyed:as:)`` with no
    /// anchor), the refusal as a bundle error. Every reader of bundles (streamed or in place) calls this.
    /// - Returns: whether a key checked it (false: no key given, nothing checked).
    package static func checkingSignature(of manifestBytes: [UInt8], _ signature: Signature?, trustedKeys: [VerifyingKey]) throws(BundleError) -> Bool {
        do {
            return try TrustState(anchor: nil, plainKeys: trustedKeys).judgeBundle(manifestBytes, legacy: signature, keyed: [], as: .install).checked
        } catch {
            if case .unsigned = error { throw .unsigned }
            throw .signatureMismatch
        }
    }
}
