import Foundation
@testable import SatchelWebKit
import Testing

@Suite("A request body WebKit delivered: httpBody, or httpBodyStream read to its end")
struct DeliveredBodyTests {
    @Test("httpBody as it is; a stream read whole across many reads; neither is nil; past the limit is refused")
    func read() throws {
        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        #expect(try DeliveredBody.read(body: Data(bytes), stream: nil) == bytes)
        #expect(try DeliveredBody.read(body: nil, stream: InputStream(data: Data(bytes))) == bytes)
        #expect(try DeliveredBody.read(body: nil, stream: InputStream(data: Data())) == [])
        #expect(try DeliveredBody.read(body: nil, stream: nil) == nil)
        // httpBody wins when WebKit set both (Foundation keeps them exclusive; the check is ours to be sure).
        #expect(try DeliveredBody.read(body: Data([1, 2]), stream: InputStream(data: Data(bytes))) == [1, 2])
        #expect(throws: DeliveredBody.Failure.tooLarge(limit: 1000)) { try DeliveredBody.read(body: nil, stream: InputStream(data: Data(bytes)), limit: 1000) }
        #expect(throws: DeliveredBody.Failure.tooLarge(limit: 10)) { try DeliveredBody.read(body: Data(bytes), stream: nil, limit: 10) }
    }
}
