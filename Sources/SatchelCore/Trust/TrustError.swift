/// Why a trust document, a signature file or a root anchor breaks a rule of its format (docs/formats.md, "Trust
/// documents"); each case names the rule and the field, role or key at fault.
public enum TrustError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Refused before parsing.
    case tooLarge(Int, limit: Int)
    case malformed(String)
    case missingField(String)
    case unknownField(String)
    /// Every rule holds but the bytes are not the canonical encoding of what they hold.
    case notCanonical
    /// `signed.type` is not `satchel-trust`.
    case wrongType(String)
    /// `signed.version` below 1.
    case invalidVersion(Int64)
    case invalidExpiry(String)
    /// A key id that is not 64 lower-case hex digits.
    case malformedKeyID(String)
    /// A key that is not base64 of a 32-byte Ed25519 public key.
    case malformedKey(KeyID)
    /// A key listed under an id that is not its SHA-256.
    case keyIDMismatch(KeyID)
    /// A signature (at this path) that is not base64 of 64 bytes.
    case malformedSignature(String)
    case unknownRole(String)
    case missingRole(TrustRole)
    /// A role names a key id that `keys` does not hold.
    case keyNotListed(TrustRole, KeyID)
    case duplicateKeyID(TrustRole, KeyID)
    /// A threshold below 1 or above the role's number of keys.
    case invalidThreshold(TrustRole, threshold: Int64, keys: Int)
    /// A key in `keys` that no role names.
    case unusedKey(KeyID)
    /// A signature file's `sha256` that is not 64 lower-case hex digits.
    case malformedDigest(String)

    public var description: String {
        switch self {
        case .tooLarge(let size, let limit): "is \(size) bytes, more than the \(limit) allowed (refused before parsing)"
        case .malformed(let why): "is malformed: \(why)"
        case .missingField(let field): "lacks the field \(field)"
        case .unknownField(let field): "has the unknown field \(field)"
        case .notCanonical: "is not in canonical form (spacing, key order, escapes, repeated keys or base64 padding differ from what Satchel writes)"
        case .wrongType(let type): "has type \(type.debugDescription), not \"satchel-trust\""
        case .invalidVersion(let version): "has version \(version); versions start at 1"
        case .invalidExpiry(let text): "has expires \(text.debugDescription), not an RFC 3339 UTC timestamp like 2027-01-31T00:00:00Z"
        case .malformedKeyID(let text): "has the key id \(text.debugDescription), not 64 lower-case hex digits"
        case .malformedKey(let id): "lists key \(id) with a value that is not base64 of a 32-byte Ed25519 public key"
        case .keyIDMismatch(let id): "lists a key under \(id), which is not the SHA-256 of that key"
        case .malformedSignature(let path): "has a signature at \(path) that is not base64 of 64 bytes"
        case .unknownRole(let role): "has the unknown role \(role.debugDescription) (roles are root, catalog and bundles)"
        case .missingRole(let role): "lacks the role \(role)"
        case .keyNotListed(let role, let id): "names key \(id) in role \(role), but keys does not hold it"
        case .duplicateKeyID(let role, let id): "names key \(id) twice in role \(role)"
        case .invalidThreshold(let role, let threshold, let keys): "has threshold \(threshold) for role \(role), which has \(keys) key\(keys == 1 ? "" : "s"); a threshold is at least 1 and at most the role's keys"
        case .unusedKey(let id): "lists key \(id), which no role names"
        case .malformedDigest(let text): "has sha256 \(text.debugDescription), not 64 lower-case hex digits"
        }
    }
}

/// Why a device, or a tool checking as one, refuses a trust document, a catalog or a bundle's signatures. ``check``
/// is the one word that names the rule (the CLI prints it, the updater can report it).
public enum TrustRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    /// Plain keys are trusted and the document carries no signature at all (under roots, that is a `threshold`).
    case unsigned(SignatureTally)
    /// Fewer distinct keys of the role signed than its threshold.
    case threshold(SignatureTally)
    /// Short of the threshold, and a signature that verified is by a key the role had in a held version and has no
    /// longer.
    case revokedKey(KeyID, SignatureTally)
    /// Short of the threshold, and a signature is by a key the role does not hold (another role's, or unknown).
    case keyNotTrusted(KeyID, SignatureTally)
    /// Short of the threshold, and a signature under the id of one of the role's keys does not verify over these
    /// bytes (a signature file from before the document changed, say).
    case signatureMismatch(KeyID, SignatureTally)
    /// The newest trust version reached has expired (TUF 5.3.10: the only expiry checked).
    case expired(version: Int64, expires: Timestamp, now: Timestamp)
    /// A catalog names an older trust version than the device holds (mix-and-match).
    case olderTrustVersion(named: Int64, held: Int64)
    /// A catalog names no trust version, and the device holds one (or has roots and no plain keys to fall back on).
    case noTrustVersion(held: Int64)
    /// A trust document older than, or as old as, the one held (rollback).
    case rollback(version: Int64, held: Int64)
    /// `trust/<n>.json` holds another version than n, beyond the one expected.
    case unexpectedVersion(expected: Int64, found: Int64)
    /// The document itself breaks a rule of its format.
    case document(version: Int64, TrustError)

    /// The count of signatures behind a refusal short of a threshold; nil for the other checks.
    public var tally: SignatureTally? {
        switch self {
        case .unsigned(let tally), .threshold(let tally), .revokedKey(_, let tally), .keyNotTrusted(_, let tally), .signatureMismatch(_, let tally): tally
        default: nil
        }
    }

    /// The check, as one word: `unsigned`, `threshold`, `revoked-key`, `key-not-trusted`, `signature-mismatch`, `expired`,
    /// `older-trust-version`, `no-trust-version`, `rollback`, `unexpected-version`, `document`.
    public var check: String {
        switch self {
        case .unsigned: "unsigned"
        case .threshold: "threshold"
        case .revokedKey: "revoked-key"
        case .keyNotTrusted: "key-not-trusted"
        case .signatureMismatch: "signature-mismatch"
        case .expired: "expired"
        case .olderTrustVersion: "older-trust-version"
        case .noTrustVersion: "no-trust-version"
        case .rollback: "rollback"
        case .unexpectedVersion: "unexpected-version"
        case .document: "document"
        }
    }

    public var description: String {
        switch self {
        case .unsigned: "unsigned: no signature, but a public key is trusted"
        case .threshold(let tally): "threshold: \(tally.summary)"
        case .revokedKey(let id, let tally): "revoked key: \(id) is no longer \(tally.keyOfRole): a trust version this device holds removed it; \(tally.summary)"
        case .keyNotTrusted(let id, let tally): "key not trusted: \(id) is not \(tally.keyOfRole); \(tally.summary)"
        case .signatureMismatch(let id, let tally): "signature mismatch: the signature under \(id) does not verify over these bytes; \(tally.summary)"
        case .expired(let version, let expires, let now): "expired: trust version \(version) expired at \(expires) (now \(now))"
        case .olderTrustVersion(let named, let held): "older trust version: the catalog names trust version \(named), this device holds \(held)"
        case .noTrustVersion(let held): held > 0
            ? "no trust version: the catalog names none, this device holds trust version \(held)"
            : "no trust version: the catalog names none, and the device trusts only root keys"
        case .rollback(let version, let held): "rollback: trust version \(version) is not newer than version \(held) held"
        case .unexpectedVersion(let expected, let found): "unexpected version: expected trust version \(expected), the document is version \(found)"
        case .document(let version, let error): "trust version \(version) \(error)"
        }
    }
}
