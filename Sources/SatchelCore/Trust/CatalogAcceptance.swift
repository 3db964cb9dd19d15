/// One signature or trust file as the device fetched it: its bytes, or absent with the status that said so.
///
/// Absence is one rule for every mode and every file: a 403 (object stores answer it for a missing key without list
/// permission, and `satchel serve --publish` for a path it has no file for), 404 or 410. Any other status is the
/// network's business (retried, then reported), never an answer the acceptance judges.
public enum FetchedDocument: Equatable, Sendable {
    case present([UInt8])
    case absent(status: Int)

    /// The statuses that mean "there is no such file".
    public static let absentStatuses: Set<Int> = [403, 404, 410]

    /// 200 is the file, an absent status its absence; nil for any other status.
    public init?(status: Int, body: [UInt8]) {
        if status == 200 {
            self = .present(body)
        } else if Self.absentStatuses.contains(status) {
            self = .absent(status: status)
        } else {
            return nil
        }
    }

    public var bytes: [UInt8]? {
        if case .present(let bytes) = self { return bytes }
        return nil
    }
}

/// The serial floor of one catalog URL: the highest serial accepted there, and the trust version named by the catalog
/// that set it (nil when it was set under plain keys). Kept in `downloads/updater.json` (`serials`, `serialTrust`).
public struct SerialFloor: Equatable, Sendable {
    public let serial: Int64
    public let trustVersion: Int64?

    public init(serial: Int64, trustVersion: Int64?) {
        self.serial = serial
        self.trustVersion = trustVersion
    }
}

/// Why a device refuses a catalog: one case per check, whichever mode the device is in (plain keys or roots).
public enum CatalogRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    /// The catalog's bytes break a rule of its format.
    case malformed(CatalogError)
    /// A rule of the trust chain: the version the catalog names, a trust document fetched on the walk (`version`), or
    /// the expiry of the newest version reached (`version` nil for what is about the catalog itself).
    case trust(TrustRefusal, document: Int64?)
    /// `trust/<version>.json` is absent (403, 404, 410): the catalog names a version nobody published.
    case trustDocumentMissing(version: Int64, status: Int)
    /// `catalog.json.sigs` is present and breaks a rule of its format.
    case signatureFile(TrustError)
    /// The catalog's signatures fall short. `refusal` names the check: `unsigned` (plain keys: no `.sig` at all),
    /// `threshold`, `revoked-key`, `key-not-trusted`, `signature-mismatch`. `stale`: a signature file made for other
    /// bytes, or a `.sig` no key the device knows verifies, is what a CDN refreshing the catalog and its signatures out
    /// of step serves for a moment; the fetcher then fetches them all again, within its retry policy.
    case signatures(TrustRefusal, stale: Bool)
    /// The catalog's own `expires` has passed (checked on every fetch, a 304's cached copy included).
    case expired(expires: Timestamp, now: Timestamp)
    /// A serial below the floor this URL set (a replay), which a dropped catalog key has not reset.
    case replayed(serial: Int64, floor: Int64)

    /// The refusal's kind, the same in both modes: what the equivalence suite compares (the wording may name the
    /// mode's check, "unsigned" for plain keys, "threshold" under roots; the kind does not).
    public enum Kind: String, Sendable {
        case malformed, trustChain = "trust-chain", trustDocumentMissing = "trust-document-missing", signatureFile = "signature-file"
        case signatures, expired, replayed
    }

    public var kind: Kind {
        switch self {
        case .malformed: .malformed
        case .trust: .trustChain
        case .trustDocumentMissing: .trustDocumentMissing
        case .signatureFile: .signatureFile
        case .signatures: .signatures
        case .expired: .expired
        case .replayed: .replayed
        }
    }

    /// Whether fetching the catalog and its signature files again may change the answer.
    public var mayBeStale: Bool {
        if case .signatures(_, let stale) = self { return stale }
        return false
    }

    public var description: String {
        switch self {
        case .malformed(let error): "\(error)"
        case .trust(let refusal, _): "\(refusal)"
        case .trustDocumentMissing(let version, let status): "trust version \(version) is absent (HTTP \(status))"
        case .signatureFile(let error): "\(error)"
        case .signatures(let refusal, _): "\(refusal)"
        case .expired(let expires, let now): "expired at \(expires) (now \(now))"
        case .replayed(let serial, let floor): "serial \(serial) is below \(floor), the highest accepted (a replayed catalog)"
        }
    }
}

/// A catalog the device accepted, and what it keeps for it: the trust documents the walk accepted (oldest first, kept
/// before the floor), and the floor to keep for the catalog's URL.
public struct AcceptedCatalog: Sendable {
    public let catalog: Catalog
    /// Whether a key checked it (false only for a device with no key at all).
    public let signed: Bool
    /// The trust after this catalog: what bundles of this update are judged with.
    public let trust: TrustState
    /// Trust documents accepted on the walk, oldest first: kept (as their canonical bytes) before ``floor``.
    public let newDocuments: [TrustDocument]
    public let floor: SerialFloor
    /// Whether a version accepted on the walk dropped a catalog key (the floor that held before no longer binds).
    public let droppedCatalogKey: Bool
}

/// How a device decides to trust a catalog: one pure state machine for both modes (python-tuf's
/// `TrustedMetadataSet` is the model). It holds what the device trusts (``TrustState``: root keys and the documents
/// kept, or plain keys alone, which is the state with no anchor) and the URL's serial floor; it takes what was
/// fetched one file at a time, in the order ``next`` asks, and either moves on or refuses with a typed
/// ``CatalogRefusal`` naming the check. It performs no I/O and reads no clock: the fetcher fetches, the keeper keeps.
///
/// The order, the same in both modes: the catalog parsed (a device with roots needs the trust version it names), the
/// walk to that version one document at a time, the newest version's expiry, the signatures (`catalog.json.sig`,
/// and with an anchor `catalog.json.sigs`), the catalog's expiry, then the serial floor.
///
/// Plain keys (docs/formats.md, "Plain keys beside roots"): the catalog's `trust` field, the `.sigs` file and entries'
/// `signatures` mean nothing; only `catalog.json.sig` is asked for, and with no key nothing is asked or checked.
/// An app that moves from plain keys to roots changes its ``TrustState`` and nothing else.
public struct CatalogAcceptance: Sendable {
    /// What the fetcher brings next.
    public enum Next: Equatable, Sendable {
        /// `trust/<version>.json`, resolved against production's catalog URL.
        case trustDocument(version: Int64)
        /// The catalog's signature files: `catalog.json.sig`, and `catalog.json.sigs` when `keyed`.
        case signatures(keyed: Bool)
        /// Everything is in: ``decide(at:)``.
        case decide
    }

    public let catalog: Catalog
    public let bytes: [UInt8]
    private let floor: SerialFloor?
    private var walk: TrustWalk?
    private var signers: SignerSet?
    private var plain: TrustState?
    private var received: (legacy: FetchedDocument, keyed: FetchedDocument?)?

    /// Starts on a catalog's bytes.
    /// - Parameters:
    ///   - trust: what the device holds (an anchor and the documents kept, or plain keys alone).
    ///   - floor: the serial floor of the URL the catalog came from, if one was set.
    public init(catalog bytes: [UInt8], trust: TrustState, floor: SerialFloor?) throws(CatalogRefusal) {
        do { catalog = try Catalog.decode(bytes) } catch { throw .malformed(error) }
        self.bytes = bytes
        self.floor = floor
        if trust.anchor == nil {
            plain = trust
            let set = SignerSet.plain(trust.plainKeys)
            signers = set.isChecked ? set : nil
        } else {
            do { walk = try trust.walk(toCatalogNaming: catalog.trust) } catch { throw .trust(error, document: nil) }
        }
    }

    public var next: Next {
        if let walk, case .fetch(let version) = walk.next { return .trustDocument(version: version) }
        if received == nil, let signers = currentSigners, signers.isChecked { return .signatures(keyed: walk != nil) }
        return .decide
    }

    /// The signers the catalog is counted against once the walk is over; nil while it goes on.
    private var currentSigners: SignerSet? {
        if walk == nil { return signers }
        guard let walk, walk.next == .complete else { return nil }
        return walk.state.signers(for: .catalog)
    }

    /// Takes `trust/<n>.json` for the version ``next`` asked for.
    public mutating func receiveTrustDocument(_ fetched: FetchedDocument) throws(CatalogRefusal) {
        guard var walk, case .fetch(let version) = walk.next else {
            throw .trust(.unexpectedVersion(expected: self.walk?.state.version ?? 0, found: 0), document: nil)
        }
        guard case .present(let bytes) = fetched else {
            if case .absent(let status) = fetched { throw .trustDocumentMissing(version: version, status: status) }
            throw .trustDocumentMissing(version: version, status: 0)
        }
        do { try walk.receive(bytes) } catch { throw .trust(error, document: version) }
        self.walk = walk
    }

    /// Takes the signature files ``next`` asked for (`keyed` nil when it asked for `catalog.json.sig` alone; given
    /// anyway, it is ignored under plain keys).
    public mutating func receiveSignatures(legacy: FetchedDocument, keyed: FetchedDocument?) {
        received = (legacy, walk == nil ? nil : keyed)
    }

    /// Decides, at `now`: the catalog accepted with what to keep, or the refusal.
    public func decide(at now: Timestamp) throws(CatalogRefusal) -> AcceptedCatalog {
        let reached: TrustState
        if let walk {
            guard walk.next == .complete else { throw .trust(.unexpectedVersion(expected: walk.target ?? walk.state.nextVersion, found: walk.state.version), document: nil) }
            do { reached = try walk.finish(at: now) } catch { throw .trust(error, document: nil) }
        } else {
            reached = plain!
        }
        let signers = currentSigners ?? .unchecked
        if signers.isChecked {
            guard let received else { throw .signatures(.unsigned(signers.tally(bytes, signatures: [])), stale: false) }
            try Self.count(bytes, against: signers, legacy: received.legacy, keyed: received.keyed)
        }
        guard !catalog.isExpired(at: now) else { throw .expired(expires: catalog.expires, now: now) }
        let droppedCatalogKey = walk?.droppedCatalogKey ?? false
        if let floor, catalog.serial < floor.serial {
            // Fast-forward recovery: a floor set under catalog keys the trust reached no longer holds all of stops
            // binding (a leaked catalog key may have signed a huge serial before it was rotated out).
            guard reached.catalogKeysDropped(since: floor.trustVersion) else { throw .replayed(serial: catalog.serial, floor: floor.serial) }
        }
        return AcceptedCatalog(
            catalog: catalog, signed: signers.isChecked, trust: reached, newDocuments: walk?.accepted ?? [],
            floor: SerialFloor(serial: catalog.serial, trustVersion: walk == nil ? nil : catalog.trust), droppedCatalogKey: droppedCatalogKey)
    }

    /// Counts the catalog's signatures. A missing file only takes signatures away, so no answer can make a catalog pass
    /// that the files present would not.
    /// `keyed` is nil exactly under plain keys, whose rule reads `catalog.json.sig` alone.
    private static func count(_ bytes: [UInt8], against signers: SignerSet, legacy: FetchedDocument, keyed: FetchedDocument?) throws(CatalogRefusal) {
        let legacyBytes = legacy.bytes
        let legacySignature = legacyBytes.flatMap { SignatureFile.legacySignature($0) }
        var file: SignatureFile?
        if let keyedBytes = keyed?.bytes {
            do { file = try SignatureFile.decode(keyedBytes) } catch { throw .signatureFile(error) }
        }
        let covering = file.map { $0.covers(bytes) } ?? true
        do {
            try signers.verify(bytes, signatures: covering ? file?.signatures ?? [] : [], legacy: legacySignature, anyPresent: keyed == nil ? legacyBytes != nil : nil)
        } catch {
            // A .sigs made for other bytes, or a .sig (readable or not) no key this device knows verifies: perhaps a
            // CDN mid-refresh.
            let knownLegacy = legacyBytes == nil || legacySignature.map { signers.anyKnownKeyVerifies($0, over: bytes) } == true
            throw .signatures(error, stale: !covering || !knownLegacy)
        }
    }
}
