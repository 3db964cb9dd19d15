import SatchelCore
@testable import SatchelWebKit
import Testing

@Suite("SameSite through Foundation's HTTPCookie, as Apple documents it")
struct FoundationSameSiteTests {
    @Test("None is written as no policy and no policy reads back as None (sent cross-site); Strict and Lax round-trip; no attribute is Lax")
    func bothWays() {
        #expect(FoundationSameSite.policy(for: .none) == .absent)
        #expect(FoundationSameSite.sameSite(for: .absent) == .none, "the adapter read no policy as Lax, withholding SameSite=None cookies cross-site")
        for sameSite in [Cookie.SameSite.strict, .lax, .none] {
            #expect(FoundationSameSite.sameSite(for: FoundationSameSite.policy(for: sameSite)) == sameSite)
        }
        #expect(FoundationSameSite.policy(for: .unspecified) == .lax)
    }
}
