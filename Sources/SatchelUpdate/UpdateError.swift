import SatchelCore
import SatchelHTTP
import SatchelStore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why an update did not happen. Whatever the case, the store is as it was: downloads live beside it
/// (`downloads/`) until they are verified, and only the store's own install changes what is installed.
public enum UpdateError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalidURL(String)
    /// The network failed on every attempt (connection refused, reset, timeout).
    case network(url: String, FetchError, attempts: Int)
    /// The server answered with a status that retrying will not change (404, 403...), or kept failing (5xx).
    case httpStatus(url: String, status: Int)
    case catalog(url: String, CatalogError)
    case catalogUnsigned(url: String)
    case catalogSignatureInvalid(url: String)
    case catalogExpired(url: String, expires: Timestamp, now: Timestamp)
    /// With root keys (docs/formats.md, "Trust"): the catalog at `url`, or the trust document at `url`, refused by a
    /// rule of trust, named by its check (`threshold`, `expired`, `older-trust-version`, `key-not-trusted`,
    /// `revoked-key`, `rollback`, …: ``TrustRefusal/check``).
    case trust(url: String, TrustRefusal)
    /// `catalog.json.sigs` breaks its format (docs/formats.md, "Threshold signatures").
    case catalogSignatures(url: String, TrustError)
    /// The catalog's serial is below one this store accepted before: a replay (from a CDN or an attacker) of a
    /// catalog from before a halt or a revocation.
    case catalogReplayed(url: String, serial: Int64, last: Int64)
    case plan(UpdatePlanError)
    /// The download is not the size the catalog lists.
    case sizeMismatch(url: String, expected: Int64, actual: Int64)
    /// The download's SHA-256 is not the catalog's: corrupted in transit or on the server.
    case checksumMismatch(url: String, expected: String, actual: String)
    /// The catalog lists one package version at a URL whose signed manifest is another.
    case catalogMismatch(url: String, catalog: String, bundle: String)
    /// A manifest patch or object that does not build the version the catalog lists.
    case content(url: String, String)
    case diskFull(path: String)
    case io(operation: String, path: String, errno: Int32)
    case store(StoreError)
    case cancelled

    public var description: String {
        switch self {
        case .invalidURL(let url): "not a usable http(s) URL: \(url)"
        case .network(let url, let error, let attempts): "\(url): \(error) (after \(attempts) attempt\(attempts == 1 ? "" : "s"))"
        case .httpStatus(let url, let status): "\(url) answered HTTP \(status)"
        case .catalog(let url, let error): "\(url): \(error)"
        case .catalogUnsigned(let url): "\(url) has no signature (\(Catalog.signatureFileName)), but a public key is trusted"
        case .catalogSignatureInvalid(let url): "\(url): signature does not match the catalog for any trusted public key"
        case .catalogExpired(let url, let expires, let now): "\(url) expired at \(expires) (now \(now)); refusing a stale catalog"
        case .trust(let url, let refusal): "\(url) refused: \(refusal)"
        case .catalogSignatures(let url, let error): "\(url) \(error)"
        case .catalogReplayed(let url, let serial, let last):
            "\(url) has serial \(serial), below the \(last) this store accepted before; refusing a replayed catalog"
        case .plan(let error): "\(error)"
        case .sizeMismatch(let url, let expected, let actual): "\(url) is \(actual) bytes, the catalog says \(expected)"
        case .checksumMismatch(let url, let expected, let actual): "\(url) has sha256 \(actual), the catalog says \(expected)"
        case .catalogMismatch(let url, let catalog, let bundle): "\(url) is \(bundle), but the catalog lists it as \(catalog)"
        case .content(let url, let why): "\(url): \(why)"
        case .diskFull(let path): "disk full while writing \(path); the store is unchanged"
        case .io(let operation, let path, let code): "\(operation) \(path) failed: \(String(cString: strerror(code)))"
        case .store(let error): "\(error)"
        case .cancelled: "the update was cancelled; the store is unchanged"
        }
    }

    static func system(_ operation: String, _ path: String, _ code: Int32 = errno) -> UpdateError {
        code == ENOSPC || code == EDQUOT ? .diskFull(path: path) : .io(operation: operation, path: path, errno: code)
    }
}

/// How often and how patiently to retry a failed request: exponential backoff with a cap.
public struct RetryPolicy: Sendable, Equatable {
    public var attempts: Int
    public var initialDelay: Duration
    public var maxDelay: Duration

    public init(attempts: Int = 4, initialDelay: Duration = .milliseconds(250), maxDelay: Duration = .seconds(5)) {
        self.attempts = max(1, attempts)
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
    }

    /// The pause before attempt `attempt` (2, 3...): initialDelay, doubled each time, at most maxDelay.
    public func delay(beforeAttempt attempt: Int) -> Duration {
        var delay = initialDelay
        for _ in 0..<max(0, attempt - 2) { delay = min(delay * 2, maxDelay) }
        return min(delay, maxDelay)
    }
}
