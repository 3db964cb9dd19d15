import Foundation
import SatchelCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The device's trust, as the store sees it (docs/formats.md, "Trust" and "Store layout"): the anchor and the documents
/// the app ships, then those the updater kept in `downloads/trust/<n>.json`, walked again at every read (signatures,
/// not expiry: ``TrustState/restore(anchor:plainKeys:documents:)``). The store checks bundles against the newest
/// version's `bundles` role; the updater checks catalogs against its `catalog` role and keeps what it accepted here.
extension PackageStore {
    /// The trust this store checks bundles with; nil without ``StoreConfiguration/trustAnchor`` (plain keys only).
    public func trustState() -> TrustState? { Self.trustState(configuration, layout) }

    /// The trust walked from another anchor and plain keys (the updater's, when they are not the store's), over the same
    /// shipped and kept documents.
    public func trustState(anchor: TrustAnchor, plainKeys: [VerifyingKey]) -> TrustState {
        TrustState.restore(anchor: anchor, plainKeys: plainKeys, documents: configuration.trustDocuments + Self.keptTrustDocuments(layout)).state
    }

    static func trustState(_ configuration: StoreConfiguration, _ layout: StoreLayout) -> TrustState? {
        guard let anchor = configuration.trustAnchor else { return nil }
        return TrustState.restore(
            anchor: anchor, plainKeys: configuration.trustedKeys, documents: configuration.trustDocuments + keptTrustDocuments(layout)).state
    }

    /// The bytes of every `downloads/trust/<n>.json`, by version (files above the size limit are left out unread).
    static func keptTrustDocuments(_ layout: StoreLayout) -> [[UInt8]] {
        var found: [(Int64, [UInt8])] = []
        for name in FileSystem.list(layout.trust) where name.hasSuffix(".json") {
            guard let version = Int64(name.dropLast(5)), version >= 1,
                let bytes = try? FileSystem.read(layout.trust + "/" + name, maxBytes: TrustDocument.maxBytes)
            else { continue }
            found.append((version, bytes))
        }
        return found.sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// Keeps trust documents the updater accepted, each as `downloads/trust/<n>.json` (its canonical bytes, which are
    /// the bytes published), atomically one by one: a crash keeps a prefix of the walk, which the next read chains
    /// again. Called once the catalog they led to is accepted, so a refused update leaves this folder as it was.
    public func keepTrust(_ documents: [TrustDocument]) throws(StoreError) {
        guard !documents.isEmpty else { return }
        try FileSystem.makeDirectories(layout.trust)
        for document in documents {
            try FileSystem.writeAtomically(document.canonicalBytes, to: layout.trust + "/\(document.version).json")
        }
    }

    /// Writes the keyed signatures that counted for an installed version (merged with those kept for the same bytes);
    /// returns the file when it was new. Best effort: the file only informs ``check()``.
    func keepSignatures(_ file: SignatureFile?, of id: PackageID, _ version: SemanticVersion) -> String? {
        guard let file else { return nil }
        let path = layout.signatures(id, version)
        var merged = file
        let existing = keptSignatures(of: id, version)
        if let existing, existing.sha256 == file.sha256 {
            merged = (try? SignatureFile(sha256: file.sha256, signatures: KeyedSignature.normalised(existing.signatures + file.signatures))) ?? file
            if merged == existing { return nil }
        }
        do {
            try FileSystem.makeDirectories(layout.signatures(id))
            try FileSystem.writeAtomically(merged.canonicalBytes, to: path)
        } catch {
            return nil
        }
        return existing == nil ? path : nil
    }

    /// The keyed signatures kept for an installed version, when there is a readable file.
    func keptSignatures(of id: PackageID, _ version: SemanticVersion) -> SignatureFile? {
        guard let bytes = try? FileSystem.read(layout.signatures(id, version), maxBytes: SignatureFile.maxBytes) else { return nil }
        return try? SignatureFile.decode(bytes)
    }

    /// Removes the kept signatures of versions that have no folder any more (removed, collected, or never renamed in).
    func sweepSignatures(of id: PackageID) {
        let folder = layout.signatures(id)
        let versions = Set(FileSystem.list(layout.versions(id)))
        for name in FileSystem.list(folder) where name.hasSuffix(SignatureFile.suffix) || name.hasSuffix(".tmp") {
            let version = name.hasSuffix(SignatureFile.suffix) ? String(name.dropLast(SignatureFile.suffix.count)) : ""
            if !versions.contains(version) { unlink(folder + "/" + name) }
        }
        if FileSystem.list(folder).isEmpty { rmdir(folder) }
    }

    /// How an installed version's signatures stand against the `bundles` role now: its `satchel.sig` and the keyed
    /// signatures kept beside it, over its `satchel.json`.
    func bundleTally(_ id: PackageID, _ version: SemanticVersion, signers: SignerSet) -> SignatureTally? {
        let folder = layout.version(id, version)
        guard let manifestBytes = try? FileSystem.read(folder + "/" + Manifest.fileName) else { return nil }
        let legacy = (try? FileSystem.read(folder + "/" + Manifest.signatureFileName, maxBytes: 1024))
            .flatMap { try? Signature(base64: String(decoding: $0, as: UTF8.self)) }
        let kept = keptSignatures(of: id, version).flatMap { $0.covers(manifestBytes) ? $0.signatures : nil } ?? []
        return signers.tally(manifestBytes, signatures: kept, legacy: legacy)
    }

    /// Every key `role` has or had in the trust held (the plain keys before a first version): whose signature a
    /// built-in may carry. Empty when nothing is known yet.
    static func everyKey(of role: TrustRole, in trust: TrustState) -> [VerifyingKey] {
        let signers = trust.signers(for: role)
        var keys = signers.keys
        for (id, key) in trust.revokedKeys(for: role) { keys[id] = key }
        return keys.keys.sorted().map { keys[$0]! }
    }
}
