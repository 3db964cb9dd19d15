import SatchelBundle
import SatchelCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a store operation was refused or failed. Whatever the case, the store is left as it was before the
/// operation: a refused install leaves no staging folder and no changed state.
public enum StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The bundle is not what it claims to be (manifest, signature, a file's hash, a hostile entry...).
    case invalidBundle(BundleError)
    /// With trust (``StoreConfiguration/trustAnchor``), the bundle lacks a threshold of signatures by the `bundles` role
    /// of the newest trust version held; the refusal names the check (`threshold`, `revoked-key`, `key-not-trusted`…).
    case untrustedBundle(id: String, version: String, TrustRefusal)
    /// The bundle file's own SHA-256 is not the one the caller (or the catalog) expected.
    case bundleChecksumMismatch(expected: String, actual: String)
    /// Another package already claims this host with this path prefix.
    case scopeConflict(id: String, otherID: String, host: String, pathPrefix: String)
    /// A delta's base version is not on disk; install the full bundle instead.
    case deltaBaseNotInstalled(id: String, version: String)
    /// A delta that does not fit the installed base (other contentHash, wrong deleted list).
    case deltaMismatch(DeltaManifestError)
    /// An installed base file no longer matches its manifest, so a delta cannot be built on it.
    case baseFileDamaged(id: String, version: String, path: String)
    case packageNotInstalled(String)
    case versionNotInstalled(id: String, version: String)
    /// Nothing earlier served without failing, and there is no built-in to return to.
    case noEarlierConfirmedVersion(id: String)
    case notInTrial(id: String)
    case activeVersion(id: String, version: String)
    /// The version is older than the app's built-in version of the package, which is the floor.
    case olderThanBuiltIn(id: String, version: String, builtIn: String)
    /// Built-ins belong to the app and are read-only.
    case builtInReadOnly(id: String, version: String)
    /// The rule keeps this version: what the active version falls back to, or the newest confirmed one.
    case keptByRule(id: String, version: String, reason: StateRefusal.KeepReason)
    /// The version failed here (its trial ran out, or a rollback left it); only an explicit reinstall brings it back.
    case failedBefore(id: String, version: String)
    case diskFull(path: String)
    case io(operation: String, path: String, errno: Int32)
    case corruptState(path: String, reason: String)
    case unsupportedLayout(path: String, layout: Int)
    case invalidArgument(FieldError)
    /// The store let go of its locks for its app's suspension (``PackageStore/suspend(whenUnlocked:)``, decision 0037):
    /// nothing that takes `lock` runs until ``PackageStore/resume()``, since iOS ends an app suspended holding a lock in a
    /// shared container; an operation that held it when the suspension began stopped at its next step, changing nothing.
    case suspended(store: String, lock: String)

    public var description: String {
        switch self {
        case .invalidBundle(let error): "bundle refused: \(error)"
        case .untrustedBundle(let id, let version, let refusal): "bundle \(id) \(version) refused: \(refusal)"
        case .bundleChecksumMismatch(let expected, let actual): "bundle sha256 is \(actual), expected \(expected)"
        case .scopeConflict(let id, let other, let host, let prefix):
            "package \(id) claims host \(host) with prefix \(prefix), which package \(other) already claims"
        case .deltaBaseNotInstalled(let id, let version): "delta needs \(id) \(version) installed as its base, and it is not; install the full bundle"
        case .deltaMismatch(let error): "delta refused: \(error)"
        case .baseFileDamaged(let id, let version, let path):
            "installed \(id) \(version) has a damaged file \(path.debugDescription), so the delta cannot use it; install the full bundle"
        case .packageNotInstalled(let id): "package \(id) is not installed"
        case .versionNotInstalled(let id, let version): "package \(id) has no installed version \(version)"
        case .noEarlierConfirmedVersion(let id):
            "package \(id) has no earlier version to roll back to (none served without failing, and the app has no built-in one)"
        case .notInTrial(let id): "package \(id) is not in trial; nothing to confirm"
        case .activeVersion(let id, let version): "version \(version) of \(id) is active; remove the whole package or activate another version first"
        case .olderThanBuiltIn(let id, let version, let builtIn):
            "\(id) \(version) is older than the app's built-in \(id) \(builtIn), which is the floor; nothing older than it is served"
        case .builtInReadOnly(let id, let version): "\(id) \(version) is built into the app; built-ins are read-only and cannot be removed"
        case .keptByRule(let id, let version, .fallback):
            "version \(version) of \(id) is what \(id) falls back to if the active version fails; confirm or replace the active version first"
        case .failedBefore(let id, let version):
            "\(id) \(version) failed on this device (its trial ran out or a rollback left it); it is not installed again automatically"
        case .keptByRule(let id, let version, .lastConfirmed):
            "version \(version) of \(id) is its newest confirmed version, kept until a newer one is confirmed"
        case .diskFull(let path): "disk full while writing \(path); the store is unchanged"
        case .io(let operation, let path, let code): "\(operation) \(path) failed: \(String(cString: strerror(code)))"
        case .corruptState(let path, let reason): "store state \(path) is unreadable: \(reason)"
        case .unsupportedLayout(let path, let layout): "store \(path) has layout \(layout); this Satchel reads layout \(StoreLayout.version)"
        case .invalidArgument(let error): "\(error)"
        case .suspended(let store, let lock):
            "store \(store) is suspended for its app's suspension: nothing that takes \(lock) runs until it is resumed (iOS ends an app suspended holding a lock in a shared container); the store is unchanged"
        }
    }

    /// A refusal of the state rules, for package `id`.
    init(refusal: StateRefusal, id: PackageID) {
        switch refusal {
        case .notOnTrial: self = .notInTrial(id: id.value)
        case .noFallback: self = .noEarlierConfirmedVersion(id: id.value)
        case .belowBuiltIn(let version, let builtIn):
            self = .olderThanBuiltIn(id: id.value, version: version.description, builtIn: builtIn.description)
        case .unavailable(let version): self = .versionNotInstalled(id: id.value, version: version.description)
        case .active(let version): self = .activeVersion(id: id.value, version: version.description)
        case .builtIn(let version): self = .builtInReadOnly(id: id.value, version: version.description)
        case .kept(let version, let reason): self = .keptByRule(id: id.value, version: version.description, reason: reason)
        }
    }

    /// A system call failed: ENOSPC and EDQUOT become ``diskFull(path:)``, everything else keeps its errno.
    static func system(_ operation: String, _ path: String, _ code: Int32 = errno) -> StoreError {
        code == ENOSPC || code == EDQUOT ? .diskFull(path: path) : .io(operation: operation, path: path, errno: code)
    }
}
