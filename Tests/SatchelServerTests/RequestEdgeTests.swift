import NIOCore
import NIOHTTP1
@testable import SatchelServer
import Testing

/// The request edge without sockets: the one parse of target and host, and the connection's state machine.
@Suite("Request edge: target parsing and the connection state machine")
struct RequestEdgeTests {
    static func head(_ method: HTTPMethod = .GET, _ uri: String, _ fields: [(String, String)] = [], version: HTTPVersion = .http1_1) -> HTTPRequestHead {
        HTTPRequestHead(version: version, method: method, uri: uri, headers: HTTPHeaders(fields))
    }

    struct TargetCase: CustomTestStringConvertible, Sendable {
        let label: String
        let method: HTTPMethod
        let uri: String
        let hosts: [String]
        let version: HTTPVersion
        /// nil: refused with 400.
        let expected: (host: String, port: Int?, pathAndQuery: String, absolute: Bool)?
        var testDescription: String { label }
    }

    static let targets: [TargetCase] = [
        TargetCase(label: "origin-form with Host", method: .GET, uri: "/a/b?x=1", hosts: ["M.Shop.Example:8080"], version: .http1_1, expected: ("m.shop.example", 8080, "/a/b?x=1", false)),
        TargetCase(label: "absolute-form wins over Host (RFC 9112 §3.2.2)", method: .GET, uri: "http://docs.example/p?q", hosts: ["m.shop.example"], version: .http1_1, expected: ("docs.example", nil, "/p?q", true)),
        TargetCase(label: "absolute-form with an empty path", method: .GET, uri: "https://docs.example", hosts: ["docs.example"], version: .http1_1, expected: ("docs.example", nil, "/", true)),
        TargetCase(label: "two Host fields", method: .GET, uri: "/", hosts: ["docs.example", "m.shop.example"], version: .http1_1, expected: nil),
        TargetCase(label: "two identical Host fields", method: .GET, uri: "/", hosts: ["docs.example", "docs.example"], version: .http1_1, expected: nil),
        TargetCase(label: "two Host fields with an absolute target", method: .GET, uri: "http://docs.example/", hosts: ["a", "b"], version: .http1_1, expected: nil),
        TargetCase(label: "HTTP/1.1 without Host", method: .GET, uri: "/", hosts: [], version: .http1_1, expected: nil),
        TargetCase(label: "HTTP/1.0 without Host", method: .GET, uri: "/x", hosts: [], version: .http1_0, expected: ("", nil, "/x", false)),
        TargetCase(label: "IPv6 literal with port", method: .GET, uri: "/", hosts: ["[::1]:8080"], version: .http1_1, expected: ("[::1]", 8080, "/", false)),
        TargetCase(label: "Host with a slash", method: .GET, uri: "/", hosts: ["evil.example/x"], version: .http1_1, expected: nil),
        TargetCase(label: "Host with a space", method: .GET, uri: "/", hosts: ["a b"], version: .http1_1, expected: nil),
        TargetCase(label: "port out of range", method: .GET, uri: "/", hosts: ["a.example:70000"], version: .http1_1, expected: nil),
        TargetCase(label: "empty port", method: .GET, uri: "/", hosts: ["a.example:"], version: .http1_1, expected: nil),
        TargetCase(label: "CONNECT authority-form", method: .CONNECT, uri: "api.example:443", hosts: ["api.example:443"], version: .http1_1, expected: ("api.example", 443, "", false)),
        TargetCase(label: "CONNECT without a port", method: .CONNECT, uri: "api.example", hosts: [], version: .http1_1, expected: nil),
        TargetCase(label: "OPTIONS *", method: .OPTIONS, uri: "*", hosts: ["a.example"], version: .http1_1, expected: ("a.example", nil, "", false)),
        TargetCase(label: "GET *", method: .GET, uri: "*", hosts: ["a.example"], version: .http1_1, expected: nil),
        TargetCase(label: "a scheme other than http(s)", method: .GET, uri: "ftp://a.example/x", hosts: ["a.example"], version: .http1_1, expected: nil),
    ]

    @Test("request-target and Host are parsed once, strictly (RFC 9112 §3.2)", arguments: targets)
    func target(_ c: TargetCase) {
        let parsed = try? RequestTarget(head: Self.head(c.method, c.uri, c.hosts.map { ("Host", $0) }, version: c.version))
        guard let expected = c.expected else {
            #expect(parsed == nil, "\(c.label) must be refused")
            return
        }
        #expect(parsed?.host == expected.host)
        #expect(parsed?.port == expected.port)
        #expect(parsed?.pathAndQuery == expected.pathAndQuery)
        #expect(parsed?.isAbsolute == expected.absolute)
    }

    // MARK: The connection state machine

    static let limits = ConnectionStateMachine.Limits(maxBodyBytes: 10, readTimeout: .seconds(30), idleTimeout: .seconds(60))
    static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    func answered(_ action: ConnectionStateMachine.Action) -> String? {
        if case .answer(let head, _, _) = action { return head.uri }
        return nil
    }

    @Test("pipelined requests are answered one at a time, in order; reads are held back once one is queued")
    func ordering() {
        var machine = ConnectionStateMachine(limits: Self.limits, now: Self.t0)
        var log: [String] = []
        func note(_ action: ConnectionStateMachine.Action?) {
            if let action, let uri = answered(action) { log.append(uri) }
        }
        let readAtFirst = machine.readRequested()
        #expect(readAtFirst)
        note(machine.received(.head(Self.head(.GET, "/1", [("Host", "a")])), now: Self.t0))
        note(machine.received(.end, now: Self.t0))
        #expect(log == ["/1"])
        let readWhileAnsweringAlone = machine.readRequested()
        #expect(readWhileAnsweringAlone, "nothing queued yet: reading goes on (no read-interest change per request)")
        // While /1 is answered, /2 and /3 arrive: queued, and no read.
        for uri in ["/2", "/3"] {
            note(machine.received(.head(Self.head(.GET, uri, [("Host", "a")])), now: Self.t0))
            note(machine.received(.end, now: Self.t0))
        }
        #expect(log == ["/1"])
        let readWhileAnswering = machine.readRequested()
        #expect(!readWhileAnswering)
        for expected in [["/1", "/2"], ["/1", "/2", "/3"]] {
            let ended = machine.answerEnded(keepOpen: true, now: Self.t0)
            #expect(ended == .continueWithQueue)
            while let action = machine.nextQueued(now: Self.t0) { note(action) }
            #expect(log == expected, "one answer at a time")
            let resume = machine.shouldResumeReading()
            #expect(!resume, "an answer is in flight again")
        }
        let ended = machine.answerEnded(keepOpen: true, now: Self.t0)
        #expect(ended == .continueWithQueue)
        let nothing = machine.nextQueued(now: Self.t0)
        #expect(nothing == nil)
        let resume = machine.shouldResumeReading()
        #expect(resume, "the held-back read happens once the queue is empty")
    }

    @Test("a parse error behind a valid request is refused after that request's answer")
    func parseErrorQueued() {
        var machine = ConnectionStateMachine(limits: Self.limits, now: Self.t0)
        _ = machine.received(.head(Self.head(.GET, "/ok", [("Host", "a")])), now: Self.t0)
        #expect(answered(machine.received(.end, now: Self.t0)) == "/ok")
        guard case .none = machine.received(.parseError(.invalidHeaderToken), now: Self.t0) else {
            Issue.record("the error must wait for the answer in flight")
            return
        }
        let ended = machine.answerEnded(keepOpen: true, now: Self.t0)
        #expect(ended == .continueWithQueue)
        guard case .refuse(.malformed)? = machine.nextQueued(now: Self.t0) else {
            Issue.record("then it is refused")
            return
        }
        let closed = machine.answerEnded(keepOpen: false, now: Self.t0)
        #expect(closed == .close)
    }

    @Test("the request clock runs only while waiting for the request, not while answering the one before")
    func requestClock() {
        var machine = ConnectionStateMachine(limits: Self.limits, now: Self.t0)
        machine.bytesArrived(now: Self.t0)
        _ = machine.received(.head(Self.head(.GET, "/big", [("Host", "a")])), now: Self.t0)
        _ = machine.received(.end, now: Self.t0)
        // The next request's bytes arrive at once, but the big answer takes a minute.
        machine.bytesArrived(now: Self.t0)
        if case .refuse = machine.deadlineCheck(now: Self.t0 + .seconds(60)) { Issue.record("no 408 while answering") }
        let ended = machine.answerEnded(keepOpen: true, now: Self.t0 + .seconds(60))
        #expect(ended == .continueWithQueue)
        if case .refuse = machine.deadlineCheck(now: Self.t0 + .seconds(61)) { Issue.record("its clock starts when the answer ends") }
        guard case .refuse(.requestTimeout) = machine.deadlineCheck(now: Self.t0 + .seconds(91)) else {
            Issue.record("30 s after the answer ended, the unfinished request is timed out")
            return
        }
    }

    @Test("idle connections close; a shutdown closes at once when idle, after the answer otherwise")
    func idleAndShutdown() {
        var idle = ConnectionStateMachine(limits: Self.limits, now: Self.t0)
        guard case .none = idle.deadlineCheck(now: Self.t0 + .seconds(59)) else { Issue.record("not yet idle"); return }
        guard case .close = idle.deadlineCheck(now: Self.t0 + .seconds(60)) else { Issue.record("idle for the idle timeout"); return }

        var busy = ConnectionStateMachine(limits: Self.limits, now: Self.t0)
        _ = busy.received(.head(Self.head(.GET, "/", [("Host", "a")])), now: Self.t0)
        guard case .answer(_, _, keepAlive: true) = busy.received(.end, now: Self.t0) else { Issue.record("answered"); return }
        guard case .none = busy.shutdownRequested() else { Issue.record("the answer in flight finishes first"); return }
        let closed = busy.answerEnded(keepOpen: true, now: Self.t0)
        #expect(closed == .close)

        var quiet = ConnectionStateMachine(limits: Self.limits, now: Self.t0)
        guard case .close = quiet.shutdownRequested() else { Issue.record("nothing in flight: close now"); return }
    }

    @Test("an answer whose last write finds the connection closed (the flush failed and closed it at once) ends quietly")
    func answerEndsAfterClose() {
        // The last flush of an answer can fail (the client reset the connection) and NIO then closes the channel
        // inside that flush, so the handler hears `closed()` before it reports the answer's end.
        var machine = ConnectionStateMachine(limits: Self.limits, now: Self.t0)
        _ = machine.received(.head(Self.head(.GET, "/", [("Host", "a")])), now: Self.t0)
        _ = machine.received(.end, now: Self.t0)
        machine.closed()
        let ended = machine.answerEnded(keepOpen: true, now: Self.t0)
        #expect(ended == .close)
        #expect(machine.isClosed)
        let next = machine.nextQueued(now: Self.t0)
        #expect(next == nil)
    }

    @Test("a body over the limit is refused with 413 once the request has ended; the client's half-close ends the connection after the answer")
    func limitsAndHalfClose() {
        var machine = ConnectionStateMachine(limits: Self.limits, now: Self.t0)
        _ = machine.received(.head(Self.head(.POST, "/", [("Host", "a"), ("Content-Length", "11")])), now: Self.t0)
        _ = machine.received(.body(ByteBuffer(string: "01234567890")), now: Self.t0)
        guard case .refuse(.bodyTooLarge) = machine.received(.end, now: Self.t0) else { Issue.record("413"); return }

        var halfClosed = ConnectionStateMachine(limits: Self.limits, now: Self.t0)
        _ = halfClosed.received(.head(Self.head(.GET, "/", [("Host", "a")])), now: Self.t0)
        _ = halfClosed.received(.end, now: Self.t0)
        guard case .none = halfClosed.received(.inputClosed, now: Self.t0) else { Issue.record("answer first"); return }
        let ended = halfClosed.answerEnded(keepOpen: true, now: Self.t0)
        #expect(ended == .continueWithQueue)
        guard case .close? = halfClosed.nextQueued(now: Self.t0) else { Issue.record("then close"); return }
    }
}
