import Crypto
import Foundation

/// Where a version stands when it is not simply for every device (docs/formats.md, "Rollouts").
public enum RolloutState: String, Hashable, Sendable, Codable, CaseIterable {
    /// Offered to the devices whose cohort for this release is below `permille`.
    case staged
    /// Offered to no new device; devices that have it keep it.
    case halted
    /// Devices on it go back to their fallback at the next check, downloading nothing.
    case revoked
}

/// A version listed in the catalog's `rollouts`, where updaters from before rollouts never look.
public struct Rollout: Hashable, Sendable {
    public var entry: CatalogEntry
    /// Devices whose cohort (0-999) is below this get the version: 10 = 1 %, 125 = 12.5 %.
    public var permille: Int
    public var state: RolloutState
    /// When the current step began (the last change of `permille` or `state`): reports before it are not counted.
    public var since: Timestamp

    public init(entry: CatalogEntry, permille: Int, state: RolloutState, since: Timestamp) {
        self.entry = entry
        self.permille = permille
        self.state = state
        self.since = since
    }

    /// Whether a device in `cohort` may install this version now.
    public func admits(cohort: Int) -> Bool { state == .staged && cohort < permille }

    /// "12.5" for 125 permille.
    public var percent: String { Self.percentText(permille: permille) }

    public static func percentText(permille: Int) -> String { permille % 10 == 0 ? "\(permille / 10)" : "\(permille / 10).\(permille % 10)" }

    /// A share in percent (as reports and JSON give it) as text: "12.5", "100".
    public static func percentText(_ percent: Double) -> String { percentText(permille: Int((percent * 10).rounded())) }

    /// Parses a percentage with at most one decimal ("1", "12.5", "100") into permille.
    public static func permille(fromPercent text: String) -> Int? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let whole = Int(parts[0]), parts[0].allSatisfy(\.isASCII), whole >= 0 else { return nil }
        var tenths = 0
        if parts.count == 2 {
            guard parts[1].count == 1, let digit = Int(parts[1]) else { return nil }
            tenths = digit
        }
        let value = whole * 10 + tenths
        return value <= 1000 ? value : nil
    }

    var canonicalJSON: CanonicalJSON {
        .object([
            "entry": entry.canonicalJSON, "permille": .integer(Int64(permille)), "state": .string(state.rawValue),
            "since": .string(since.description),
        ])
    }
}

/// A version released to every device that `satchel rollout advance` still judges from device reports, listed in the
/// catalog's `watches` (docs/formats.md, "Rollouts"). Being released means older updaters install it too, so the only
/// way to stop it is to take it out of `packages`; the watch is what lets the automatic step do that, as it halts a
/// staged version, until enough devices have confirmed it.
public struct ReleaseWatch: Hashable, Sendable {
    public var id: PackageID
    public var version: SemanticVersion
    /// When the version was released to every device: reports before it are not counted (as a rollout's `since`).
    public var since: Timestamp

    public init(id: PackageID, version: SemanticVersion, since: Timestamp) {
        self.id = id
        self.version = version
        self.since = since
    }

    public func watches(_ entry: CatalogEntry) -> Bool { entry.id == id && entry.version == version }

    var canonicalJSON: CanonicalJSON {
        .object(["id": .string(id.value), "version": .string(version.description), "since": .string(since.description)])
    }
}

/// A device's standing towards each release, from a random install id that never leaves the device: its cohort
/// (0-999, stable for the install, different per release, so the first 1 % are not the same devices every time) and
/// its token (what it reports under, so one device counts once per release and cannot be followed across releases).
/// Both are HMAC-SHA256 keyed with the install id over the release's package id and version.
public struct ReleaseCohort: Sendable {
    public let installID: [UInt8]

    public init(installID: [UInt8]) { self.installID = installID }

    public func cohort(_ id: PackageID, _ version: SemanticVersion) -> Int {
        let mac = digest("cohort", id, version)
        let value = mac.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Int(value % 1000)
    }

    /// 16 hex digits (64 bits): enough that two devices of a fleet do not share one.
    public func token(_ id: PackageID, _ version: SemanticVersion) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: digest("token", id, version).prefix(8).flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
    }

    private func digest(_ purpose: String, _ id: PackageID, _ version: SemanticVersion) -> [UInt8] {
        let message = Array("satchel-\(purpose)/1\u{0}\(id.value)\u{0}\(version)".utf8)
        return Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: installID)))
    }
}

/// The Wilson score interval for a proportion at 95 % confidence: where the true failure rate lies, given `failures`
/// among `trials` devices. Unlike the plain ratio it is honest about small counts (0 of 3 is not "0 %").
public enum WilsonInterval {
    public static func bounds(failures: Int, trials: Int, z: Double = 1.959964) -> (low: Double, high: Double) {
        guard trials > 0 else { return (0, 1) }
        let n = Double(trials)
        let p = Double(failures) / n
        let z2 = z * z
        let centre = p + z2 / (2 * n)
        let margin = z * ((p * (1 - p) + z2 / (4 * n)) / n).squareRoot()
        let denominator = 1 + z2 / n
        return (max(0, (centre - margin) / denominator), min(1, (centre + margin) / denominator))
    }
}
