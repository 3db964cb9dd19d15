import Foundation
import Testing
@testable import SatchelCore

/// Builders shared by the manifest tests.
enum Fixture {
    static let hello = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"  // sha256("hello\n")
    static let body = "7c98040a541657584690ae2a1cc3b42a8b53b159cc60c5d3abbfecbaeac6c94a"  // sha256("body{}")
    static let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"  // sha256("")

    static func record(_ path: String, _ sha: String = hello, size: Int64 = 6) -> FileRecord {
        FileRecord(path: try! SafePath(validating: path), size: size, sha256: sha, mime: MIMETable.entry(for: try! SafePath(validating: path)).type)
    }

    static func manifest(files: [FileRecord]? = nil, offlinePage: String? = nil, routes: [Route] = []) throws -> Manifest {
        try Manifest(
            id: PackageID("shop"), version: SemanticVersion("1.4.0"),
            createdAt: Timestamp(secondsSinceEpoch: 1_700_000_000),
            scope: Scope(hosts: [HostPattern("m.shop.com"), HostPattern("*.shop.dev")], pathPrefix: PathPrefix("/app/")),
            spaFallback: true, offlinePage: offlinePage.map { try! SafePath(validating: $0) }, routes: routes,
            minRuntime: SemanticVersion("2.1.0"),
            files: files ?? [record("index.html"), record("css/app.css", body, size: 6), record("offline.html")])
    }

    static func json(_ manifest: Manifest) -> [String: Any] {
        try! JSONSerialization.jsonObject(with: Data(manifest.canonicalBytes)) as! [String: Any]
    }

    static func bytes(_ object: [String: Any]) -> [UInt8] {
        Array(try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
    }
}

@Suite("Manifest model, rules and canonical form")
struct ManifestTests {
    @Test("contentHash matches a vector computed outside Satchel")
    func contentHashVector() throws {
        // python3: sha256("".join(f"{p}:{h}\n" for p, h in sorted(files, key=lambda f: f[0].encode())))
        let files: [(path: SafePath, sha256: String)] = [
            (try SafePath(validating: "index.html"), Fixture.hello),
            (try SafePath(validating: "css/app.css"), Fixture.body),
            (try SafePath(validating: "café/empty.txt"), Fixture.empty),
            (try SafePath(validating: "Z.txt"), Fixture.hello),
        ]
        #expect(Digests.contentHash(of: files) == "32347cf1738bb44bcf169e7d2020f91afef28ece61ae5cd61a923288e94d7768")
        #expect(Digests.contentHash(of: files.reversed()) == Digests.contentHash(of: files))
        #expect(Digests.sha256Hex(Array("hello\n".utf8)) == Fixture.hello)
    }

    @Test("canonical bytes: sorted keys, no whitespace, optional fields omitted")
    func canonicalBytes() throws {
        let manifest = try Fixture.manifest(files: [Fixture.record("index.html")])
        let text = String(decoding: manifest.canonicalBytes, as: UTF8.self)
        let expected = #"{"contentHash":"\#(Digests.contentHash(of: [(try SafePath(validating: "index.html"), Fixture.hello)]))","createdAt":"2023-11-14T22:13:20Z","entry":"index.html","files":[{"mime":"text/html","path":"index.html","sha256":"\#(Fixture.hello)","size":6}],"id":"shop","minRuntime":"2.1.0","routes":[],"schema":1,"scope":{"hosts":["m.shop.com","*.shop.dev"],"pathPrefix":"/app/"},"spaFallback":true,"version":"1.4.0"}"#
        #expect(text == expected)
    }

    @Test("decode(canonicalBytes) round-trips")
    func roundTrip() throws {
        let manifest = try Fixture.manifest(offlinePage: "offline.html", routes: [Route(prefix: "/app/api/", strategy: .networkFirst, timeoutMs: 2500)])
        let decoded = try Manifest.decode(manifest.canonicalBytes)
        #expect(decoded == manifest)
        #expect(decoded.canonicalBytes == manifest.canonicalBytes)
        #expect(decoded.file(at: try SafePath(validating: "css/app.css"))?.sha256 == Fixture.body)
        #expect(decoded.file(at: try SafePath(validating: "missing.css")) == nil)
    }

    @Test("files are sorted by UTF-8 bytes whatever order they are given in")
    func sortsFiles() throws {
        let manifest = try Fixture.manifest(files: [Fixture.record("b.js"), Fixture.record("index.html"), Fixture.record("C.js"), Fixture.record("a/z.js")])
        #expect(manifest.files.map(\.path.value) == ["C.js", "a/z.js", "b.js", "index.html"])
    }

    @Test("non-canonical bytes are refused even when the content is valid")
    func refusesNonCanonical() throws {
        let manifest = try Fixture.manifest()
        let pretty = Array(try JSONSerialization.data(withJSONObject: Fixture.json(manifest), options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]))
        #expect(throws: ManifestError.notCanonical) { try Manifest.decode(pretty) }
        #expect(try Manifest.decode(pretty, requireCanonical: false) == manifest)
    }

    @Test("every rule is enforced with a named error")
    func rules() throws {
        let manifest = try Fixture.manifest()
        func mutated(_ change: (inout [String: Any]) -> Void) -> [UInt8] {
            var object = Fixture.json(manifest)
            change(&object)
            return Fixture.bytes(object)
        }
        func files(_ object: inout [String: Any], _ change: (inout [[String: Any]]) -> Void) {
            var list = object["files"] as! [[String: Any]]
            change(&list)
            object["files"] = list
        }
        #expect(throws: ManifestError.unsupportedSchema(2)) { try Manifest.decode(mutated { $0["schema"] = 2 }) }
        #expect(throws: ManifestError.missingField("contentHash")) { try Manifest.decode(mutated { $0["contentHash"] = nil }) }
        #expect(throws: ManifestError.self) { try Manifest.decode(mutated { $0["id"] = "Bad Id" }) }
        #expect(throws: ManifestError.self) { try Manifest.decode(mutated { $0["version"] = "1.0" }) }
        #expect(throws: ManifestError.self) { try Manifest.decode(mutated { $0["createdAt"] = "yesterday" }) }
        #expect(throws: ManifestError.entryMissing("nope.html")) { try Manifest.decode(mutated { $0["entry"] = "nope.html" }) }
        #expect(throws: ManifestError.offlinePageMissing("gone.html")) { try Manifest.decode(mutated { $0["offlinePage"] = "gone.html" }) }
        #expect(throws: ManifestError.unsafePath(SafePathError(path: "../x", reason: .dotSegment))) {
            try Manifest.decode(mutated { files(&$0) { $0[0]["path"] = "../x" } })
        }
        #expect(throws: ManifestError.filesNotSorted("css/app.css")) {
            try Manifest.decode(mutated { files(&$0) { $0.swapAt(0, 1) } })
        }
        #expect(throws: ManifestError.duplicatePath("index.html")) {
            try Manifest.decode(mutated { files(&$0) { $0.insert($0[1], at: 1) } })
        }
        #expect(throws: ManifestError.self) { try Manifest.decode(mutated { files(&$0) { $0[0]["sha256"] = String(repeating: "A", count: 64) } }) }
        #expect(throws: ManifestError.self) { try Manifest.decode(mutated { files(&$0) { $0[0]["size"] = -1 } }) }
        for mime in ["nonsense", "/html", "text/", "a/b/c", "text/html; charset=utf-8", "text /html", "text/h\u{E9}"] {
            #expect(throws: ManifestError.self, "\(mime)") { try Manifest.decode(mutated { files(&$0) { $0[0]["mime"] = mime } }) }
        }
        #expect(throws: ManifestError.self) { try Manifest.decode(mutated { $0["contentHash"] = String(repeating: "0", count: 64) }) }
        #expect(throws: ManifestError.malformed("not valid JSON")) { try Manifest.decode(Array("{not json".utf8)) }
    }

    @Test("a manifest of a newer format is refused by name: its schema, or the field this reader does not know")
    func newerFormats() throws {
        let manifest = try Fixture.manifest(routes: [Route(prefix: "/api/", strategy: .networkFirst, timeoutMs: 2500)])
        func mutated(_ change: (inout [String: Any]) -> Void) -> [UInt8] {
            var object = Fixture.json(manifest)
            change(&object)
            return Fixture.bytes(object)
        }
        // A schema 2 document whose fields are not schema 1's is a schema problem, not a missing field.
        #expect(throws: ManifestError.unsupportedSchema(2)) {
            try Manifest.decode(mutated { $0["schema"] = 2; $0["files"] = nil; $0["objects"] = ["x"] })
        }
        #expect(throws: ManifestError.unknownField("signedBy")) { try Manifest.decode(mutated { $0["signedBy"] = "ci" }) }
        #expect(throws: ManifestError.unknownField("routes[0].cache")) {
            try Manifest.decode(mutated { object in
                var routes = object["routes"] as! [[String: Any]]
                routes[0]["cache"] = "return-cache-else-load"
                object["routes"] = routes
            })
        }
        #expect(throws: ManifestError.unknownField("files[1].encoding")) {
            try Manifest.decode(mutated { object in
                var files = object["files"] as! [[String: Any]]
                files[1]["encoding"] = "br"
                object["files"] = files
            })
        }
        // An optional field written as null is a canonical-form problem, not an unknown field.
        #expect(throws: ManifestError.notCanonical) { try Manifest.decode(mutated { $0["minRuntime"] = NSNull() }) }
    }

    @Test("names that collide, shadow folders or are reserved are refused")
    func pathConflicts() throws {
        #expect(throws: ManifestError.pathCollision("INDEX.html", "index.html")) {
            try Fixture.manifest(files: [Fixture.record("index.html"), Fixture.record("INDEX.html")])
        }
        #expect(throws: ManifestError.fileShadowsFolder("css")) {
            try Fixture.manifest(files: [Fixture.record("index.html"), Fixture.record("css"), Fixture.record("css/app.css")])
        }
        #expect(throws: ManifestError.reservedPath("satchel.json")) {
            try Fixture.manifest(files: [Fixture.record("index.html"), Fixture.record("satchel.json")])
        }
        #expect(throws: ManifestError.noFiles) { try Fixture.manifest(files: []) }
        // Reserved only at the root: a nested folder may hold a file of that name.
        _ = try Fixture.manifest(files: [Fixture.record("index.html"), Fixture.record("docs/satchel.json")])
    }
}

@Suite("Canonical JSON")
struct CanonicalJSONTests {
    @Test("keys sort by UTF-8 bytes and strings escape only what JSON requires")
    func escaping() {
        let value = CanonicalJSON.object([
            "b": .string("quote\" slash/ back\\ tab\t nl\n cr\r bell\u{7} é 名 😀"),
            "a": .array([.integer(-5), .bool(true), .bool(false), .object([:])]),
            "B": .integer(0),
        ])
        let text = String(decoding: value.bytes, as: UTF8.self)
        #expect(text == #"{"B":0,"a":[-5,true,false,{}],"b":"quote\" slash/ back\\ tab\t nl\n cr\r bell\u0007 é 名 😀"}"#)
    }
}

@Suite("Ed25519 signatures over manifest bytes")
struct SigningTests {
    @Test("a signature verifies with its key and no other, and only for the signed bytes")
    func signAndVerify() throws {
        let key = SigningKey.generate()
        let message = Array("satchel".utf8)
        let signature = try key.signature(for: message)
        #expect(signature.bytes.count == 64)
        #expect(key.verifyingKey.isValid(signature, for: message))
        #expect(!key.verifyingKey.isValid(signature, for: Array("satcheL".utf8)))
        #expect(!SigningKey.generate().verifyingKey.isValid(signature, for: message))
    }

    @Test("keys and signatures survive their base64 text forms, with editor whitespace")
    func encodings() throws {
        let key = SigningKey.generate()
        #expect(Data(base64Encoded: key.base64)?.count == 32)
        #expect(Data(base64Encoded: key.verifyingKey.base64)?.count == 32)
        let reloaded = try SigningKey(base64: key.base64 + "\n")
        #expect(reloaded.verifyingKey == key.verifyingKey)
        #expect(try VerifyingKey(base64: " " + key.verifyingKey.base64 + "\n") == key.verifyingKey)
        let signature = try key.signature(for: [1, 2, 3])
        #expect(signature.base64.count == 88)
        #expect(try Signature(base64: signature.base64) == signature)
    }

    @Test("malformed key material is refused", arguments: ["", "not base64!", "AAAA", Data(count: 31).base64EncodedString()])
    func malformed(_ text: String) {
        #expect(throws: KeyError.self) { try SigningKey(base64: text) }
        #expect(throws: KeyError.self) { try VerifyingKey(base64: text) }
        #expect(throws: KeyError.self) { try Signature(base64: text) }
    }

    @Test("a known RFC 8032 test vector (TEST 1) signs to the published signature")
    func rfc8032() throws {
        let secret = Data(hex: "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
        let key = try SigningKey(base64: secret.base64EncodedString())
        #expect(Data(base64Encoded: key.verifyingKey.base64) == Data(hex: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"))
        let signature = try key.signature(for: [])
        #expect(Data(signature.bytes) == Data(hex: "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"))
    }
}

extension Data {
    init(hex: String) {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        self.init(bytes)
    }
}

@Suite("Cache policies in the manifest and on requests")
struct CachePolicyFieldTests {
    func manifest(_ policies: [CacheRoute], minRuntime: String?) throws -> Manifest {
        try Manifest(
            id: PackageID("shop"), version: SemanticVersion("1.0.0"), createdAt: Timestamp(secondsSinceEpoch: 1_700_000_000),
            scope: Scope(hosts: [HostPattern("m.shop.com")]), cachePolicies: policies, minRuntime: try minRuntime.map(SemanticVersion.init),
            files: [Fixture.record("index.html")])
    }

    @Test("cachePolicies round-trip in canonical form, omitted when empty")
    func roundTrip() throws {
        let policies = [try CacheRoute(parsing: "/api/=stale-while-revalidate:600"), try CacheRoute(parsing: "/img/=return-cache-else-load")]
        let withPolicies = try manifest(policies, minRuntime: "0.2.0")
        let text = String(decoding: withPolicies.canonicalBytes, as: UTF8.self)
        #expect(text.contains(#""cachePolicies":[{"maxAge":600,"policy":"stale-while-revalidate","prefix":"/api/"},{"policy":"return-cache-else-load","prefix":"/img/"}]"#))
        #expect(try Manifest.decode(withPolicies.canonicalBytes) == withPolicies)
        #expect(!String(decoding: try manifest([], minRuntime: nil).canonicalBytes, as: UTF8.self).contains("cachePolicies"))
    }

    @Test("a manifest with cachePolicies needs minRuntime 0.2.0 or newer; a prefix once; a max age only for cache-first policies")
    func rules() throws {
        let route = try CacheRoute(parsing: "/api/=return-cache-dont-load")
        #expect(throws: ManifestError.self) { try manifest([route], minRuntime: nil) }
        #expect(throws: ManifestError.self) { try manifest([route], minRuntime: "0.1.9") }
        #expect(throws: ManifestError.self) { try manifest([route, route], minRuntime: "0.2.0") }
        #expect(throws: FieldError.self) { try CacheRoute(parsing: "/api/=reload-revalidating:60") }
        #expect(throws: FieldError.self) { try CacheRoute(parsing: "api/=use-protocol-policy") }
        #expect(throws: FieldError.self) { try CacheRoute(parsing: "/api/=return-cache-else-load:soon") }
        #expect(throws: FieldError.self) { try CacheRoute(parsing: "/api/") }
        #expect((try? manifest([route], minRuntime: "0.3.0")) != nil)
    }

    @Test("the request form: case-insensitive names, an optional max age, clear errors")
    func requestForm() throws {
        #expect(try RequestCachePolicy(parsing: "RETURN-CACHE-ELSE-LOAD:30") == RequestCachePolicy(policy: .returnCacheElseLoad, maxAge: 30))
        #expect(try RequestCachePolicy(parsing: "reload-revalidating").maxAge == nil)
        #expect(throws: FieldError.self) { try RequestCachePolicy(parsing: "offline") }
        #expect(throws: FieldError.self) { try RequestCachePolicy(parsing: "stale-while-revalidate:-1") }
        #expect(throws: FieldError.self) { try RequestCachePolicy(parsing: "stale-while-revalidate:999999999") }
        #expect(CacheRoute.matching("/api/v2/x", in: [try CacheRoute(parsing: "/api/=use-protocol-policy"), try CacheRoute(parsing: "/api/v2/=reload-ignoring-cache")])?.policy == .reloadIgnoringCache)
    }
}
