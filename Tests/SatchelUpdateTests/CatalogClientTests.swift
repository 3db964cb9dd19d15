import Foundation
import SatchelCore
import SatchelHTTP
import SatchelTestSupport
import Testing
@testable import SatchelUpdate

/// `CatalogClient` around the acceptance machine: what it fetches for each mode, absence as one rule, the refetch of a
/// catalog whose signature a CDN refreshed out of step, and the words `satchel update` keeps.
@Suite("CatalogClient: fetching for the one acceptance path")
struct CatalogClientTests {
    let base = "https://cdn.example/"
    var url: String { base + "catalog.json" }
    let root = SigningKey.generate()
    let catalogKey = SigningKey.generate()
    static let now = Timestamp(secondsSinceEpoch: 1_800_000_000)

    func v1() throws -> TrustDocument {
        try TrustDocument(version: 1, expires: Timestamp(secondsSinceEpoch: 2_000_000_000), roles: [
            .root: RoleDefinition(keys: [root.verifyingKey], threshold: 1),
            .catalog: RoleDefinition(keys: [catalogKey.verifyingKey], threshold: 1),
            .bundles: RoleDefinition(keys: [root.verifyingKey], threshold: 1),
        ]).signed(by: root)
    }

    /// The two modes trusting the same catalog key; roots already hold version 1.
    func modes() throws -> [(plainKeys: Bool, trust: TrustState)] {
        var roots = TrustState(anchor: try TrustAnchor(rootKeys: [root.verifyingKey]))
        try roots.accept(try v1())
        return [(true, TrustState(anchor: nil, plainKeys: [catalogKey.verifyingKey])), (false, roots)]
    }

    func publish(_ origin: FakeOrigin, serial: Int64 = 7, signer: SigningKey?) throws -> [UInt8] {
        let bytes = try Catalog(expires: Timestamp(secondsSinceEpoch: 2_000_000_000), packages: [], serial: serial, trust: 1).canonicalBytes
        origin.put(url, bytes)
        if let signer { origin.put(url + ".sig", Array(try signer.signature(for: bytes).base64.utf8)) }
        return bytes
    }

    func client(_ origin: FakeOrigin, _ folder: String, attempts: Int = 3) -> CatalogClient {
        CatalogClient(fetcher: origin, cacheFolder: folder, retry: RetryPolicy(attempts: attempts, initialDelay: .milliseconds(1), maxDelay: .milliseconds(1)))
    }

    @Test("a missing signature answered 403, 404 or 410 is absent in both modes: unsigned under plain keys, the threshold under roots; a 500 is the network's")
    func absence() async throws {
        try await withTemporaryFolder { folder async throws in
            for (plainKeys, trust) in try modes() {
                for status in [403, 404, 410, 500] {
                    let origin = FakeOrigin()
                    _ = try publish(origin, signer: nil)
                    origin.answer(url + ".sig", status: status)
                    do {
                        _ = try await client(origin, folder).fetch(url, trust: trust, floor: nil, production: url, now: Self.now)
                        Issue.record("accepted a catalog with no signature (\(status))")
                    } catch let failure {
                        let error = failure as? UpdateError
                        let expected: Bool
                        if status == 500 {
                            expected = error == .httpStatus(url: url + ".sig", status: 500)
                        } else if plainKeys {
                            expected = error == .catalogUnsigned(url: url)
                        } else if case .trust(let at, .threshold)? = error {
                            expected = at == url
                        } else {
                            expected = false
                        }
                        #expect(expected, "\(status), plain keys \(plainKeys): \(error)")
                    }
                    // Plain keys never ask for .sigs; roots do.
                    #expect(origin.requests.contains { $0.url.hasSuffix(".sigs") } == (!plainKeys && status != 500))
                }
            }
        }
    }

    @Test("a .sig for other bytes, then the right one: the client fetches the catalog again and accepts it, in both modes")
    func staleThenRight() async throws {
        try await withTemporaryFolder { folder async throws in
            for (plainKeys, trust) in try modes() {
                let origin = FakeOrigin()
                let bytes = try publish(origin, signer: nil)
                origin.put(url + ".sig", Array(try catalogKey.signature(for: bytes + [0x20]).base64.utf8))
                // The CDN refreshes the signature right after the first request for it.
                origin.put(url + ".sig", afterNext: Array(try catalogKey.signature(for: bytes).base64.utf8))
                let fetched = try await client(origin, folder).fetch(url, trust: trust, floor: nil, production: url, now: Self.now)
                #expect(fetched.signed && fetched.catalog.serial == 7, "plain keys \(plainKeys)")
                #expect(origin.requests.filter { $0.url == url + ".sig" }.count == 2)
                // With one attempt, the stale signature is the answer.
                let once = FakeOrigin()
                let again = try publish(once, signer: nil)
                once.put(url + ".sig", Array(try catalogKey.signature(for: again + [0x20]).base64.utf8))
                await #expect(throws: UpdateError.self) {
                    try await client(once, folder + "/once", attempts: 1).fetch(url, trust: trust, floor: nil, production: url, now: Self.now)
                }
            }
        }
    }

    @Test("a replayed serial is refused by the client with the updater's words, the same in both modes")
    func replay() async throws {
        try await withTemporaryFolder { folder async throws in
            for (_, trust) in try modes() {
                let origin = FakeOrigin()
                _ = try publish(origin, serial: 5, signer: catalogKey)
                await #expect(throws: UpdateError.catalogReplayed(url: url, serial: 5, last: 6)) {
                    try await client(origin, folder).fetch(url, trust: trust, floor: SerialFloor(serial: 6, trustVersion: nil), production: url, now: Self.now)
                }
            }
        }
    }
}
