/// The three roles of a trust document.
public enum TrustRole: String, CaseIterable, Sendable, Comparable, CustomStringConvertible {
    /// Signs trust documents: version N+1 needs a threshold of version N's root keys and of its own.
    case root
    /// Signs catalogs (freshness and rollout state): an online key CI may hold.
    case catalog
    /// Signs bundles (the code), over `satchel.json`'s bytes.
    case bundles

    public var description: String { rawValue }
    public static func < (lhs: TrustRole, rhs: TrustRole) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A role as a document writes it: the ids of its keys (sorted, each once) and how many of them must sign.
public struct RoleKeys: Equatable, Sendable {
    public let keyIDs: [KeyID]
    public let threshold: Int

    public init(keyIDs: [KeyID], threshold: Int) {
        self.keyIDs = keyIDs
        self.threshold = threshold
    }

    var canonicalJSON: CanonicalJSON {
        .object(["keyids": .array(keyIDs.map { .string($0.hex) }), "threshold": .integer(Int64(threshold))])
    }
}

/// A role as a writer states it: its public keys and threshold.
public struct RoleDefinition: Sendable {
    public var keys: [VerifyingKey]
    public var threshold: Int

    public init(keys: [VerifyingKey], threshold: Int) {
        self.keys = keys
        self.threshold = threshold
    }
}

/// A trust document, `trust/<version>.json` (docs/formats.md, "Trust documents"): which keys may sign trust
/// documents, catalogs and bundles, with what thresholds, until when; signed inside, in TUF's shape:
///
/// ```
/// {"signatures":[{"keyid":…,"sig":…}],"signed":{"expires":…,"keys":{"<keyid>":"<base64 key>"},
///  "roles":{"bundles":{"keyids":[…],"threshold":1},"catalog":{…},"root":{…}},"type":"satchel-trust","version":1}}
/// ```
///
/// Signatures are Ed25519 over ``signedBytes``, the canonical bytes of `signed`. The initialisers and ``decode(_:)``
/// check every rule of the format, so code holding a `TrustDocument` never re-checks it; whether its signatures are
/// enough is the business of ``TrustState`` (a chain) or ``rootTally(previous:)`` (a tool).
public struct TrustDocument: Equatable, Sendable {
    public static let type = "satchel-trust"
    /// Trust documents are a few keys; a larger answer is not one (the endless-data attack), and is refused before
    /// parsing.
    public static let maxBytes = DocumentLimits.trustDocument

    public let version: Int64
    /// After this instant the document may not be the newest a device relies on.
    public let expires: Timestamp
    /// Every key a role names, by id; no others.
    public let keys: [KeyID: VerifyingKey]
    public let root: RoleKeys
    public let catalog: RoleKeys
    public let bundles: RoleKeys
    /// As read (order and repetitions kept, so the bytes read are the bytes written); writers keep one per key,
    /// sorted by key id.
    public let signatures: [KeyedSignature]

    /// A document with no signatures yet; keys and thresholds are checked.
    public init(version: Int64, expires: Timestamp, roles: [TrustRole: RoleDefinition]) throws(TrustError) {
        var keys: [KeyID: VerifyingKey] = [:]
        var roleKeys: [TrustRole: RoleKeys] = [:]
        for role in TrustRole.allCases {
            guard let definition = roles[role] else { throw .missingRole(role) }
            var ids = Set<KeyID>()
            for key in definition.keys {
                let id = key.keyID
                guard ids.insert(id).inserted else { throw .duplicateKeyID(role, id) }
                keys[id] = key
            }
            roleKeys[role] = RoleKeys(keyIDs: ids.sorted(), threshold: definition.threshold)
        }
        try self.init(version: version, expires: expires, keys: keys, root: roleKeys[.root]!, catalog: roleKeys[.catalog]!, bundles: roleKeys[.bundles]!, signatures: [])
    }

    init(
        version: Int64, expires: Timestamp, keys: [KeyID: VerifyingKey], root: RoleKeys, catalog: RoleKeys, bundles: RoleKeys,
        signatures: [KeyedSignature]
    ) throws(TrustError) {
        self.version = version
        self.expires = expires
        self.keys = keys
        self.root = root
        self.catalog = catalog
        self.bundles = bundles
        self.signatures = signatures
        guard version >= 1 else { throw .invalidVersion(version) }
        var named = Set<KeyID>()
        for role in TrustRole.allCases {
            let definition = self[role]
            var seen = Set<KeyID>()
            for id in definition.keyIDs {
                guard seen.insert(id).inserted else { throw .duplicateKeyID(role, id) }
                guard keys[id] != nil else { throw .keyNotListed(role, id) }
                named.insert(id)
            }
            guard definition.threshold >= 1, definition.threshold <= definition.keyIDs.count else {
                throw .invalidThreshold(role, threshold: Int64(definition.threshold), keys: definition.keyIDs.count)
            }
        }
        for id in keys.keys.sorted() {
            guard named.contains(id) else { throw .unusedKey(id) }
            guard keys[id]!.keyID == id else { throw .keyIDMismatch(id) }
        }
    }

    public subscript(role: TrustRole) -> RoleKeys {
        switch role {
        case .root: root
        case .catalog: catalog
        case .bundles: bundles
        }
    }

    /// The public keys of `role`, by id.
    public func keys(of role: TrustRole) -> [KeyID: VerifyingKey] {
        Dictionary(uniqueKeysWithValues: self[role].keyIDs.map { ($0, keys[$0]!) })
    }

    /// The path of version `version` relative to the folder of production's catalog: `trust/<version>.json`.
    public static func path(version: Int64) -> String { "trust/\(version).json" }

    // MARK: Signatures

    /// The same document with `key`'s signature over ``signedBytes`` in place of any earlier one by that key;
    /// signatures sorted by key id, one per key. Whether the key belongs to a role is the caller's question.
    public func signed(by key: SigningKey) throws -> TrustDocument {
        let added = try KeyedSignature(signing: signedBytes, with: key)
        return try! TrustDocument(
            version: version, expires: expires, keys: keys, root: root, catalog: catalog, bundles: bundles,
            signatures: KeyedSignature.adding(added, to: signatures))
    }

    public func signed(by keys: [SigningKey]) throws -> TrustDocument {
        var document = self
        for key in keys { document = try document.signed(by: key) }
        return document
    }

    /// Whether `key` has a signature here that verifies.
    public func isSigned(by key: VerifyingKey) -> Bool {
        let id = key.keyID
        let bytes = signedBytes
        return signatures.contains { $0.keyID == id && key.isValid($0.signature, for: bytes) }
    }

    /// The signers of `role` as this document defines them (no revocation history: see ``TrustState``).
    public func signers(_ role: TrustRole) -> SignerSet {
        SignerSet(role: role, keys: keys(of: role), threshold: self[role].threshold, known: keys)
    }

    /// How this document's root signatures stand: against its own root role, and against `previous`'s (the version
    /// before it, or the roots an app ships for version 1), when given. What `satchel trust update` and `satchel
    /// sign` report; a device applies the same two tallies through ``TrustState``.
    public func rootTally(previous: SignerSet?) -> RootTally {
        RootTally(own: signers(.root).tally(signedBytes, signatures: signatures), previous: previous?.tally(signedBytes, signatures: signatures))
    }

    // MARK: Serialisation

    var signedJSON: CanonicalJSON {
        .object([
            "expires": .string(expires.description),
            "keys": .object(Dictionary(uniqueKeysWithValues: keys.map { ($0.key.hex, CanonicalJSON.string($0.value.base64)) })),
            "roles": .object(Dictionary(uniqueKeysWithValues: TrustRole.allCases.map { ($0.rawValue, self[$0].canonicalJSON) })),
            "type": .string(Self.type),
            "version": .integer(version),
        ])
    }

    /// The bytes every signature covers: the canonical encoding of `signed`.
    public var signedBytes: [UInt8] { signedJSON.bytes }

    public var canonicalBytes: [UInt8] {
        CanonicalJSON.object(["signatures": .array(signatures.map(\.canonicalJSON)), "signed": signedJSON]).bytes
    }

    /// Reads a trust document strictly: at most ``maxBytes`` (checked before parsing), every field known, every rule
    /// held, and canonical bytes. Signatures are read, not judged.
    public static func decode(_ bytes: [UInt8]) throws(TrustError) -> TrustDocument {
        let top = try StrictJSON.object(StrictJSON.parse(bytes, maxBytes: maxBytes), at: "", fields: ["signatures", "signed"])
        let signatures = try KeyedSignature.parseList(top["signatures"], at: "signatures")
        let signed = try StrictJSON.object(top["signed"], at: "signed", fields: ["expires", "keys", "roles", "type", "version"])
        let type = try StrictJSON.string(signed["type"], at: "signed.type")
        guard type == Self.type else { throw .wrongType(type) }
        let version = try StrictJSON.integer(signed["version"], at: "signed.version")
        guard version >= 1 else { throw .invalidVersion(version) }
        let expiresText = try StrictJSON.string(signed["expires"], at: "signed.expires")
        guard let expires = try? Timestamp(rfc3339: expiresText) else { throw .invalidExpiry(expiresText) }
        var keys: [KeyID: VerifyingKey] = [:]
        for (idText, value) in try StrictJSON.anyObject(signed["keys"], at: "signed.keys").sorted(by: { $0.key < $1.key }) {
            let id = try KeyID(hex: idText)
            let text = try StrictJSON.string(value, at: "signed.keys.\(idText)")
            guard text.utf8.count == 44, let key = try? VerifyingKey(base64: text) else { throw .malformedKey(id) }
            guard key.keyID == id else { throw .keyIDMismatch(id) }
            keys[id] = key
        }
        let roleMembers = try StrictJSON.anyObject(signed["roles"], at: "signed.roles")
        for name in roleMembers.keys.sorted() where TrustRole(rawValue: name) == nil { throw .unknownRole(name) }
        var roles: [TrustRole: RoleKeys] = [:]
        for role in TrustRole.allCases {
            guard let value = roleMembers[role.rawValue] else { throw .missingRole(role) }
            let path = "signed.roles.\(role)"
            let fields = try StrictJSON.object(value, at: path, fields: ["keyids", "threshold"])
            var ids: [KeyID] = []
            for (index, element) in try StrictJSON.array(fields["keyids"], at: path + ".keyids").enumerated() {
                ids.append(try KeyID(hex: try StrictJSON.string(element, at: "\(path).keyids[\(index)]")))
            }
            // Checked with the other role rules by the initialiser below (Int is 64 bits wherever Satchel runs).
            let threshold = try StrictJSON.integer(fields["threshold"], at: path + ".threshold")
            roles[role] = RoleKeys(keyIDs: ids, threshold: Int(threshold))
        }
        let document = try TrustDocument(
            version: version, expires: expires, keys: keys, root: roles[.root]!, catalog: roles[.catalog]!, bundles: roles[.bundles]!,
            signatures: signatures)
        try StrictJSON.requireCanonical(bytes, document.canonicalBytes)
        return document
    }
}

/// A trust document's root signatures: against its own root role, and against the previous version's when known.
public struct RootTally: Equatable, Sendable {
    public let own: SignatureTally
    public let previous: SignatureTally?

    /// Threshold slots filled, over both roles (a key in both counts toward both): `satchel trust update --json`'s
    /// `root.have`.
    public var have: Int { min(own.have, own.threshold) + (previous.map { min($0.have, $0.threshold) } ?? 0) }
    /// The previous version's root threshold plus this one's: `root.need`.
    public var need: Int { own.threshold + (previous?.threshold ?? 0) }
    /// Both thresholds met: a device would accept the document.
    public var isComplete: Bool { own.isMet && (previous?.isMet ?? true) }
}
