@testable import SatchelEngine
import Testing

@Suite("How every host names what answered (AnswerLabel)")
struct AnswerLabelTests {
    @Test("a loader's outcome and the answer's status give one label, spelled as the log, the status page and status.json show it")
    func labels() {
        let table: [(ResourceLoader.Outcome, Int, String)] = [
            (.package, 200, "offline-hit"), (.package, 304, "not-modified"), (.package, 206, "range"), (.package, 404, "error"),
            (.network, 200, "network"), (.network, 502, "network"), (.packageAfterNetworkFailure, 200, "package-after-network-failure"),
            (.offlinePage, 503, "offline-page"), (.error, 504, "error"), (.refused, 403, "refused"),
        ]
        for (outcome, status, label) in table {
            #expect(AnswerLabel(outcome, status: status).rawValue == label, "\(outcome) \(status)")
        }
        #expect(AnswerLabel.endpoint.rawValue == "satchel" && AnswerLabel.published.rawValue == "published")
        #expect(Set(AnswerLabel.allCases.map(\.rawValue)).count == AnswerLabel.allCases.count)
    }
}
