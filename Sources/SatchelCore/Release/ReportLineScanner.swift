/// Reads one line of a reports file straight from its bytes, for the fields a report has: both shapes
/// `ReportRecord.parse` takes (the POST's JSON object with `at` and `via`, and an access log's `{"at","via","channel",
/// "report"}` holding the raw header values, the report an RFC 9651 list), with no JSON tree and no decoder per line.
///
/// It answers `report` only for a line the reference parser would accept with the same meaning, and `refused` only for
/// one it would refuse (no object at all, or a field that breaks a rule of the format: a token that is not 16 hex
/// digits, an unknown role, a bad id, version, word, cohort, instant, too many items, too many bytes). Whatever it
/// does not take on itself (a key no writer puts there, a duplicate key, a non-ASCII byte, a number written other
/// than plainly, a structured field with escapes, booleans, decimals or inner lists) is `unsure`, and the tally asks
/// `ReportRecord.parse`: rare lines cost the decoder, common ones never do.
struct ReportLineScanner {
    enum Outcome { case report, refused, unsure }

    /// The line, then the decoded bytes of strings that hold escapes; fields point into it, so a string without
    /// escapes is never copied.
    private var arena: [UInt8] = []
    /// Set where the line breaks JSON's grammar for any reader (cut short, a structural byte where another must be,
    /// bytes after the object): a line left `unsure` is then refused without asking the decoder.
    private var broken = false
    var pending: [ScannedItem] = []
    /// Per item of the line being read: where its strings are in `arena`.
    private var fields: [ItemFields] = []

    /// Valid (id, version) pairs seen, by a hash of their bytes, so a line's pair is found without making a string;
    /// `recentPairs` before it, direct-mapped by the hash, for the few pairs a fleet reports.
    private var pairsByHash: [UInt64: (bytes: [UInt8], version: Int32)] = [:]
    private var recentPairs = [RecentPair](repeating: RecentPair(hash: 0, bytes: [], version: -1), count: 64)

    private struct RecentPair {
        var hash: UInt64
        var bytes: [UInt8]
        var version: Int32
    }
    private var reasonsByHash: [UInt64: (bytes: [UInt8], reason: UInt32)] = [:]
    private var lastInstant: (bytes: [UInt8], seconds: Int64?) = ([], nil)
    private var lastChannel: (bytes: [UInt8], valid: Bool) = ([], false)

    private struct ItemFields {
        var id: Range<Int>? = nil
        var role: Range<Int>? = nil
        var version: Range<Int>? = nil
        var token: Range<Int>? = nil
        var state: Range<Int>? = nil
        var why: Range<Int>? = nil
        var cohort: Int? = nil
    }

    private enum Value {
        case absent, null
        case string(Range<Int>)
    }

    // MARK: The line

    mutating func scan(_ line: UnsafeRawBufferPointer, tally: ReportTally) -> Outcome {
        broken = false
        let outcome = scanLine(line, tally: tally)
        return outcome == .unsure && broken ? .refused : outcome
    }

    /// Whether the byte at the cursor makes the line invalid JSON where `expected` must stand: the end of the line, or
    /// printable ASCII other than it (space was skipped before).
    private mutating func require(_ byte: UInt8, _ cursor: inout Cursor) -> Bool {
        if cursor.take(byte) { return true }
        if let next = cursor.peek, !(0x21...0x7E).contains(next) { return false }
        broken = true
        return false
    }

    private mutating func scanLine(_ line: UnsafeRawBufferPointer, tally: ReportTally) -> Outcome {
        let bytes = line.bindMemory(to: UInt8.self)
        arena.removeAll(keepingCapacity: true)
        arena.append(contentsOf: bytes)
        fields.removeAll(keepingCapacity: true)
        var cursor = Cursor(bytes: bytes)
        cursor.skipSpace()
        guard cursor.peek == 0x7B else {
            // Anything printable but `{` is no JSON object; control or non-ASCII bytes are the decoder's to judge.
            if let first = cursor.peek, (0x21...0x7E).contains(first) { return .refused }
            return .unsure
        }
        cursor.index += 1
        var at = Value.absent, via = Value.absent, channel = Value.absent, report = Value.absent
        var sawItems = false
        cursor.skipSpace()
        if cursor.peek == 0x7D {
            cursor.index += 1
        } else {
            while true {
                guard cursor.peek == 0x22 || require(0x22, &cursor), let key = readString(&cursor) else { return .unsure }
                cursor.skipSpace()
                guard require(0x3A, &cursor) else { return .unsure }
                cursor.skipSpace()
                switch keyName(key) {
                case "at":
                    guard case .absent = at, case .string(let range)? = readStringValue(&cursor, nullable: false) else { return .unsure }
                    at = .string(range)
                case "via":
                    guard case .absent = via, let value = readStringValue(&cursor, nullable: true) else { return .unsure }
                    via = value
                case "channel":
                    guard case .absent = channel, let value = readStringValue(&cursor, nullable: true) else { return .unsure }
                    channel = value
                case "report":
                    guard case .absent = report, let value = readStringValue(&cursor, nullable: true) else { return .unsure }
                    report = value
                case "items":
                    guard !sawItems, readItems(&cursor) else { return .unsure }
                    sawItems = true
                default: return .unsure
                }
                cursor.skipSpace()
                if cursor.take(0x2C) {
                    cursor.skipSpace()
                    continue
                }
                guard require(0x7D, &cursor) else { return .unsure }
                break
            }
        }
        cursor.skipSpace()
        guard cursor.atEnd else {
            broken = true
            return .unsure
        }
        guard case .string(let atRange) = at else { return .refused }
        pending.removeAll(keepingCapacity: true)
        if case .string(let raw) = report {
            // An access log's line: the header values as the device sent them. `items`, which that reader ignores,
            // is left to it.
            guard !sawItems else { return .unsure }
            if case .string(let name) = channel, !name.isEmpty {
                switch headerChannel(name) {
                case .report: break
                case let other: return other
                }
            }
            guard raw.count <= DeviceReport.maxHeaderBytes else { return .refused }
            guard !raw.isEmpty else { return .unsure }
            switch readHeaderList(raw) {
            case .report: break
            case let other: return other
            }
        } else {
            guard bytes.count <= 16 << 10 else { return .refused }
            guard case .string(let name) = channel, sawItems else { return .refused }
            guard checkChannel(name) else { return .refused }
        }
        guard fields.count <= DeviceReport.maxItems else { return .refused }
        for item in fields {
            guard let scanned = check(item, tally: tally) else { return .refused }
            if let scanned { pending.append(scanned) }
        }
        guard let seconds = instant(atRange) else { return .refused }
        tally.count(at: seconds, pending)
        return .report
    }

    private func keyName(_ range: Range<Int>) -> String? {
        switch range.count {
        case 2 where arena[range.lowerBound] == 0x61 && arena[range.lowerBound + 1] == 0x74: "at"
        case 3 where equals(range, "via"): "via"
        case 7 where equals(range, "channel"): "channel"
        case 6 where equals(range, "report"): "report"
        case 5 where equals(range, "items"): "items"
        default: nil
        }
    }

    private func equals(_ range: Range<Int>, _ text: StaticString) -> Bool {
        guard range.count == text.utf8CodeUnitCount else { return false }
        let pointer = text.utf8Start
        for offset in 0..<range.count where arena[range.lowerBound + offset] != pointer[offset] { return false }
        return true
    }

    // MARK: JSON pieces

    /// A JSON string, its escapes resolved into `arena`; nil for anything outside ASCII or not JSON.
    private mutating func readString(_ cursor: inout Cursor) -> Range<Int>? {
        guard cursor.take(0x22) else { return nil }
        // Most strings hold no escape: their bytes in the line are their value.
        let first = cursor.index
        while let byte = cursor.peek {
            // One comparison for the bytes a plain string never holds (controls, DEL and beyond ASCII), then its two
            // special ones.
            if (byte &- 0x20) >= 0x5F || byte == 0x22 || byte == 0x5C {
                if byte == 0x22 {
                    cursor.index += 1
                    return first..<(cursor.index - 1)
                }
                guard byte == 0x5C else { return nil }
                break
            }
            cursor.index += 1
        }
        guard !cursor.atEnd else {
            broken = true
            return nil
        }
        let start = arena.count
        arena.append(contentsOf: cursor.bytes[first..<cursor.index])
        while let byte = cursor.peek {
            cursor.index += 1
            switch byte {
            case 0x22: return start..<arena.count
            case 0x5C:
                guard let escape = cursor.peek else {
                    broken = true
                    return nil
                }
                cursor.index += 1
                switch escape {
                case 0x22, 0x5C, 0x2F: arena.append(escape)
                case 0x62: arena.append(0x08)
                case 0x66: arena.append(0x0C)
                case 0x6E: arena.append(0x0A)
                case 0x72: arena.append(0x0D)
                case 0x74: arena.append(0x09)
                case 0x75:
                    var code: UInt32 = 0
                    for _ in 0..<4 {
                        guard let hex = cursor.peek, let digit = Self.hexDigit(hex, upper: true) else {
                            broken = true
                            return nil
                        }
                        cursor.index += 1
                        code = code << 4 | UInt32(digit)
                    }
                    // A character beyond ASCII would need UTF-8 encoding and its own checks: the decoder's job.
                    guard code < 0x80 else { return nil }
                    arena.append(UInt8(code))
                default:
                    // No other escape exists in JSON.
                    broken = true
                    return nil
                }
            case 0x20...0x7E: arena.append(byte)
            default: return nil
            }
        }
        broken = true
        return nil
    }

    /// A string, or null where the field is optional; nil for any other JSON value (for the decoder to judge).
    private mutating func readStringValue(_ cursor: inout Cursor, nullable: Bool) -> Value? {
        if cursor.peek == 0x6E {
            guard nullable, cursor.take(literal: "null") else { return nil }
            return .null
        }
        return readString(&cursor).map { .string($0) }
    }

    private mutating func readItems(_ cursor: inout Cursor) -> Bool {
        guard cursor.take(0x5B) else { return false }
        cursor.skipSpace()
        if cursor.take(0x5D) { return true }
        while true {
            guard readItem(&cursor) else { return false }
            cursor.skipSpace()
            if cursor.take(0x2C) {
                cursor.skipSpace()
                continue
            }
            return require(0x5D, &cursor)
        }
    }

    private mutating func readItem(_ cursor: inout Cursor) -> Bool {
        guard cursor.take(0x7B) else { return false }
        var item = ItemFields()
        var seen: UInt8 = 0
        cursor.skipSpace()
        if cursor.take(0x7D) {
            fields.append(item)
            return true
        }
        while true {
            guard cursor.peek == 0x22 || require(0x22, &cursor), let key = readString(&cursor) else { return false }
            cursor.skipSpace()
            guard require(0x3A, &cursor) else { return false }
            cursor.skipSpace()
            var bit: UInt8 = 0
            if equals(key, "cohort") {
                bit = 1 << 6
                if cursor.peek == 0x6E {
                    guard cursor.take(literal: "null") else { return false }
                } else {
                    // Only 0 or 1-3 digits without a leading zero: every other spelling of a number is the decoder's.
                    var value = 0, digits = 0
                    while let byte = cursor.peek, (0x30...0x39).contains(byte) {
                        if digits == 1 && value == 0 { return false }
                        value = value * 10 + Int(byte - 0x30)
                        digits += 1
                        cursor.index += 1
                    }
                    guard (1...3).contains(digits), let next = cursor.peek, next == 0x2C || next == 0x7D || Cursor.isSpace(next) else { return false }
                    item.cohort = value
                }
            } else {
                switch key.count {
                case 2 where equals(key, "id"): bit = 1 << 0
                case 4 where equals(key, "role"): bit = 1 << 1
                case 7 where equals(key, "version"): bit = 1 << 2
                case 5 where equals(key, "token"): bit = 1 << 3
                case 5 where equals(key, "state"): bit = 1 << 4
                case 3 where equals(key, "why"): bit = 1 << 5
                default: return false
                }
                // A required field that is null stays unset, and `check` refuses the line as the decoder does.
                guard let value = readStringValue(&cursor, nullable: true) else { return false }
                if case .string(let range) = value {
                    switch bit {
                    case 1 << 0: item.id = range
                    case 1 << 1: item.role = range
                    case 1 << 2: item.version = range
                    case 1 << 3: item.token = range
                    case 1 << 4: item.state = range
                    default: item.why = range
                    }
                }
            }
            guard seen & bit == 0 else { return false }
            seen |= bit
            cursor.skipSpace()
            if cursor.take(0x2C) {
                cursor.skipSpace()
                continue
            }
            guard require(0x7D, &cursor) else { return false }
            fields.append(item)
            return true
        }
    }

    // MARK: Structured fields (RFC 9651), the subset devices write

    private mutating func headerChannel(_ range: Range<Int>) -> Outcome {
        var index = range.lowerBound
        while index < range.upperBound, arena[index] == 0x20 { index += 1 }
        guard index < range.upperBound, arena[index] == 0x22 else { return .unsure }
        guard let text = sfString(&index, end: range.upperBound) else { return .unsure }
        while index < range.upperBound, arena[index] == 0x20 { index += 1 }
        guard index == range.upperBound else { return .unsure }
        return checkChannel(text) ? .report : .refused
    }

    /// The report header's list: members `"id";key=value…` separated by commas, each becoming an item's fields.
    private mutating func readHeaderList(_ range: Range<Int>) -> Outcome {
        let end = range.upperBound
        var index = range.lowerBound
        while index < end, arena[index] == 0x20 { index += 1 }
        guard index < end else { return .unsure }
        while true {
            guard arena[index] == 0x22, let id = sfString(&index, end: end) else { return .unsure }
            var item = ItemFields()
            item.id = id
            var seen: UInt8 = 0
            while index < end, arena[index] == 0x3B {
                index += 1
                while index < end, arena[index] == 0x20 { index += 1 }
                let keyStart = index
                guard index < end, (0x61...0x7A).contains(arena[index]) || arena[index] == 0x2A else { return .unsure }
                while index < end, Self.isKeyByte(arena[index]) { index += 1 }
                let key = keyStart..<index
                guard index < end, arena[index] == 0x3D else { return .unsure }
                index += 1
                guard index < end else { return .unsure }
                var bit: UInt8 = 0
                if equals(key, "cohort") {
                    bit = 1 << 6
                    guard let value = sfInteger(&index, end: end) else { return .unsure }
                    // Out of range is refused by the report's rules; kept as a value outside 0-999 for `check`.
                    item.cohort = value
                } else {
                    guard let text = sfText(&index, end: end) else { return .unsure }
                    switch key.count {
                    case 4 where equals(key, "role"): (bit, item.role) = (1 << 1, text)
                    case 7 where equals(key, "version"): (bit, item.version) = (1 << 2, text)
                    case 5 where equals(key, "token"): (bit, item.token) = (1 << 3, text)
                    case 5 where equals(key, "state"): (bit, item.state) = (1 << 4, text)
                    case 3 where equals(key, "why"): (bit, item.why) = (1 << 5, text)
                    default: return .unsure
                    }
                }
                guard seen & bit == 0 else { return .unsure }
                seen |= bit
            }
            // Without role, version or token the reference names the item it refuses; rare enough to leave to it.
            guard seen & 0b1110 == 0b1110 else { return .unsure }
            fields.append(item)
            // Spaces only: a tab, which the grammar also allows there, is left to the reference parser.
            while index < end, arena[index] == 0x20 { index += 1 }
            if index == end { return .report }
            guard arena[index] == 0x2C else { return .unsure }
            index += 1
            while index < end, arena[index] == 0x20 { index += 1 }
            guard index < end else { return .unsure }
        }
    }

    private static func isKeyByte(_ byte: UInt8) -> Bool {
        (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x5F || byte == 0x2D || byte == 0x2E || byte == 0x2A
    }

    /// An sf-string without escapes; its content's range in `arena`.
    private func sfString(_ index: inout Int, end: Int) -> Range<Int>? {
        index += 1
        let start = index
        while index < end {
            let byte = arena[index]
            if byte == 0x22 {
                index += 1
                return start..<(index - 1)
            }
            guard byte >= 0x20, byte <= 0x7E, byte != 0x5C else { return nil }
            index += 1
        }
        return nil
    }

    /// An sf-string or sf-token: the two the reference reads as text.
    private func sfText(_ index: inout Int, end: Int) -> Range<Int>? {
        let first = arena[index]
        if first == 0x22 { return sfString(&index, end: end) }
        guard (0x41...0x5A).contains(first) || (0x61...0x7A).contains(first) || first == 0x2A else { return nil }
        let start = index
        index += 1
        while index < end, Self.isTokenByte(arena[index]) { index += 1 }
        return start..<index
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case 0x21, 0x23, 0x24, 0x25, 0x26, 0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x5E, 0x5F, 0x60, 0x7C, 0x7E, 0x3A, 0x2F: true
        default: false
        }
    }

    /// An sf-integer (a decimal is the reference's to judge).
    private func sfInteger(_ index: inout Int, end: Int) -> Int? {
        var negative = false
        if arena[index] == 0x2D {
            negative = true
            index += 1
        }
        var value = 0, digits = 0
        while index < end, (0x30...0x39).contains(arena[index]) {
            value = value * 10 + Int(arena[index] - 0x30)
            digits += 1
            index += 1
        }
        guard (1...15).contains(digits), index == end || arena[index] != 0x2E else { return nil }
        return negative ? -value : value
    }

    // MARK: The report's rules

    /// nil when the line must be refused; .some(nil) for an item that counts for nothing (`failed` for `revoked`).
    private mutating func check(_ item: ItemFields, tally: ReportTally) -> ScannedItem?? {
        guard let id = item.id, let roleRange = item.role, let versionRange = item.version, let tokenRange = item.token else { return nil }
        guard tokenRange.count == 16, let token = arena.withUnsafeBufferPointer({ Self.token($0.baseAddress! + tokenRange.lowerBound) }) else { return nil }
        if let cohort = item.cohort, !(0..<1000).contains(cohort) { return nil }
        var confirmed = false
        if let state = item.state {
            guard isWord(state) else { return nil }
            confirmed = equals(state, "confirmed")
        }
        if let why = item.why { guard isWord(why) else { return nil } }
        guard let version = pair(id: id, version: versionRange, tally: tally) else { return nil }
        if equals(roleRange, "offered") { return .some(ScannedItem(version: version, role: .offered, token: token, reason: 0)) }
        if equals(roleRange, "active") { return .some(ScannedItem(version: version, role: confirmed ? .confirmed : .active, token: token, reason: 0)) }
        guard equals(roleRange, "failed") else { return nil }
        if let why = item.why, equals(why, "revoked") { return .some(nil) }
        return .some(ScannedItem(version: version, role: .failed, token: token, reason: reason(item.why, tally: tally)))
    }

    private func isWord(_ range: Range<Int>) -> Bool {
        guard (1...40).contains(range.count), (0x61...0x7A).contains(arena[range.lowerBound]) else { return false }
        for index in range {
            let byte = arena[index]
            guard (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2D else { return false }
        }
        return true
    }

    /// FNV-1a over the range's bytes and a separator, continuing from `h`.
    private func hash(_ range: Range<Int>, from h: UInt64 = 0xCBF2_9CE4_8422_2325) -> UInt64 {
        var h = h
        for index in range { h = (h ^ UInt64(arena[index])) &* 0x100_0000_01B3 }
        return (h ^ 0xFF) &* 0x100_0000_01B3
    }

    /// Whether `stored` is the range's bytes, each range followed by a 0, from `offset`; the offset after them.
    private func same(_ stored: [UInt8], _ range: Range<Int>, at offset: Int = 0) -> Int? {
        var offset = offset
        for index in range {
            guard offset < stored.count, stored[offset] == arena[index] else { return nil }
            offset += 1
        }
        guard offset < stored.count, stored[offset] == 0 else { return nil }
        return offset + 1
    }

    /// The tally's index of a valid (id, version), made once per distinct pair with the real grammars.
    private mutating func pair(id: Range<Int>, version: Range<Int>, tally: ReportTally) -> Int32? {
        let key = hash(version, from: hash(id))
        let slot = Int(truncatingIfNeeded: key & 63)
        if recentPairs[slot].hash == key, recentPairs[slot].version >= 0,
            let end = same(recentPairs[slot].bytes, id).flatMap({ same(recentPairs[slot].bytes, version, at: $0) }), end == recentPairs[slot].bytes.count
        {
            return recentPairs[slot].version
        }
        if let known = pairsByHash[key], let end = same(known.bytes, id).flatMap({ same(known.bytes, version, at: $0) }), end == known.bytes.count {
            recentPairs[slot] = RecentPair(hash: key, bytes: known.bytes, version: known.version)
            return known.version
        }
        guard let packageID = try? PackageID(String(decoding: arena[id], as: UTF8.self)),
            let semantic = try? SemanticVersion(String(decoding: arena[version], as: UTF8.self))
        else { return nil }
        let index = tally.intern(ReportTally.VersionKey(id: packageID, version: semantic))
        // A second pair with the same hash is looked up by value each time: correct, only slower.
        if pairsByHash[key] == nil { pairsByHash[key] = (Array(arena[id]) + [0] + Array(arena[version]) + [0], index) }
        return index
    }

    private mutating func reason(_ why: Range<Int>?, tally: ReportTally) -> UInt32 {
        guard let why else { return tally.intern(reason: TrialFailure.trial.why) }
        let key = hash(why)
        if let known = reasonsByHash[key], same(known.bytes, why) == known.bytes.count { return known.reason }
        let index = tally.intern(reason: String(decoding: arena[why], as: UTF8.self))
        if reasonsByHash[key] == nil { reasonsByHash[key] = (Array(arena[why]) + [0], index) }
        return index
    }

    private mutating func checkChannel(_ range: Range<Int>) -> Bool {
        if lastChannel.bytes.elementsEqual(arena[range]) { return lastChannel.valid }
        let valid = (try? ReleaseChannel(String(decoding: arena[range], as: UTF8.self))) != nil
        lastChannel = (Array(arena[range]), valid)
        return valid
    }

    /// The reference's reading of `at`, asked once per distinct text in a row: logs are in time order, so most lines
    /// share the second of the line before.
    private mutating func instant(_ range: Range<Int>) -> Int64? {
        if lastInstant.bytes.elementsEqual(arena[range]) { return lastInstant.seconds }
        let seconds = (try? ReportRecord.instant(String(decoding: arena[range], as: UTF8.self)))?.secondsSinceEpoch
        lastInstant = (Array(arena[range]), seconds)
        return seconds
    }

    static func hexDigit(_ byte: UInt8, upper: Bool) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x61...0x66: byte - 0x61 + 10
        case 0x41...0x46 where upper: byte - 0x41 + 10
        default: nil
        }
    }

    /// A report token (16 lower-case hex digits) as 64 bits.
    static func hexToken(_ bytes: [UInt8]) -> UInt64? {
        guard bytes.count == 16 else { return nil }
        return bytes.withUnsafeBufferPointer { token($0.baseAddress!) }
    }

    /// The 16 lower-case hex digits at `digits` as 64 bits, without a branch per digit: random digits make any such
    /// branch a coin toss the processor loses half the time.
    @inline(__always) static func token(_ digits: UnsafePointer<UInt8>) -> UInt64? {
        var token: UInt64 = 0
        var valid: UInt8 = 1
        for offset in 0..<16 {
            let byte = digits[offset]
            let digit: UInt8 = (byte &- 0x30) < 10 ? 1 : 0
            let letter: UInt8 = (byte &- 0x61) < 6 ? 1 : 0
            valid &= digit | letter
            // '0'-'9' are 0x30-0x39, 'a'-'f' 0x61-0x66: the low nibble, plus 9 for letters.
            token = token << 4 | UInt64((byte & 0x0F) &+ 9 &* (byte >> 6))
        }
        return valid == 1 ? token : nil
    }
}

/// A read position in a line.
private struct Cursor {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0

    var peek: UInt8? { index < bytes.count ? bytes[index] : nil }
    var atEnd: Bool { index >= bytes.count }

    static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }

    mutating func skipSpace() {
        while index < bytes.count, Self.isSpace(bytes[index]) { index += 1 }
    }

    mutating func take(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    mutating func take(literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        for offset in 0..<count where bytes[index + offset] != literal.utf8Start[offset] { return false }
        index += count
        return true
    }
}
