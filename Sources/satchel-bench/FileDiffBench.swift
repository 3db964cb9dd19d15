// satchel-bench file-diff: the file diff's encoder and decoder from the command line, for tools/bench-diff and for
// end-to-end tests that need real or hostile diffs.
//
//   satchel-bench file-diff encode [tuning] <from> <to> <out>     one diff; prints {"source","target","diff","seconds","cpu_seconds"}
//   satchel-bench file-diff apply <from> <diff> <out>             applies one; prints {"target","seconds","cpu_seconds"}; a refusal
//                                                                 prints its FileDiffError on stderr and exits 1
//   satchel-bench file-diff encode-batch [tuning] <list>          each line of <list>: from<TAB>to<TAB>out; a JSON line each
//   satchel-bench file-diff apply-batch <list>                    each line: from<TAB>diff<TAB>out; a JSON line each
//   satchel-bench file-diff header <diff>                         what the diff declares, as JSON
//   satchel-bench file-diff hostile <kind> <from> <to> <out>      a diff from <from> to <to> made hostile: huge-window
//                                                                 (declares a 1 GiB source), huge-target (a 1 GiB target),
//                                                                 longer (declares one byte less than it writes),
//                                                                 shorter (one byte more), corrupt (a deflated stream
//                                                                 damaged)
// Tuning (for measuring the encoder; the defaults are FileDiffEncoder.encode's): --min-match N --min-repeat N
// --chain N --nice N --good-repeat N --no-lazy --level N. Times are the encoder's or decoder's own, files read first.
import Foundation
import SatchelDiff
import SatchelPublishing

func fileDiffCommand(_ arguments: [String]) -> Int32 {
    var arguments = arguments
    guard !arguments.isEmpty else { return fileDiffUsage() }
    let command = arguments.removeFirst()
    var tuning = FileDiffEncoder.Tuning.standard
    var positional: [String] = []
    var index = 0
    while index < arguments.count {
        let argument = arguments[index]
        let value = index + 1 < arguments.count ? Int(arguments[index + 1]) : nil
        switch argument {
        case "--no-lazy": tuning.lazy = false
        case "--min-match", "--min-repeat", "--chain", "--nice", "--good-repeat", "--level":
            guard let value else { return fileDiffUsage() }
            switch argument {
            case "--min-match": tuning.minimumMatch = value
            case "--min-repeat": tuning.minimumRepeat = value
            case "--chain": tuning.chainDepth = value
            case "--nice": tuning.niceLength = value
            case "--good-repeat": tuning.goodRepeat = value
            default: tuning.deflateLevel = Int32(value)
            }
            index += 1
        default: positional.append(argument)
        }
        index += 1
    }
    do {
        switch (command, positional.count) {
        case ("encode", 3):
            print(try encodeOne(positional[0], positional[1], positional[2], tuning: tuning))
        case ("encode-batch", 1):
            for line in try lines(positional[0]) {
                print(try encodeOne(line[0], line[1], line[2], tuning: tuning))
            }
        case ("apply", 3):
            let (line, failed) = try applyOne(positional[0], positional[1], positional[2])
            print(line)
            return failed ? 1 : 0
        case ("apply-batch", 1):
            var failures: Int32 = 0
            for line in try lines(positional[0]) {
                let (text, failed) = try applyOne(line[0], line[1], line[2])
                print(text)
                if failed { failures = 1 }
            }
            return failures
        case ("header", 1):
            let header = try FileDiff.header(of: try read(positional[0]))
            let streams = header.streams.map {
                "{\"kind\":\"\($0.kind)\",\"encoding\":\($0.encoding.rawValue),\"decoded\":\($0.decodedSize),\"encoded\":\($0.encodedSize)}"
            }
            print("{\"version\":\(header.version),\"source\":\(header.sourceSize),\"target\":\(header.targetSize),\"header\":\(header.headerSize),"
                  + "\"memory\":\(header.memoryNeeded),\"streams\":[\(streams.joined(separator: ","))]}")
        case ("hostile", 4):
            let diff = try hostile(positional[0], from: try read(positional[1]), to: try read(positional[2]))
            try Data(diff).write(to: URL(fileURLWithPath: positional[3]))
        default:
            return fileDiffUsage()
        }
    } catch {
        FileHandle.standardError.write(Data("satchel-bench file-diff: \(error)\n".utf8))
        return 1
    }
    return 0
}

private func fileDiffUsage() -> Int32 {
    FileHandle.standardError.write(Data("""
        usage: satchel-bench file-diff encode [tuning] <from> <to> <out> | apply <from> <diff> <out>
               | encode-batch [tuning] <list> | apply-batch <list> | header <diff>
               | hostile huge-window|huge-target|longer|shorter|corrupt <from> <to> <out>

        """.utf8))
    return 64
}

private struct BenchError: Error, CustomStringConvertible {
    let description: String
}

private func read(_ path: String) throws -> [UInt8] {
    guard let data = FileManager.default.contents(atPath: path) else { throw BenchError(description: "cannot read \(path)") }
    return [UInt8](data)
}

private func lines(_ path: String) throws -> [[String]] {
    try String(decoding: read(path), as: UTF8.self).split(separator: "\n").map { line in
        let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 3 else { throw BenchError(description: "\(path): a line without three tab-separated paths") }
        return fields
    }
}

private func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

/// This process's CPU time: on a shared machine it is what the work cost, where wall time also counts the waits.
private func cpuSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

private func encodeOne(_ from: String, _ to: String, _ out: String, tuning: FileDiffEncoder.Tuning) throws -> String {
    let source = try read(from)
    let target = try read(to)
    let start = ContinuousClock.now
    let cpu = cpuSeconds()
    let diff = FileDiffEncoder.encode(source: source, target: target, tuning: tuning, limits: .device)
    let times = "\"seconds\":\(seconds(since: start)),\"cpu_seconds\":\(cpuSeconds() - cpu)"
    guard let diff else { return "{\"source\":\(source.count),\"target\":\(target.count),\"diff\":null,\(times)}" }
    try Data(diff).write(to: URL(fileURLWithPath: out))
    return "{\"source\":\(source.count),\"target\":\(target.count),\"diff\":\(diff.count),\(times)}"
}

private func applyOne(_ from: String, _ diffPath: String, _ out: String) throws -> (String, Bool) {
    let source = try read(from)
    let diff = try read(diffPath)
    let start = ContinuousClock.now
    let cpu = cpuSeconds()
    let target: [UInt8]
    do throws(FileDiffError) {
        target = try FileDiff.apply(diff, to: source)
    } catch {
        FileHandle.standardError.write(Data("satchel-bench file-diff apply: \(error)\n".utf8))
        let quoted = error.description.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return ("{\"error\":\"\(quoted)\"}", true)
    }
    let times = "\"seconds\":\(seconds(since: start)),\"cpu_seconds\":\(cpuSeconds() - cpu)"
    try Data(target).write(to: URL(fileURLWithPath: out))
    return ("{\"target\":\(target.count),\(times)}", false)
}

/// A real diff from `source` to `target`, rewritten to be refused: its header's sizes changed, or a stream damaged.
private func hostile(_ kind: String, from source: [UInt8], to target: [UInt8]) throws -> [UInt8] {
    guard let diff = FileDiffEncoder.encode(source: source, target: target) else { throw BenchError(description: "the pair is past the limits") }
    let header = try FileDiff.header(of: diff)
    var sourceSize = header.sourceSize
    var targetSize = header.targetSize
    var streams = header.streams.map { (encoding: $0.encoding, decoded: $0.decodedSize, bytes: Array(diff[$0.offset..<($0.offset + $0.encodedSize)])) }
    switch kind {
    case "huge-window": sourceSize = 1 << 30
    case "huge-target": targetSize = 1 << 30
    case "longer": targetSize -= 1
    case "shorter": targetSize += 1
    case "corrupt":
        // A deflate stream whose first block has the reserved type 0b11: zlib refuses it ("invalid block type").
        if let index = streams.firstIndex(where: { $0.encoding == .deflate && !$0.bytes.isEmpty }) {
            streams[index].bytes[0] |= 0b110
        } else {
            let literals = Int(FileDiffStream.literals.rawValue)
            streams[literals] = (encoding: .deflate, decoded: streams[literals].decoded, bytes: [0xFF])
        }
    default: throw BenchError(description: "no hostile kind \(kind)")
    }
    guard targetSize >= 0 else { throw BenchError(description: "an empty target cannot be shorter") }
    var rewritten = FileDiffFormat.magic + [header.version]
    Varint.append(sourceSize, to: &rewritten)
    Varint.append(targetSize, to: &rewritten)
    for stream in streams {
        rewritten.append(stream.encoding.rawValue)
        Varint.append(stream.decoded, to: &rewritten)
        if stream.encoding == .deflate { Varint.append(stream.bytes.count, to: &rewritten) }
    }
    return rewritten + streams.flatMap(\.bytes)
}
