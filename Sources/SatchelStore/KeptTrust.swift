import Foundation
import SatchelCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Everything a device keeps about trust, read and written here and nowhere else (docs/formats.md, "Store layout"):
///
/// | file | what | written |
/// |---|---|---|
/// | `downloads/trust/<n>.json` | the trust documents accepted, byte for byte | once the catalog they led to is accepted |
/// | `downloads/updater.json`: `serials`, `serialTrust` | each catalog URL's serial floor, and the trust version of the catalog that set it | after the documents |
/// | `packages/<id>/signatures/<version>.sigs` | the keyed signatures that counted when a version was installed | with the version |
///
/// The files are today's (an older runtime reads them: the floors stay in `updater.json`, whose other keys, the install
/// id and the failures, belong to the updater's record and are kept as they are). What to keep is decided by the
/// acceptance path (``CatalogAcceptance``, ``TrustState/judgeBundle(_:legacy:keyed:as:)``); this type only keeps it.
public struct KeptTrust: Sendable {
    public let layout: StoreLayout
    /// Trust documents the app ships, walked before those kept.
    public let shipped: [[UInt8]]

    public init(layout: StoreLayout, shipped: [[UInt8]] = []) {
        self.layout = layout
        self.shipped = shipped
    }

    // MARK: Trust documents

    /// The trust from `anchor` (nil: plain keys alone, which read no document), walked again over the documents
    /// shipped and kept (signatures, not expiry: ``TrustState/restore(anchor:plainKeys:documents:)``).
    public func state(anchor: TrustAnchor?, plainKeys: [VerifyingKey]) -> TrustState {
        guard let anchor else { return TrustState(anchor: nil, plainKeys: plainKeys) }
        return TrustState.restore(anchor: anchor, plainKeys: plainKeys, documents: shipped + documents()).state
    }

    /// The bytes of every `downloads/trust/<n>.json`, by version (files above the size limit are left out unread).
    func documents() -> [[UInt8]] {
        var found: [(Int64, [UInt8])] = []
        for name in FileSystem.list(layout.trust) where name.hasSuffix(".json") {
            guard let version = Int64(name.dropLast(5)), version >= 1,
                let bytes = try? FileSystem.read(layout.trust + "/" + name, maxBytes: TrustDocument.maxBytes)
            else { continue }
            found.append((version, bytes))
        }
        return found.sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// Keeps trust documents as `downloads/trust/<n>.json` (their canonical bytes, which are the bytes published),
    /// atomically one by one: a crash keeps a prefix of the walk, which the next read chains again.
    public func keep(_ documents: [TrustDocument]) throws(StoreError) {
        guard !documents.isEmpty else { return }
        try FileSystem.makeDirectories(layout.trust)
        for document in documents {
            try FileSystem.writeAtomically(document.canonicalBytes, to: layout.trust + "/\(document.version).json")
        }
    }

    /// Keeps what accepting `url`'s catalog decided, in the order that survives a crash: the documents first, then the
    /// floor with its trust version (a crash in between leaves the old floor beside its old trust version, which the
    /// kept documents then reset when they dropped a catalog key).
    public func keep(_ accepted: AcceptedCatalog, for url: String) throws(StoreError) {
        try keep(accepted.newDocuments)
        try keepFloor(accepted.floor, for: url)
    }

    // MARK: Serial floors

    static let floorsFile = "updater.json"
    private var floorsPath: String { layout.downloads + "/" + Self.floorsFile }

    /// `url`'s serial floor, if one was set (an unreadable record sets none: the worst that costs is a floor of zero).
    public func floor(for url: String) -> SerialFloor? {
        let record = readRecord()
        guard let serial = (record["serials"] as? [String: Any])?[url].flatMap(Self.integer) else { return nil }
        return SerialFloor(serial: serial, trustVersion: (record["serialTrust"] as? [String: Any])?[url].flatMap(Self.integer))
    }

    /// Sets `url`'s floor, with the trust version it was set under (none: plain keys, nothing recorded), keeping every
    /// other key of the record as it is.
    public func keepFloor(_ floor: SerialFloor, for url: String) throws(StoreError) {
        var record = readRecord()
        var serials = record["serials"] as? [String: Any] ?? [:]
        serials[url] = floor.serial
        record["serials"] = serials
        var trust = record["serialTrust"] as? [String: Any] ?? [:]
        trust[url] = floor.trustVersion
        record["serialTrust"] = trust.isEmpty ? nil : trust
        try Self.writeRecord(record, to: floorsPath)
    }

    private func readRecord() -> [String: Any] {
        guard let bytes = try? FileSystem.read(floorsPath, maxBytes: DocumentLimits.storeState) else { return [:] }
        return (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] ?? [:]
    }

    private static func integer(_ value: Any) -> Int64? { (value as? NSNumber)?.int64Value }

    /// Writes the record atomically with sorted keys (what the updater's record writes too).
    static func writeRecord(_ record: [String: Any], to path: String) throws(StoreError) {
        guard let data = try? JSONSerialization.data(withJSONObject: record, options: [.sortedKeys]) else {
            throw .corruptState(path: path, reason: "the record cannot be written as JSON")
        }
        try FileSystem.makeDirectories((path as NSString).deletingLastPathComponent)
        try FileSystem.writeAtomically(Array(data), to: path)
    }

    // MARK: Bundle signatures

    /// Writes the keyed signatures that counted for an installed version (merged with those kept for the same bytes);
    /// returns the file when it was new. Best effort: the file only informs `check()`.
    func keepSignatures(_ file: SignatureFile?, of id: PackageID, _ version: SemanticVersion) -> String? {
        guard let file else { return nil }
        let path = layout.signatures(id, version)
        var merged = file
        let existing = signatures(of: id, version)
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
    func signatures(of id: PackageID, _ version: SemanticVersion) -> SignatureFile? {
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
}
