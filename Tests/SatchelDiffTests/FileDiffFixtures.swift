import SatchelTestSupport
@testable import SatchelDiff
import SatchelPublishing

/// A diff written field by field, for the refusal tests: any header value, any stream bytes, each stream stored or
/// deflated. `bytes` is exactly what the format says, so a test changes one thing and sees one refusal.
struct CraftedDiff {
    var magic: [UInt8] = FileDiffFormat.magic
    var version: UInt8 = FileDiffFormat.version
    var sourceSize: Int
    var targetSize: Int
    var streams: [FileDiffStream: [UInt8]] = [:]
    var deflated: Set<FileDiffStream> = []
    /// Replaces a stream's declared decoded size (else its real size).
    var declaredSizes: [FileDiffStream: Int] = [:]
    /// Replaces a stream's encoded bytes as written (after deflate, when deflated).
    var encodedOverride: [FileDiffStream: [UInt8]] = [:]
    var trailing: [UInt8] = []

    init(sourceSize: Int, targetSize: Int) {
        self.sourceSize = sourceSize
        self.targetSize = targetSize
    }

    /// Appends one instruction; `address` for the operations that carry one.
    mutating func instruction(_ operation: UInt8, literals: [UInt8] = [], copy: Int, address: Int? = nil) {
        streams[.operations, default: []].append(operation)
        Varint.append(literals.count, to: &streams[.literalLengths, default: []])
        Varint.append(copy, to: &streams[.copyLengths, default: []])
        if let address { Varint.append(address, to: &streams[.addresses, default: []]) }
        streams[.literals, default: []].append(contentsOf: literals)
    }

    var bytes: [UInt8] {
        var diff = magic + [version]
        Varint.append(sourceSize, to: &diff)
        Varint.append(targetSize, to: &diff)
        var payloads: [UInt8] = []
        for kind in FileDiffStream.allCases {
            let decoded = streams[kind] ?? []
            var encoded = deflated.contains(kind) ? RawDeflate.compress(decoded, level: 9)! : decoded
            if let override = encodedOverride[kind] { encoded = override }
            diff.append(deflated.contains(kind) ? FileDiffStreamEncoding.deflate.rawValue : FileDiffStreamEncoding.stored.rawValue)
            Varint.append(declaredSizes[kind] ?? decoded.count, to: &diff)
            // A stored stream's encoded size is its declared size; a deflated one says both.
            if deflated.contains(kind) { Varint.append(encoded.count, to: &diff) }
            payloads += encoded
        }
        return diff + payloads + trailing
    }
}


enum Samples {
    static func random(_ count: Int, seed: UInt64) -> [UInt8] {
        var generator = SeededGenerator(state: seed)
        var bytes = [UInt8](repeating: 0, count: count)
        for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: generator.next()) }
        return bytes
    }

    static func hex(_ generator: inout SeededGenerator, _ count: Int) -> String {
        String((0..<count).map { _ in Array("0123456789abcdef")[Int(generator.next() % 16)] })
    }

    /// A webpack runtime and chunk in the style of a minified bundle: modules, and a map from chunk ids to content
    /// hashes. `release` changes every hash and one module's body, as a rebuild after a small edit does.
    static func bundle(release: UInt64, modules: Int = 400) -> [UInt8] {
        var generator = SeededGenerator(state: 42)
        var hashes = SeededGenerator(state: 1000 + release)
        var text = "(()=>{\"use strict\";var e,r,t,o={},n={};function a(e){var r=n[e];if(void 0!==r)return r.exports;"
        text += "var t=n[e]={id:e,loaded:!1,exports:{}};return o[e].call(t.exports,t,t.exports,a),t.loaded=!0,t.exports}"
        for module in 0..<modules {
            let id = 1000 + Int(generator.next() % 9000)
            let name = hex(&generator, 6)
            text += "\n/***/ \(id):((e,t,n)=>{n.d(t,{\(name):()=>s});var r=n(\(id + 1)),o=n.n(r);"
            text += "const s=function(e){return o()(\"\(name)-\(module)\",{value:e*\(module),label:\"Module \(module)\"})};"
            if module == 123 { text += "console.log(\"edited in release \(release)\");" }
            text += "})"
        }
        text += "\na.u=e=>\"\"+e+\".\"+{"
        for chunk in 0..<120 { text += "\(chunk * 37):\"\(hex(&hashes, 20))\"," }
        text += "}[e]+\".js\";})();\n"
        return Array(text.utf8)
    }
}
