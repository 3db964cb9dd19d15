import Foundation
import SatchelCore
import SatchelHTTP
import SatchelTestSupport
@testable import SatchelWebKit
import Testing

/// URLSessionFetcher (FoundationNetworking here, URLSession on Apple platforms) against the local test origin.
@Suite("URLSessionFetcher against a real origin")
struct URLSessionFetcherTests {
    @Test("a body dropped before its end cancels its transfer: the origin sees the client go away")
    func droppedBodyCancels() async throws {
        let origin = try await TestOrigin()
        defer { origin.stop() }
        let fetcher = URLSessionFetcher()
        // Ten bytes every 50 ms for ten minutes: a transfer left running goes on long past the wait below, using next to
        // no memory (FoundationNetworking cannot suspend a transfer: a fast body would be buffered whole).
        do {
            let response = try await fetcher.fetchResponse(ResourceRequest(url: origin.base + "/hang?seconds=600"), timeouts: FetchTimeouts())
            guard case .stream(let stream) = response.body else { Issue.record("expected a streamed body"); return }
            var iterator = stream.makeAsyncIterator()
            _ = try await iterator.next()
            // The consumer lets go here, as the scheme task driver does when WebKit stops a task: no cancellation, no
            // end, just the body and its iterator dropped.
        }
        // A bound on a hang, not a speed goal: the cancelled transfer closes its connection at once.
        let wentAway = try await origin.sawEvent("hang: client went away", within: 120)
        let events = try await origin.events()
        #expect(wentAway, "the transfer ran on: \(events)")
    }
}
