// Trust documents and signature files: no crash; what is accepted is exactly its canonical bytes; and the chain
// accepts a document only when both root thresholds hold. An input with a newline is two documents (canonical JSON
// has no raw newline): the first is the version a device holds, the second the next one it is offered. An input that
// starts with 0xF0 is a sequence of updates instead (Sequences.swift).
import FuzzDriver
import SatchelCore

@_cdecl("trust_main")
public func entry(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 { FuzzDriver.run(argc, argv, fuzz) }

public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if bytes.first == 0xF0 {
        fuzzSequence(Array(bytes.dropFirst()))
        return 0
    }
    if let file = try? SignatureFile.decode(bytes) {
        require(file.canonicalBytes == bytes, "a signature file was accepted in other than its canonical bytes")
    }
    let parts = bytes.split(separator: 0x0A, maxSplits: 1, omittingEmptySubsequences: false).map(Array.init)
    guard let held = try? TrustDocument.decode(parts[0]) else { return 0 }
    require(held.canonicalBytes == parts[0], "a trust document was accepted in other than its canonical bytes")
    require((try? TrustDocument.decode(held.canonicalBytes)) == held, "a trust document changed through its canonical bytes")
    let anchor = TrustAnchor(document: held)
    var state = TrustState(anchor: anchor)
    let accepted = (try? state.accept(held)) != nil
    require(accepted == held.rootTally(previous: anchor.signers).isComplete, "accept and the root tally disagree on the held version")
    guard accepted, parts.count == 2 else { return 0 }
    let step = try? state.accept(parts[1])
    if step != nil, let next = state.newest {
        require(next.version == held.version + 1, "accepted a version that is not the next one")
        require(next.rootTally(previous: held.signers(.root)).isComplete, "accepted a version short of a root threshold")
    }
    for role in TrustRole.allCases {
        let signers = state.signers(for: role)
        require(Set(signers.keys.keys).isDisjoint(with: signers.revoked.keys), "a key both trusted and revoked for \(role)")
        _ = signers.tally(parts[parts.count - 1], signatures: held.signatures)
    }
    return 0
}
