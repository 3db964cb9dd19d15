import Foundation
import SatchelBundle
import SatchelCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The device's trust, as the store sees it (docs/formats.md, "Trust" and "Store layout"): what it keeps is
/// ``KeptTrust``'s; how bundles are judged is ``TrustState/judgeBundle(_:legacy:keyed:as:)``'s.
extension PackageStore {
    /// The one owner of the trust files of this store.
    public var keptTrust: KeptTrust { KeptTrust(layout: layout, shipped: configuration.trustDocuments) }

    /// The trust this store checks bundles with; nil without ``StoreConfiguration/trustAnchor`` (plain keys only).
    public func trustState() -> TrustState? { Self.trustState(configuration, layout) }

    /// The trust walked from another anchor and plain keys (the updater's, when they are not the store's), over the same
    /// shipped and kept documents; plain keys alone without an anchor.
    public func trustState(anchor: TrustAnchor?, plainKeys: [VerifyingKey]) -> TrustState {
        keptTrust.state(anchor: anchor, plainKeys: plainKeys)
    }

    static func trustState(_ configuration: StoreConfiguration, _ layout: StoreLayout) -> TrustState? {
        guard let anchor = configuration.trustAnchor else { return nil }
        return KeptTrust(layout: layout, shipped: configuration.trustDocuments).state(anchor: anchor, plainKeys: configuration.trustedKeys)
    }

    /// What `satchel check` says of an installed version's signatures (nil: nothing wrong), judged by the one rule
    /// (``BundleCheck/installed``) over its `satchel.json`, its `satchel.sig` and the keyed signatures kept beside it.
    func signatureProblem(_ id: PackageID, _ version: SemanticVersion) -> CheckProblem.Kind? {
        let folder = layout.version(id, version)
        guard let manifestBytes = try? FileSystem.read(folder + "/" + Manifest.fileName) else { return nil }
        let legacy = (try? FileSystem.read(folder + "/" + Manifest.signatureFileName, maxBytes: DocumentLimits.legacySignature))
            .flatMap { SignatureFile.legacySignature($0) }
        let kept = keptTrust.signatures(of: id, version).flatMap { $0.covers(manifestBytes) ? $0.signatures : nil } ?? []
        return Self.signatureProblem(bundleTrust(), manifestBytes, legacy: legacy, keyed: kept)
    }

    /// A built-in's: only a built-in that revoked keys alone vouch for is reported (it keeps serving; it was checked
    /// against every key the role ever had when it loaded).
    func builtInSignatureProblem(_ bundle: InPlaceBundle) -> CheckProblem.Kind? {
        let legacy = bundle.signatureBytes.flatMap { SignatureFile.legacySignature($0) }
        let kind = Self.signatureProblem(bundleTrust(), bundle.manifestBytes, legacy: legacy, keyed: [])
        return kind == .revoked ? .revoked : nil
    }

    private static func signatureProblem(_ trust: TrustState, _ bytes: [UInt8], legacy: Signature?, keyed: [KeyedSignature]) -> CheckProblem.Kind? {
        do { try trust.judgeBundle(bytes, legacy: legacy, keyed: keyed, as: .installed) } catch {
            return error.tally?.onlyRevoked == true ? .revoked : .signature
        }
        return nil
    }

    /// The trust bundles are judged with: the store's (an anchor and the documents held), or plain keys alone.
    func bundleTrust() -> TrustState { trustState() ?? TrustState(anchor: nil, plainKeys: configuration.trustedKeys) }

    /// A bundle to install judged by the one rule (``TrustState/judgeBundle(_:legacy:keyed:as:)``); a refusal under
    /// plain keys keeps the bundle error of their rule (`unsigned`, `signature mismatch`), under roots it is
    /// ``StoreError/untrustedBundle(id:version:_:)``.
    func judgeBundle(_ reader: BundleReader, keyed: [KeyedSignature]) throws(StoreError) -> BundleJudgement {
        let trust = bundleTrust()
        do { return try trust.judgeBundle(reader.manifestBytes, legacy: reader.signature, keyed: keyed, as: .install) } catch {
            guard trust.anchor != nil else {
                if case .unsigned = error { throw .invalidBundle(.unsigned) }
                throw .invalidBundle(.signatureMismatch)
            }
            throw .untrustedBundle(id: reader.manifest.id.value, version: reader.manifest.version.description, error)
        }
    }
}
