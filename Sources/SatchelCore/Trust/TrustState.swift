/// The root keys an app ships: the start of its trust chain. Either keys and a threshold the app was built with
/// (`--root-public-key`, repeatable), declared to be the roots of trust version `version` (1 unless the app is built
/// after a root rotation), or the root role of a trust document the app ships.
public struct TrustAnchor: Equatable, Sendable {
    /// The first trust version the chain starts from: a device holding nothing fetches this version first, and it
    /// must be signed by a threshold of these keys and of its own root role.
    public let version: Int64
    public let keys: [KeyID: VerifyingKey]
    public let threshold: Int

    public init(rootKeys: [VerifyingKey], threshold: Int = 1, version: Int64 = 1) throws(TrustError) {
        let keys = Dictionary(rootKeys.map { ($0.keyID, $0) }, uniquingKeysWith: { first, _ in first })
        guard threshold >= 1, threshold <= keys.count else { throw .invalidThreshold(.root, threshold: Int64(threshold), keys: keys.count) }
        guard version >= 1 else { throw .invalidVersion(version) }
        self.keys = keys
        self.threshold = threshold
        self.version = version
    }

    /// The roots of a document the app ships (which the device then holds as its first version).
    public init(document: TrustDocument) {
        version = document.version
        keys = document.keys(of: .root)
        threshold = document.root.threshold
    }

    public var signers: SignerSet { SignerSet(role: .root, keys: keys, threshold: threshold) }
}

/// One trust version accepted: what it took away. A step that dropped a catalog key resets the device's catalog
/// serial floor (fast-forward recovery: a leaked catalog key may have signed a huge serial).
public struct TrustStep: Equatable, Sendable {
    public let version: Int64
    /// The keys each role had in the version before (the anchor's for the root role of the first version; the plain
    /// trusted keys for the catalog and bundles roles of the first version) and has no longer.
    public let dropped: [TrustRole: [KeyID]]

    public var droppedCatalogKeys: [KeyID] { dropped[.catalog] ?? [] }
}

/// A device's trust, as a pure value: the root anchor the app ships, the plain trusted keys it may also carry
/// (`--public-key`: today's rule, and the fallback before a first trust version is reached), and the trust
/// documents accepted so far, oldest first, consecutive versions. Every rule of docs/formats.md "Trust documents"
/// is here; fetching and keeping files is the updater's and the store's (they keep `downloads/trust/<n>.json`).
///
/// How the two configurations coexist:
/// - **No anchor** (an app without roots): today's behaviour. ``signers(for:)`` is any one of the plain keys (or
///   nothing checked without keys), and a catalog's trust version means nothing, as to an older updater.
/// - **An anchor**: until a first trust version is held, catalogs that name none are checked against the plain keys
///   (refused when there are none); once one is held, only its roles count, every catalog must name a trust version
///   no older than it, and plain keys that no role holds any more are revoked like any other.
public struct TrustState: Sendable {
    public let anchor: TrustAnchor?
    public let plainKeys: [VerifyingKey]
    /// Accepted trust documents, oldest first, consecutive versions from the anchor's.
    public private(set) var documents: [TrustDocument]

    public init(anchor: TrustAnchor?, plainKeys: [VerifyingKey] = []) {
        self.anchor = anchor
        self.plainKeys = plainKeys
        documents = []
    }

    /// The state a device had: the documents the app ships and those it stored (any order, duplicates allowed),
    /// walked again from the anchor, signatures and all but no expiry. The chain stops at the first version missing
    /// or refused; what it left out is returned with why, so a damaged file costs a fetch, never the chain. Documents
    /// older than the anchor are not part of the chain and are ignored. Pass a document the app ships first: of two
    /// documents of one version, the first given that chains is kept.
    public static func restore(anchor: TrustAnchor?, plainKeys: [VerifyingKey] = [], documents: [[UInt8]]) -> (state: TrustState, refused: [TrustRefusal]) {
        var state = TrustState(anchor: anchor, plainKeys: plainKeys)
        var refused: [TrustRefusal] = []
        var decoded: [TrustDocument] = []
        for bytes in documents {
            do { decoded.append(try TrustDocument.decode(bytes)) } catch { refused.append(.document(version: 0, error)) }
        }
        decoded.sort { $0.version < $1.version }  // stable: of equal versions, the one given first is tried first
        for document in decoded where document.version >= state.nextVersion {
            guard document.version == state.nextVersion else {
                refused.append(.unexpectedVersion(expected: state.nextVersion, found: document.version))
                break
            }
            do { try state.accept(document) } catch { refused.append(error) }
        }
        return (state, refused)
    }

    public var newest: TrustDocument? { documents.last }
    /// The newest version held; 0 when none.
    public var version: Int64 { newest?.version ?? 0 }
    /// The version a device fetches next: one more than it holds, or the anchor's.
    public var nextVersion: Int64 { newest.map { $0.version + 1 } ?? anchor?.version ?? 1 }

    /// The keys that must sign the next version (a threshold of them, as well as a threshold of its own roots).
    var previousRoots: SignerSet {
        if let newest { return newest.signers(.root) }
        if let anchor { return anchor.signers }
        return SignerSet(role: .root, keys: [:], threshold: 1)  // an app without roots trusts no trust document
    }

    // MARK: A publisher's chain

    /// The chain of a folder of trust documents (versions 1, 2, …, in order), walked as a device whose app ships
    /// version 1's own root keys walks it: each version needs a threshold of the previous version's roots and of its
    /// own (version 1, of its own). What `satchel catalog --trust` checks before publishing; expiry is the caller's
    /// (``checkUnexpired(at:)`` on the result).
    /// - Throws: the first version's refusal, with that version.
    public static func publishedChain(_ documents: [TrustDocument]) throws(PublishedChainRefusal) -> TrustState {
        guard let first = documents.first else { return TrustState(anchor: nil) }
        var state = TrustState(anchor: TrustAnchor(document: first))
        for document in documents {
            do { try state.accept(document) } catch { throw PublishedChainRefusal(version: document.version, refusal: error) }
        }
        return state
    }

    /// Whether a device holding `previous` would accept `document` as its next version (with `previous` nil: as the
    /// first version of an app that ships its own roots). What `satchel trust update` asks of the newest version before
    /// it writes the next.
    public static func checkLink(_ document: TrustDocument, after previous: TrustDocument?) throws(TrustRefusal) {
        guard let previous else {
            var state = TrustState(anchor: TrustAnchor(document: document))
            try state.accept(document)
            return
        }
        guard document.version == previous.version + 1 else { throw .unexpectedVersion(expected: previous.version + 1, found: document.version) }
        // The previous version's roots as the anchor of the version after it: what a device holding it checks.
        let roots = previous.keys(of: .root)
        var state = TrustState(anchor: try! TrustAnchor(rootKeys: roots.keys.sorted().map { roots[$0]! }, threshold: previous.root.threshold, version: document.version))
        try state.accept(document)
    }

    // MARK: The walk

    /// The trust versions to fetch before a catalog naming `named` can be checked: from the one after the newest held
    /// to `named`, in order, one at a time (never a probe past it: CDNs cache 404s); nil when there is nothing to
    /// fetch. Refused: a catalog naming an older version than held (mix-and-match), or none once one is held.
    public func versionsToFetch(forCatalogNaming named: Int64?) throws(TrustRefusal) -> ClosedRange<Int64>? {
        guard let anchor else { return nil }
        guard let named else {
            if version > 0 || plainKeys.isEmpty { throw .noTrustVersion(held: version) }
            return nil
        }
        if let newest {
            guard named >= newest.version else { throw .olderTrustVersion(named: named, held: newest.version) }
            return named > newest.version ? newest.version + 1...named : nil
        }
        // Nothing held yet: the chain starts at the anchor's version, which the app holds the roots of.
        guard named >= anchor.version else { throw .olderTrustVersion(named: named, held: anchor.version) }
        return anchor.version...named
    }

    /// Starts the walk for a catalog that names `named` (its `trust` field).
    public func walk(toCatalogNaming named: Int64?) throws(TrustRefusal) -> TrustWalk {
        let range = try versionsToFetch(forCatalogNaming: named)
        return TrustWalk(state: self, target: range?.upperBound)
    }

    /// Accepts the next version from its bytes (`trust/<n>.json`), refused above ``TrustDocument/maxBytes`` before
    /// parsing.
    @discardableResult
    public mutating func accept(_ bytes: [UInt8]) throws(TrustRefusal) -> TrustStep {
        let document: TrustDocument
        do { document = try TrustDocument.decode(bytes) } catch { throw .document(version: nextVersion, error) }
        return try accept(document)
    }

    /// Accepts `document` as the next version: exactly one more than held (an older one is a rollback), signed by a
    /// threshold of the previous version's root keys (the anchor's, for the first) and a threshold of its own.
    /// Expiry is not checked here (TUF 5.3.10: only the newest version reached, ``checkUnexpired(at:)``).
    @discardableResult
    public mutating func accept(_ document: TrustDocument) throws(TrustRefusal) -> TrustStep {
        let floor = newest?.version ?? (anchor?.version ?? 1) - 1
        guard document.version > floor else { throw .rollback(version: document.version, held: floor) }
        guard document.version == nextVersion else { throw .unexpectedVersion(expected: nextVersion, found: document.version) }
        try previousRoots.verify(document.signedBytes, signatures: document.signatures)
        try document.signers(.root).verify(document.signedBytes, signatures: document.signatures)
        var dropped: [TrustRole: [KeyID]] = [:]
        for role in TrustRole.allCases {
            let gone = Set(roleKeysBefore(role).keys).subtracting(document[role].keyIDs).sorted()
            if !gone.isEmpty { dropped[role] = gone }
        }
        documents.append(document)
        return TrustStep(version: document.version, dropped: dropped)
    }

    /// The keys `role` had before the next version: the newest held's, else the anchor's roots or the plain keys.
    private func roleKeysBefore(_ role: TrustRole) -> [KeyID: VerifyingKey] {
        if let newest { return newest.keys(of: role) }
        if role == .root { return anchor?.keys ?? [:] }
        return Dictionary(plainKeys.map { ($0.keyID, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Refuses when the newest version held has expired; with none held (plain keys), nothing expires here.
    public func checkUnexpired(at now: Timestamp) throws(TrustRefusal) {
        guard anchor != nil, let newest, now >= newest.expires else { return }
        throw .expired(version: newest.version, expires: newest.expires, now: now)
    }

    // MARK: Answers

    /// Who may sign documents of `role` now, with what threshold, and which of the role's keys are revoked. The
    /// updater checks catalogs against `.catalog`, the store bundles against `.bundles` (catalog keys alone never
    /// make a bundle installable).
    public func signers(for role: TrustRole) -> SignerSet {
        if let newest {
            var known: [KeyID: VerifyingKey] = [:]
            for (id, key) in everKnown() { known[id] = key }
            return SignerSet(role: role, keys: newest.keys(of: role), threshold: newest[role].threshold, revoked: revokedKeys(for: role), known: known)
        }
        guard let anchor else { return .plain(plainKeys) }
        if role == .root { return anchor.signers }
        // Roots configured and no trust version reached yet: the plain keys, or nothing at all passes.
        return plainKeys.isEmpty ? SignerSet(role: role, keys: [:], threshold: 1, known: anchor.keys) : .plain(plainKeys)
    }

    /// Keys `role` had in a version held (or, for the first version, the anchor's roots and the plain keys) that
    /// the newest no longer gives it.
    public func revokedKeys(for role: TrustRole) -> [KeyID: VerifyingKey] {
        guard let newest else { return [:] }
        var history: [KeyID: VerifyingKey] = [:]
        if role == .root {
            for (id, key) in anchor?.keys ?? [:] { history[id] = key }
        } else {
            for key in plainKeys { history[key.keyID] = key }
        }
        for document in documents { for (id, key) in document.keys(of: role) { history[id] = key } }
        let current = Set(newest[role].keyIDs)
        return history.filter { !current.contains($0.key) }
    }

    /// Whether `id` was trusted in some role once (a version held, the anchor, the plain keys) and is in none now.
    public func isRevoked(_ id: KeyID) -> Bool {
        guard let newest else { return false }
        return newest.keys[id] == nil && everKnown()[id] != nil
    }

    /// Whether the catalog keys under which a serial floor was set are no longer all catalog keys: then the floor
    /// no longer binds (fast-forward recovery). `version` is the trust version the floor's catalog named, nil for a
    /// floor set under plain keys. A floor set under a version this device does not hold is treated as dropped (the
    /// liveness side: the device would otherwise refuse every honest catalog).
    public func catalogKeysDropped(since version: Int64?) -> Bool {
        guard anchor != nil, let newest else { return false }
        let before: Set<KeyID>
        if let version {
            guard let document = documents.first(where: { $0.version == version }) else { return true }
            before = Set(document.catalog.keyIDs)
        } else {
            before = Set(plainKeys.map(\.keyID))
        }
        return !before.isSubset(of: newest.catalog.keyIDs)
    }

    private func everKnown() -> [KeyID: VerifyingKey] {
        var all: [KeyID: VerifyingKey] = [:]
        for (id, key) in anchor?.keys ?? [:] { all[id] = key }
        for key in plainKeys { all[key.keyID] = key }
        for document in documents { for (id, key) in document.keys { all[id] = key } }
        return all
    }
}

/// The walk to the trust version a catalog names, as a state machine the updater drives: while ``next`` is
/// `.fetch(n)`, fetch `trust/<n>.json` (resolved against production's catalog URL) and ``receive(_:)`` its bytes;
/// then ``finish(at:)`` checks the newest version's expiry and gives the state to check the catalog with.
///
/// Nothing here is kept: the updater keeps ``accepted`` (the new documents) only once the catalog they lead to is
/// accepted, so a refused update leaves the store as it was.
public struct TrustWalk: Sendable {
    public enum Next: Equatable, Sendable {
        case fetch(Int64)
        case complete
    }

    public private(set) var state: TrustState
    /// The version the catalog names, when there is one to walk to.
    public let target: Int64?
    public private(set) var steps: [TrustStep] = []

    init(state: TrustState, target: Int64?) {
        self.state = state
        self.target = target
    }

    public var next: Next {
        if let target, state.version < target { return .fetch(state.nextVersion) }
        return .complete
    }

    /// Accepts the bytes fetched for ``next``'s version.
    public mutating func receive(_ bytes: [UInt8]) throws(TrustRefusal) {
        guard case .fetch(let expected) = next else {
            throw .unexpectedVersion(expected: target ?? state.version, found: (try? TrustDocument.decode(bytes))?.version ?? 0)
        }
        let document: TrustDocument
        do { document = try TrustDocument.decode(bytes) } catch { throw .document(version: expected, error) }
        steps.append(try state.accept(document))
    }

    /// The documents accepted on this walk, oldest first: what to keep once the catalog is accepted (each one's
    /// `canonicalBytes` are the bytes fetched, since documents are read in canonical form only).
    public var accepted: [TrustDocument] { Array(state.documents.suffix(steps.count)) }

    /// Whether a version accepted on this walk dropped a catalog key: the catalog serial floor no longer binds.
    public var droppedCatalogKey: Bool { steps.contains { !$0.droppedCatalogKeys.isEmpty } }

    /// Ends the walk: refused while versions remain to fetch, or when the newest version reached has expired (the
    /// only expiry checked: a first version shipped in an app may be long expired).
    public func finish(at now: Timestamp) throws(TrustRefusal) -> TrustState {
        if case .fetch(let version) = next { throw .unexpectedVersion(expected: target ?? version, found: state.version) }
        try state.checkUnexpired(at: now)
        return state
    }
}

/// Why a folder of trust documents does not chain: the version refused and the check.
public struct PublishedChainRefusal: Error, Equatable, Sendable {
    public let version: Int64
    public let refusal: TrustRefusal
}
