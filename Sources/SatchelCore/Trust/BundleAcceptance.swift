/// What a bundle's signatures are judged for: the three questions a device asks of a version's `satchel.json`.
public enum BundleCheck: Sendable {
    /// A bundle to install (a download, a delta, objects, `satchel install`): a threshold of the `bundles` role of the
    /// newest trust version held, counting `satchel.sig` and the keyed signatures given with it.
    case install
    /// A built-in the app ships: its `satchel.sig` by any key the `bundles` role has or ever had in a version held (a
    /// revoked key never strands an app), or by a plain key before a first version; nothing known, nothing checked.
    case builtIn
    /// An installed version (or a built-in), for `satchel check`: accepted under the rules of its day, it needs one
    /// signature by a key the `bundles` role has now (a threshold raised since is no problem; a version only revoked
    /// keys vouch for is), counting `satchel.sig` and the keyed signatures kept beside it. A device with roots, no
    /// version held and no plain key has nothing to check it with.
    case installed
}

/// How a bundle's signatures stood: ``TrustState/judgeBundle(_:legacy:keyed:as:)``'s answer when it accepts.
public struct BundleJudgement: Equatable, Sendable {
    /// The count against the signers; nil when nothing was checked (no key known).
    public let tally: SignatureTally?
    /// The keyed signatures that counted, to keep beside the version (`packages/<id>/signatures/<version>.sigs`); nil
    /// when none did.
    public let kept: SignatureFile?

    public var checked: Bool { tally != nil }
}

extension TrustState {
    /// The signers a bundle is counted against for `check`. Plain keys (no anchor) are any one of them, with nothing
    /// checked when there are none, whatever the check.
    public func bundleSigners(_ check: BundleCheck) -> SignerSet {
        guard anchor != nil else { return .plain(plainKeys) }
        switch check {
        case .install: return signers(for: .bundles)
        case .installed:
            if newest == nil && plainKeys.isEmpty { return .unchecked }
            let now = signers(for: .bundles)
            return SignerSet(role: now.role, keys: now.keys, threshold: min(now.threshold, 1), revoked: now.revoked, known: now.known)
        case .builtIn:
            var keys = signers(for: .bundles).keys
            for (id, key) in revokedKeys(for: .bundles) { keys[id] = key }
            return .plain(keys.keys.sorted().map { keys[$0]! })
        }
    }

    /// The one rule for a bundle's signatures, for installs, built-ins and `satchel check` alike.
    ///
    /// - Parameters:
    ///   - manifestBytes: the exact bytes of the version's `satchel.json`.
    ///   - legacy: its `satchel.sig`, when it has one.
    ///   - keyed: keyed signatures over the same bytes (a catalog entry's `signatures`, a `<bundle>.sigs`, those kept
    ///     beside an installed version). Plain keys' rule reads `satchel.sig` alone, and so does a built-in.
    /// - Returns: the judgement, when the signatures are enough.
    /// - Throws: the refusal naming the check (`unsigned` under plain keys with no `satchel.sig`).
    @discardableResult
    public func judgeBundle(_ manifestBytes: [UInt8], legacy: Signature?, keyed: [KeyedSignature], as check: BundleCheck) throws(TrustRefusal) -> BundleJudgement {
        let signers = bundleSigners(check)
        guard signers.isChecked else { return BundleJudgement(tally: nil, kept: nil) }
        let plainRule = anchor == nil || check == .builtIn
        let counted = plainRule ? [] : keyed
        let tally = try signers.verify(manifestBytes, signatures: counted, legacy: legacy, anyPresent: plainRule ? legacy != nil : nil)
        let ids = Set(tally.counted)
        let keep = counted.filter { ids.contains($0.keyID) }
        let kept = keep.isEmpty ? nil : try? SignatureFile(sha256: Digests.sha256Hex(manifestBytes), signatures: KeyedSignature.normalised(keep))
        return BundleJudgement(tally: tally, kept: kept)
    }
}
