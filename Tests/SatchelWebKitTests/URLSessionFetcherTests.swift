import Foundation
import SatchelCore
import SatchelHTTP
import SatchelTestSupport
@testable import SatchelWebKit
import Testing

/// URLSessionFetcher (FoundationNetworking here, URLSession on Apple platforms) against the local test origin.
@Suite("URLSessionFetcher against a real origin")
struct URLSessionFetcherTests {
    @Test("a body dropped before its end cancels its transfer: the origin sees the client go away, having sent a fraction")
    func droppedBodyCancels() async throws {
        let origin = try await TestOrigin()
        defer { origin.stop() }
        let fetcher = URLSessionFetcher()
        // 1 GiB: were the transfer left running, FoundationNetworking (which cannot suspend a transfer) would buffer it
        // all in this process; the origin would then say "finished".
        let total = 1 << 30
        do {
            let response = try await fetcher.fetchResponse(ResourceRequest(url: origin.base + "/big?n=\(total)"), timeouts: FetchTimeouts())
            guard case .stream(let stream) = response.body else { Issue.record("expected a streamed body"); return }
            var iterator = stream.makeAsyncIterator()
            _ = try await iterator.next()
            // The consumer lets go here, as the scheme task driver does when WebKit stops a task: no cancellation, no
            // end, just the body and its iterator dropped.
        }
        var events: [String] = []
        let deadline = ContinuousClock.now + .seconds(300)
        while !events.contains(where: { $0.hasPrefix("big: client went away") || $0 == "big: finished" }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            events = try await origin.events()
        }
        let sent = events.compactMap { $0.hasPrefix("big: client went away after ") ? Int($0.split(separator: " ").dropLast().last ?? "") : nil }.first
        #expect(sent != nil, "the transfer ran on: \(events)")
        #expect((sent ?? total) < total / 4, "the origin sent \(sent ?? total) of \(total) bytes before the client went away")
    }
}
