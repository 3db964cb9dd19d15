@testable import SatchelWebKit
import Testing

@Suite("Custom schemes WebKit handles itself are refused before WebKit would raise")
struct CustomSchemeCheckTests {
    @Test("http, https, file, about, data, blob and the like are refused by name; what the platform says it handles too; satchel passes")
    func refused() throws {
        try CustomSchemeCheck.check(["satchel", "shop-offline"])
        for scheme in ["https", "HTTP", "file", "about", "data", "blob", "ws"] {
            #expect(throws: CustomSchemeError(scheme: scheme)) { try CustomSchemeCheck.check(["satchel", scheme]) }
        }
        // A scheme a newer WebKit handles, which only the platform's answer knows.
        #expect(throws: CustomSchemeError(scheme: "webkit-future")) {
            try CustomSchemeCheck.check(["satchel", "webkit-future"]) { $0 == "webkit-future" }
        }
        #expect("\(CustomSchemeError(scheme: "https"))".contains("WebKit handles itself"))
    }
}
