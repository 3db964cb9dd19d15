// The acceptance machine driven by random sequences of documents (issue 49): an input that starts with 0xF0 is a
// program over a fixed pool of keys, trust documents, catalogs and signature files. Each step offers a device one
// update (a catalog, its signature files, and for each trust version the walk asks for, one document of the pool or
// none); the device keeps what is accepted. Checked after every step: no crash; the machine decides the same twice;
// the state changes only on acceptance; the trust version held never decreases and the documents kept are consecutive;
// a serial below the floor is accepted only when a catalog key of the floor's version was dropped; no expired catalog
// is accepted, nor one unchecked under a trust version; what the device keeps walks again to the same state.
import FuzzDriver
import SatchelCore

/// Keys made from fixed bytes, so that a crash found reproduces from its input alone.
private func key(_ seed: UInt8) -> SigningKey {
    let raw = [UInt8](repeating: seed, count: 32)
    return try! SigningKey(base64: base64(raw))
}

private func base64(_ bytes: [UInt8]) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    var out: [UInt8] = []
    var index = 0
    while index < bytes.count {
        let chunk = Array(bytes[index..<min(index + 3, bytes.count)])
        let value = chunk.enumerated().reduce(0) { $0 | Int($1.element) << (16 - 8 * $1.offset) }
        for position in 0..<4 {
            out.append(position <= chunk.count ? alphabet[(value >> (18 - 6 * position)) & 63] : UInt8(ascii: "="))
        }
        index += 3
    }
    return String(decoding: out, as: UTF8.self)
}

/// What every program draws from.
private struct Pool {
    let roots = [key(1), key(2), key(3)]
    let catalogKeys = [key(11), key(12)]
    let stranger = key(99)
    let later = Timestamp(secondsSinceEpoch: 2_000_000_000)
    let now = Timestamp(secondsSinceEpoch: 1_800_000_000)
    /// Trust documents, some that chain and some that do not.
    let documents: [TrustDocument]
    /// Catalogs: every serial, trust version and expiry combination below.
    let catalogs: [Catalog]

    init() {
        let later = Timestamp(secondsSinceEpoch: 2_000_000_000)
        let (r, c) = ([key(1), key(2), key(3)], [key(11), key(12)])
        func document(_ version: Int64, roots: [SigningKey], catalog: [SigningKey], signedBy: [SigningKey], expires: Timestamp? = nil) -> TrustDocument {
            let roles: [TrustRole: RoleDefinition] = [
                .root: RoleDefinition(keys: roots.map(\.verifyingKey), threshold: 1),
                .catalog: RoleDefinition(keys: catalog.map(\.verifyingKey), threshold: 1),
                .bundles: RoleDefinition(keys: [roots[0].verifyingKey], threshold: 1),
            ]
            return try! TrustDocument(version: version, expires: expires ?? later, roles: roles).signed(by: signedBy)
        }
        documents = [
            document(1, roots: [r[0]], catalog: [c[0]], signedBy: [r[0]]),
            document(2, roots: [r[0]], catalog: [c[1]], signedBy: [r[0]]),  // drops catalog key 0
            document(2, roots: [r[1]], catalog: [c[0]], signedBy: [r[0], r[1]]),  // a root rotation
            document(2, roots: [r[1]], catalog: [c[0]], signedBy: [r[1]]),  // not signed by the previous roots
            document(3, roots: [r[0]], catalog: [c[0], c[1]], signedBy: [r[0]]),
            document(3, roots: [r[1]], catalog: [c[1]], signedBy: [r[1]]),
            document(3, roots: [r[2]], catalog: [c[0]], signedBy: [r[1], r[2]], expires: Timestamp(secondsSinceEpoch: 1_700_000_000)),
            document(4, roots: [r[0]], catalog: [c[0]], signedBy: [r[0]]),
        ]
        var catalogs: [Catalog] = []
        for serial: Int64 in [1, 5, 10, 1_000_000] {
            for trust: Int64? in [nil, 1, 2, 3, 4] {
                for expires in [later, Timestamp(secondsSinceEpoch: 1_700_000_000)] {
                    catalogs.append(try! Catalog(expires: expires, packages: [], serial: serial, trust: trust))
                }
            }
        }
        self.catalogs = catalogs
        // Signed once here: signing in every step would leave the fuzzer a few runs a second under AddressSanitizer.
        signatureFiles = catalogs.map { catalog in
            let bytes = catalog.canonicalBytes
            let legacy: [FetchedDocument] = [403, 404, 410].map { FetchedDocument.absent(status: $0) }
                + (c + [key(99)]).map { FetchedDocument.present(Array(try! $0.signature(for: bytes).base64.utf8)) }
                + [.present(Array(try! c[0].signature(for: bytes + [0x20]).base64.utf8)), .present(Array("not a signature".utf8))]
            let keyed: [FetchedDocument] = [
                .absent(status: 404),
                .present((try! SignatureFile(for: bytes).adding(c[0], over: bytes)).canonicalBytes),
                .present((try! SignatureFile(for: bytes).adding(c[1], over: bytes).adding(c[0], over: bytes)).canonicalBytes),
                .present((try! SignatureFile(for: bytes + [1]).adding(c[1], over: bytes + [1])).canonicalBytes),  // made for other bytes
                .present(Array("{\"sha256\":1}".utf8)),
            ]
            return (legacy, keyed)
        }
    }

    /// Per catalog: its `.sig` answers (absent as 403, 404, 410; by each catalog key and a stranger; over other bytes;
    /// not a signature) and its `.sigs` answers (absent; by one key; by both; made for other bytes; not a signature file).
    let signatureFiles: [(legacy: [FetchedDocument], keyed: [FetchedDocument])]
}

private let pool = Pool()

/// Runs the program in `ops` (the input after its 0xF0).
func fuzzSequence(_ ops: [UInt8]) {
    // The first op picks the device: roots of version 1's, with or without the plain catalog key, or plain keys.
    let mode = (ops.first ?? 0) % 3
    let anchor = try! TrustAnchor(rootKeys: [pool.roots[0].verifyingKey])
    var state = mode == 2
        ? TrustState(anchor: nil, plainKeys: [pool.catalogKeys[0].verifyingKey])
        : TrustState(anchor: anchor, plainKeys: mode == 1 ? [pool.catalogKeys[0].verifyingKey] : [])
    var floor: SerialFloor?
    var kept: [[UInt8]] = []
    // At most 64 bytes of program (a dozen updates or more): each update verifies signatures, and a program as long as
    // libFuzzer's inputs would leave it a few runs a second.
    var cursor = ops.dropFirst().prefix(64).makeIterator()
    func next() -> UInt8? { cursor.next() }
    while let pick = next() {
        let index = Int(pick) % pool.catalogs.count
        let bytes = pool.catalogs[index].canonicalBytes
        let signatureFiles = pool.signatureFiles[index]
        let before = (version: state.version, documents: state.documents, floor: floor)
        let result: Result<AcceptedCatalog, CatalogRefusal>
        do {
            var acceptance = try CatalogAcceptance(catalog: bytes, trust: state, floor: floor)
            decide: while true {
                switch acceptance.next {
                case .trustDocument(let version):
                    let choice = next() ?? 0
                    let candidates = pool.documents.filter { $0.version == version }
                    let fetched: FetchedDocument = choice % 4 == 3 || candidates.isEmpty
                        ? .absent(status: 404)
                        : .present(candidates[Int(choice) % candidates.count].canonicalBytes)
                    try acceptance.receiveTrustDocument(fetched)
                case .signatures(let withKeyed):
                    let choice = next() ?? 0
                    let legacy = signatureFiles.legacy[Int(choice) % signatureFiles.legacy.count]
                    let keyed = signatureFiles.keyed[Int(choice / 8) % signatureFiles.keyed.count]
                    acceptance.receiveSignatures(legacy: legacy, keyed: withKeyed ? keyed : nil)
                case .decide:
                    let first = Result<AcceptedCatalog, CatalogRefusal>(catching: { () throws(CatalogRefusal) in try acceptance.decide(at: pool.now) })
                    let again = Result<AcceptedCatalog, CatalogRefusal>(catching: { () throws(CatalogRefusal) in try acceptance.decide(at: pool.now) })
                    require(first.map(\.floor) == again.map(\.floor), "the machine decided differently twice")
                    result = first
                    break decide
                }
            }
        } catch {
            result = .failure(error)
        }
        // The machine holds no state of the device's: what it was given is what the device still has.
        require(state.version == before.version && state.documents == before.documents && floor == before.floor, "a decision changed the device's state")
        guard case .success(let accepted) = result else { continue }
        let reached = accepted.trust
        require(reached.version >= state.version, "the trust version went back")
        require(accepted.newDocuments.map(\.version) == Array(stride(from: state.version + 1, through: reached.version, by: 1)) || state.anchor == nil,
                "the documents to keep are not the versions after the one held, in order")
        if let floor, accepted.catalog.serial < floor.serial {
            require(reached.catalogKeysDropped(since: floor.trustVersion), "a serial below the floor was accepted with no catalog key dropped")
        }
        require(!accepted.catalog.isExpired(at: pool.now), "an expired catalog was accepted")
        if state.anchor != nil, reached.newest != nil {
            let signers = reached.signers(for: .catalog)
            require(accepted.signed && signers.isChecked, "a catalog was accepted unchecked under a trust version")
        }
        state = reached
        floor = accepted.floor
        kept += accepted.newDocuments.map(\.canonicalBytes)
        if let anchor = state.anchor {
            let restored = TrustState.restore(anchor: anchor, plainKeys: state.plainKeys, documents: kept).state
            require(restored.version == state.version, "what the device kept does not walk to the state it held")
        }
    }
}
