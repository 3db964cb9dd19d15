import Foundation
import Testing
import SatchelTestSupport
@testable import SatchelCore

private func v(_ raw: String) -> SemanticVersion { try! SemanticVersion(raw) }
private let shop = try! PackageID("shop")
private let account = try! PackageID("account.web")
private let sha = String(repeating: "a", count: 64)
private func entry(_ id: PackageID, _ version: String) -> CatalogEntry {
    CatalogEntry(id: id, version: v(version), url: "\(id)-\(version).zip", size: 1000, sha256: sha)
}
private let base: Int64 = 1_800_000_000


/// Reports over three versions of shop and one of account.web, from `devices` devices, with reasons, revocations,
/// ties within a second and reports on both sides of the steps' starts.
private func records(_ count: Int, devices: Int, rng: inout SeededGenerator) -> [ReportRecord] {
    let versions: [(PackageID, String)] = [(shop, "1.0.0"), (shop, "1.1.0"), (shop, "1.2.0-beta.1"), (account, "2.0.0")]
    let reasons: [String?] = [nil, "crashed", "script-error", "trial", "revoked", "unresponsive"]
    return (0..<count).map { _ in
        let items: [DeviceReport.Item] = (0..<Int.random(in: 1...4, using: &rng)).map { _ in
            let (id, version) = versions.randomElement(using: &rng)!
            let token = String(format: "%016llx", UInt64.random(in: 0..<UInt64(devices), using: &rng) &* 0x9E37_79B9_7F4A_7C15)
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<3: return .init(id: id, role: .offered, version: v(version), token: token, cohort: Int.random(in: 0..<1000, using: &rng))
            case 3..<8: return .init(id: id, role: .active, version: v(version), token: token, state: ["trial", "confirmed", "built-in"].randomElement(using: &rng)!)
            default: return .init(id: id, role: .failed, version: v(version), token: token, why: reasons.randomElement(using: &rng)!)
            }
        }
        let channel = Bool.random(using: &rng) ? ReleaseChannel.production : try! ReleaseChannel("beta")
        return ReportRecord(at: Timestamp(secondsSinceEpoch: base + Int64.random(in: -50...50, using: &rng)), via: "post", report: DeviceReport(channel: channel, items: items))
    }
}

/// The catalog of those versions, with its steps' and watch's start at `since` (nil: a catalog that counts everything).
private func catalog(since: Int64?) throws -> Catalog {
    guard let since else { return try Catalog(expires: Timestamp(secondsSinceEpoch: base), packages: [entry(shop, "1.0.0"), entry(shop, "1.1.0"), entry(account, "2.0.0")]) }
    let at = Timestamp(secondsSinceEpoch: since)
    return try Catalog(
        expires: at, packages: [entry(shop, "1.0.0"), entry(shop, "1.1.0"), entry(account, "2.0.0")],
        rollouts: [Rollout(entry: entry(shop, "1.2.0-beta.1"), permille: 50, state: .staged, since: at)],
        watches: [ReleaseWatch(id: shop, version: v("1.1.0"), since: at)])
}

/// The line an access log writes with the nginx log_format of docs/formats.md: the raw header values, JSON-escaped.
private func nginxLine(_ record: ReportRecord, offset: Bool) -> [UInt8] {
    let headers = record.report.headerFields
    func escaped(_ text: String) -> String { text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") }
    var at = record.at.description
    if offset {
        at = Timestamp(secondsSinceEpoch: record.at.secondsSinceEpoch + 3600).description.dropLast() + "+01:00"
    }
    let channel = record.report.channel == .production ? "" : escaped(headers[0].value)
    return Array(#"{"at":"\#(at)","via":"header","channel":"\#(channel)","report":"\#(escaped(headers[1].value))"}"#.utf8)
}

/// What the scanner says of one line on its own, before any fallback.
private func scanned(_ line: [UInt8]) -> ReportLineScanner.Outcome {
    let tally = ReportTally()
    return line.withUnsafeBytes { tally.scanner.scan($0, tally: tally) }
}

private func referenceAccepts(_ line: [UInt8]) -> Bool { (try? ReportRecord.parse(line: line)) != nil }

/// Changes a line the way damage and odd writers do: a byte replaced by one the grammars care about, a byte dropped,
/// a span repeated, the line cut short.
private func mutate(_ line: [UInt8], rng: inout SeededGenerator) -> [UInt8] {
    var bytes = line
    let interesting = Array(#"",;=: {}[]\0aAZ-._*"#.utf8) + [0x09, 0x7F, 0xC3, 0x0D, 0x00]
    for _ in 0..<Int.random(in: 1...3, using: &rng) where !bytes.isEmpty {
        let at = Int.random(in: 0..<bytes.count, using: &rng)
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: bytes[at] = interesting.randomElement(using: &rng)!
        case 1: bytes.remove(at: at)
        case 2: bytes.insert(contentsOf: bytes[at..<min(bytes.count, at + Int.random(in: 1...12, using: &rng))], at: at)
        default: bytes = Array(bytes[..<at])
        }
    }
    return bytes
}

@Suite("Device reports as a stream: the scanner and the tally against the reference parser and count")
struct ReportTallyTests {
    @Test("the scanner accepts only lines ReportRecord.parse accepts and refuses only lines it refuses, over generated and mutated lines of both shapes")
    func scannerAgreesWithParse() throws {
        var rng = SeededGenerator(state: 43)
        let sample = records(1500, devices: 300, rng: &rng)
        var lines: [[UInt8]] = []
        for (index, record) in sample.enumerated() {
            lines.append(Array(record.jsonLine.dropLast()))
            lines.append(nginxLine(record, offset: index % 2 == 0))
        }
        // Every well-formed line of either writer is decided by the scanner itself, and accepted.
        for line in lines {
            #expect(scanned(line) == .report, "\(String(decoding: line, as: UTF8.self))")
        }
        // Hand-written variants the JSON grammar allows, and lines that break a rule of the report format.
        let hand: [String] = [
            #" { "at" : "2027-01-15T08:00:00Z" , "via":null, "channel":"beta","items":[ {"id":"shop","role":"active","version":"1.0.0","token":"0123456789abcdef","state":"confirmed"} ] } "#,
            #"{"items":[],"channel":"production","at":"2027-01-15T08:00:00Z"}"#,
            #"{"at":"2027-01-15T08:00:00Z","channel":"production","items":[{"id":"shop","role":"offered","version":"1.0.0","token":"0123456789abcdef","cohort":0}]}"#,
            #"{"at":"2027-01-15T08:00:00Z","channel":"production","items":[{"id":"shop","role":"offered","version":"1.0.0","token":"0123456789abcdef","cohort":007}]}"#,
            #"{"at":"2027-01-15T08:00:00Z","channel":"production","items":[{"id":"shop","role":"offered","version":"1.0.0","token":"0123456789abcdef","cohort":5.0}]}"#,
            #"{"at":"2027-01-15T08:00:00Z","channel":"production","items":[{"id":"shop","role":"failed","version":"1.0.0","token":"0123456789ABCDEF","why":"crashed"}]}"#,
            #"{"at":"2027-01-15T08:00:00Z","channel":"production","items":[{"id":"Shop","role":"failed","version":"1.0.0","token":"0123456789abcdef"}]}"#,
            #"{"at":"2027-01-15T08:00:00Z","channel":"production","items":[{"id":"shop","role":"failed","version":"1.0","token":"0123456789abcdef"}]}"#,
            #"{"at":"2027-01-15T08:00:00Z","channel":"production","items":[{"id":"shop","role":"gone","version":"1.0.0","token":"0123456789abcdef"}]}"#,
            #"{"at":"2027-01-15T08:00:00Z","channel":"production","items":[{"id":"shop","role":"failed","version":"1.0.0","token":"0123456789abcdef","why":"Crashed"}]}"#,
            #"{"at":"2027-01-15T08:00:00Z","channel":"production","items":[{"id":"shop","role":"failed","version":"1.0.0","token":null}]}"#,
            #"{"at":"2027-01-15T08:00:00Z","channel":"production","items":[{"id":"shop","role":"failed","version":"1.0.0","token":"0123456789abcdef","extra":1}]}"#,
            #"{"at":"2027-01-15T08:00:00Z","channel":"production","items":[{"id":"shop","id":"shop","role":"failed","version":"1.0.0","token":"0123456789abcdef"}]}"#,
            #"{"at":"2027-02-30T08:00:00Z","channel":"production","items":[]}"#,
            #"{"at":"2027-01-15T08:00:00+01:00","channel":null,"items":[]}"#,
            #"{"at":"2027-01-15T08:00:00Z","channel":"Production","items":[]}"#,
            #"{"at":"2027-01-15T08:00:00Z","channel":"production"}"#,
            #"{"at":"2027-01-15T08:00:00Z","channel":"production","items":[]} x"#,
            #"{"at":"2027-01-15T08:00:00Z","at":"2027-01-15T08:00:00Z","channel":"production","items":[]}"#,
            #"{"at":"\u0032027-01-15T08:00:00Z","channel":"pro\/duction","items":[]}"#,
            #"{"at":"2027-01-15T08:00:00Z","channel":"production","items":[],"note":"other"}"#,
            #"{"at":"2027-01-15T08:00:00+01:00","via":"header","channel":"","report":"\"shop\";role=active;version=\"1.0.0\";token=\"0123456789abcdef\";state=confirmed"}"#,
            #"{"at":"2027-01-15T08:00:00+01:00","via":"header","channel":" \"beta\" ","report":"  \"shop\";role=active;version=\"1.0.0\";token=\"0123456789abcdef\" ,  \"shop\";role=offered;version=\"1.1.0\";token=\"0123456789abcdef\";cohort=999"}"#,
            #"{"at":"2027-01-15T08:00:00+01:00","via":"header","channel":"\"beta\";x=1","report":"\"shop\";role=active;version=\"1.0.0\";token=\"0123456789abcdef\""}"#,
            #"{"at":"2027-01-15T08:00:00+01:00","report":"\"shop\";role=active;version=\"1.0.0\";token=\"0123456789abcdef\";cohort=1000"}"#,
            #"{"at":"2027-01-15T08:00:00+01:00","report":"\"shop\";role=active;version=\"1.0.0\";token=\"0123456789abcdef\";cohort=-1"}"#,
            #"{"at":"2027-01-15T08:00:00+01:00","report":"\"shop\";role=active;version=\"1.0.0\";token=\"0123456789abcdef\";cohort=1.5"}"#,
            #"{"at":"2027-01-15T08:00:00+01:00","report":"\"shop\";role=active;version=\"1.0.0\";token=\"0123456789abcdef\";cohort=\"12\""}"#,
            #"{"at":"2027-01-15T08:00:00+01:00","report":"\"shop\";role=active;version=\"1.0.0\";token=\"0123456789abcdef\";x;y=?1"}"#,
            #"{"at":"2027-01-15T08:00:00+01:00","report":"\"shop\";role=active;version=\"1.0.0\";token=\"0123456789abcdef\",\t\"shop\";role=failed;version=\"1.0.0\";token=\"0123456789abcdef\""}"#,
            #"{"at":"2027-01-15T08:00:00+01:00","report":"\"shop\";role=active;version=\"1.0.0\";token=\"0123456789abcdef\","}"#,
            #"{"at":"2027-01-15T08:00:00+01:00","report":"(\"shop\");role=active"}"#,
            #"{"at":"2027-01-15T08:00:00+01:00","report":""}"#,
            #"{"at":"2027-01-15T08:00:00+01:00","report":"shop;role=active;version=\"1.0.0\";token=\"0123456789abcdef\""}"#,
            #"{"at":"2027-01-15T08:00:00+01:00","report":"\"sh\\\"op\";role=active;version=\"1.0.0\";token=\"0123456789abcdef\""}"#,
            #"{"at":"2027-01-15T08:00:00+01:00","report":"\"shop\";role=active;version=\"1.0.0\";token=\"0123456789abcdef\"","items":[]}"#,
            "127.0.0.1 - - [15/Jan/2027:08:00:00 +0000] \"GET /catalog.json HTTP/1.1\" 200",
            "", " ", "\r", "{", "[]", "null", "{}",
        ]
        lines += hand.map { Array($0.utf8) }
        lines.append(Array(#"{"at":"2027-01-15T08:00:00Z","channel":"production","items":["#.utf8) + Array(repeating: Array(#"{"id":"shop","role":"active","version":"1.0.0","token":"0123456789abcdef"},"#.utf8), count: 25).joined() + Array(#"{}]}"#.utf8))
        var mutated: [[UInt8]] = []
        for _ in 0..<6000 { mutated.append(mutate(lines.randomElement(using: &rng)!, rng: &rng)) }
        var unsure = 0
        for line in lines + mutated {
            let outcome = scanned(line)
            let accepts = referenceAccepts(line)
            switch outcome {
            case .report: #expect(accepts, "scanner took a line the reference refuses: \(String(decoding: line, as: UTF8.self).debugDescription)")
            case .refused: #expect(!accepts, "scanner refused a line the reference takes: \(String(decoding: line, as: UTF8.self).debugDescription)")
            case .unsure: unsure += 1
            }
        }
        // The decoder is the exception: most damaged lines are judged without it too (what is left is mostly a damaged
        // structured field, or a byte outside ASCII, which the scanner does not judge).
        #expect(unsure * 2 < mutated.count, "\(unsure) of \(lines.count + mutated.count) lines left to the reference parser")

        // Counted, lines and the tally (scanner, then reference where unsure) give the reference count's rows.
        let tally = ReportTally()
        var parsed: [ReportRecord] = []
        var skipped = 0
        for line in lines + mutated where !line.isEmpty {
            tally.add(line: line)
            if let record = try? ReportRecord.parse(line: line) { parsed.append(record) } else { skipped += 1 }
        }
        #expect(tally.records == parsed.count && tally.skipped == skipped)
        for since in [nil, base - 10, base + 10] as [Int64?] {
            let catalog = try catalog(since: since)
            #expect(tally.statuses(catalog) == VersionStatus.compute(catalog, records: parsed))
        }
    }

    @Test("the tally's rows equal VersionStatus.compute's for any step start, in any order of lines, after a step moves")
    func tallyAgreesWithCompute() throws {
        var rng = SeededGenerator(state: 7)
        let sample = records(4000, devices: 500, rng: &rng)
        let tally = ReportTally()
        for record in sample { tally.add(record) }
        let shuffled = ReportTally()
        for record in sample.shuffled(using: &rng) { shuffled.add(record) }
        // Adding a record again changes no count of devices.
        for record in sample.prefix(500) { shuffled.add(record) }
        for since in [nil, base - 60, base - 1, base, base + 17, base + 60] as [Int64?] {
            let catalog = try catalog(since: since)
            let expected = VersionStatus.compute(catalog, records: sample)
            #expect(tally.statuses(catalog) == expected, "since \(since.map(String.init) ?? "none")")
            #expect(shuffled.statuses(catalog) == expected)
            #expect(expected.contains { $0.failed > 0 && $0.failuresByReason.count > 1 })
        }
        // Reasons given within one second: the greater word, whatever the order.
        let tied = [
            ReportRecord(at: Timestamp(secondsSinceEpoch: base + 5), via: "post", report: DeviceReport(channel: .production, items: [
                .init(id: shop, role: .failed, version: v("1.1.0"), token: "00000000000000aa", why: "script-error")])),
            ReportRecord(at: Timestamp(secondsSinceEpoch: base + 5), via: "post", report: DeviceReport(channel: .production, items: [
                .init(id: shop, role: .failed, version: v("1.1.0"), token: "00000000000000aa", why: "crashed")])),
        ]
        let catalog = try catalog(since: nil)
        for order in [tied, tied.reversed()] {
            let rows = VersionStatus.compute(catalog, records: order)
            #expect(rows.first { $0.version == "1.1.0" }?.failuresByReason == ["script-error": 1])
            let small = ReportTally()
            for record in order { small.add(record) }
            #expect(small.statuses(catalog) == rows)
        }
    }

    @Test("a state written and read back counts the same; a damaged, cut or foreign file is refused with the reason")
    func stateRoundTrip() throws {
        var rng = SeededGenerator(state: 11)
        let tally = ReportTally()
        for record in records(3000, devices: 400, rng: &rng) { tally.add(record) }
        tally.add(line: Array("not a report".utf8))
        let inputs = [ReportTallyState.Input(path: "reports.jsonl", gzip: false, offset: 1234, head: "ab", headBytes: 1234, tail: "cd", tailBytes: 1234)]
        var bytes: [UInt8] = []
        try ReportTallyState.write(tally, inputs: inputs, uncommitted: (1, 0)) { bytes += $0 }
        func read(_ data: [UInt8]) throws -> (tally: ReportTally, inputs: [ReportTallyState.Input]) {
            var offset = 0
            return try ReportTallyState.read { count in
                defer { offset = min(data.count, offset + count) }
                return Array(data[offset..<min(data.count, offset + count)])
            }
        }
        let back = try read(bytes)
        #expect(back.inputs == inputs && back.tally.records == tally.records - 1 && back.tally.skipped == tally.skipped)
        #expect(back.tally.earliest == tally.earliest && back.tally.latest == tally.latest && back.tally.devices == tally.devices)
        for since in [nil, base, base + 20] as [Int64?] {
            #expect(back.tally.statuses(try catalog(since: since)) == tally.statuses(try catalog(since: since)))
        }
        var damaged = bytes
        damaged[bytes.count / 2] ^= 0x01
        #expect(throws: ReportStateError.self) { try read(damaged) }
        #expect(throws: ReportStateError.self) { try read(Array(bytes.dropLast(40))) }
        #expect(throws: ReportStateError.self) { try read(Array(#"{"expires":"2027-01-01T00:00:00Z"}"#.utf8)) }
        #expect(throws: ReportStateError.self) { try read([]) }
    }
}
