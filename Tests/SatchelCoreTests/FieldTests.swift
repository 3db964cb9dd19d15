import Testing
@testable import SatchelCore

@Suite("Package ids, versions, hosts, prefixes, routes, timestamps")
struct FieldTests {
    @Test("package ids follow the grammar", arguments: [
        ("shop", true), ("com.example.shop", true), ("a", true), ("0day", true), ("my_app-2", true),
        ("a.b-c.d_e", true), ("Shop", false), ("-shop", false), ("_shop", false), (".shop", false),
        ("shop.", false), ("a..b", false), ("a/b", false), ("", false), ("sh op", false), ("café", false),
        (String(repeating: "a", count: 64), true), (String(repeating: "a", count: 65), false),
    ])
    func packageIDs(_ raw: String, _ valid: Bool) {
        #expect(((try? PackageID(raw)) != nil) == valid)
    }

    @Test("semantic versions parse per SemVer 2.0", arguments: [
        ("1.0.0", true), ("0.0.1", true), ("10.20.30", true), ("1.0.0-alpha", true), ("1.0.0-alpha.1", true),
        ("1.0.0-0.3.7", true), ("1.0.0-x.7.z.92", true), ("1.0.0+20130313144700", true),
        ("1.0.0-beta+exp.sha.5114f85", true), ("1.0.0-x-y-z.--", true),
        ("1", false), ("1.0", false), ("1.0.0.0", false), ("01.0.0", false), ("1.02.0", false),
        ("1.0.0-01", false), ("1.0.0-", false), ("1.0.0+", false), ("1.0.0-a..b", false), ("v1.0.0", false),
        ("1.0.0-al$pha", false), ("", false), ("1.0.0 ", false),
    ])
    func versions(_ raw: String, _ valid: Bool) {
        let parsed = try? SemanticVersion(raw)
        #expect((parsed != nil) == valid)
        if let parsed { #expect(parsed.description == raw) }
    }

    @Test("precedence follows semver.org section 11")
    func precedence() throws {
        let ordered = try [
            "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11",
            "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0", "10.0.0",
        ].map { try SemanticVersion($0) }
        for (lower, higher) in zip(ordered, ordered.dropFirst()) {
            #expect(lower < higher, "\(lower) < \(higher)")
            #expect(!(higher < lower))
        }
        #expect(try SemanticVersion("1.0.0+a").hasSamePrecedence(as: SemanticVersion("1.0.0+b")))
        #expect(try SemanticVersion("1.0.0+a") != SemanticVersion("1.0.0+b"))
    }

    @Test("hosts are lower-case DNS names with at most a leading wildcard label", arguments: [
        ("m.shop.com", true), ("localhost", true), ("127.0.0.1", true), ("*.shop.com", true), ("xn--caf-dma.com", true),
        ("M.Shop.com", false), ("*.", false), ("a.*.com", false), ("**.a.com", false), ("-a.com", false),
        ("a-.com", false), ("a..com", false), ("a_b.com", false), ("café.com", false), ("", false),
        ("host:8080", false), (String(repeating: "a", count: 64) + ".com", false),
    ])
    func hosts(_ raw: String, _ valid: Bool) {
        #expect(((try? HostPattern(raw)) != nil) == valid)
    }

    @Test("a wildcard claims exactly one label")
    func wildcardMatching() throws {
        let pattern = try HostPattern("*.shop.com")
        #expect(pattern.matches("m.shop.com"))
        #expect(pattern.matches("www.shop.com"))
        #expect(!pattern.matches("shop.com"))
        #expect(!pattern.matches("a.b.shop.com"))
        #expect(!pattern.matches("evilshop.com"))
        #expect(!pattern.matches(".shop.com"))
        #expect(try HostPattern("m.shop.com").matches("m.shop.com"))
        #expect(try !HostPattern("m.shop.com").matches("n.shop.com"))
    }

    @Test("path prefixes start and end with a slash and hold safe segments", arguments: [
        ("/", true), ("/app/", true), ("/a/b/", true), ("/café/", true), ("app/", false), ("/app", false),
        ("//", false), ("/a//b/", false), ("/../", false), ("/a/./", false), ("", false), ("/a\\b/", false),
    ])
    func prefixes(_ raw: String, _ valid: Bool) {
        #expect(((try? PathPrefix(raw)) != nil) == valid)
    }

    @Test("routes parse from the CLI form")
    func routes() throws {
        #expect(try Route(parsing: "/api/=network-first:3000") == Route(prefix: "/api/", strategy: .networkFirst, timeoutMs: 3000))
        #expect(try Route(parsing: "/static/=offline-only") == Route(prefix: "/static/", strategy: .offlineOnly))
        #expect(try Route(parsing: "/=network-only") == Route(prefix: "/", strategy: .networkOnly))
        for bad in ["/api/", "/api/=fastest", "api/=offline-first", "/api/=network-first:soon", "/api/=network-first:0",
                    "/api/=offline-first:100", "/../=offline-first", "/api/=network-first:600001"] {
            #expect(throws: FieldError.self, "\(bad)") { try Route(parsing: bad) }
        }
    }

    @Test("timestamps format and parse as RFC 3339 UTC", arguments: [
        (Int64(0), "1970-01-01T00:00:00Z"), (315_532_800, "1980-01-01T00:00:00Z"),
        (951_782_400, "2000-02-29T00:00:00Z"), (1_700_000_000, "2023-11-14T22:13:20Z"),
        (4_102_444_799, "2099-12-31T23:59:59Z"), (-1, "1969-12-31T23:59:59Z"),
    ])
    func timestamps(_ seconds: Int64, _ text: String) throws {
        #expect(Timestamp(secondsSinceEpoch: seconds).description == text)
        #expect(try Timestamp(rfc3339: text).secondsSinceEpoch == seconds)
    }

    @Test("malformed or impossible timestamps are refused", arguments: [
        "2026-02-30T00:00:00Z", "2026-13-01T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T00:00:00",
        "2026-01-01T00:00:00+01:00", "2026-01-01 00:00:00Z", "2026-01-01T00:00:00.5Z", "", "20260101T000000Z",
    ])
    func badTimestamps(_ text: String) {
        #expect(throws: FieldError.self) { try Timestamp(rfc3339: text) }
    }
}
