import Foundation

/// The per-file binary diffs published for one version (docs/formats.md, "Diffs"): each leads from a content some
/// older version (or a built-in) holds to a content of this version, and is published once, content-addressed, at
/// `diffs/<first two hex digits of to>/<from>-<to>` under the catalog entry's `content.diffs.base`. The index is
/// canonical JSON, gzip-compressed, named by the entry's `content.diffs`; older updaters never look at it.
public struct FileDiffIndex: Sendable, Equatable {
    public struct Diff: Hashable, Sendable {
        /// SHA-256 of the content the diff applies to.
        public var from: String
        /// SHA-256 of the content it makes: what the result is checked against before use.
        public var to: String
        /// The diff file's size and SHA-256: what its download is checked against.
        public var size: Int64
        public var sha256: String

        public init(from: String, to: String, size: Int64, sha256: String) {
            self.from = from
            self.to = to
            self.size = size
            self.sha256 = sha256
        }

        /// The diff file's path under the diffs' base URL.
        public var path: String { FileDiffIndex.path(from: from, to: to) }
    }

    public var id: PackageID
    public var version: SemanticVersion
    /// Sorted by `to`, then `from`; no pair twice.
    public private(set) var diffs: [Diff]

    public init(id: PackageID, version: SemanticVersion, diffs: [Diff]) {
        self.id = id
        self.version = version
        var seen = Set<[String]>()
        self.diffs = diffs.filter { seen.insert([$0.to, $0.from]).inserted }.sorted { ($0.to, $0.from) < ($1.to, $1.from) }
    }

    public static func path(from: String, to: String) -> String { "\(to.prefix(2))/\(from)-\(to)" }

    /// Largest index accepted, uncompressed: about 60,000 diffs. `satchel catalog` lists no more than fit.
    public static let maxBytes = DocumentLimits.diffIndex
    /// What one listed diff takes in the index at most (two SHA-256 pairs, a size, the punctuation), for the writer's
    /// bound.
    public static let maxBytesPerDiff = 4 * 64 + 20 + 48

    public var canonicalBytes: [UInt8] {
        CanonicalJSON.object([
            "id": .string(id.value), "version": .string(version.description),
            "diffs": .array(diffs.map { diff in
                .object(["from": .string(diff.from), "to": .string(diff.to), "size": .integer(diff.size), "sha256": .string(diff.sha256)])
            }),
        ]).bytes
    }

    /// Reads an index in canonical form only (an unknown field, or another order, is refused: the updater then takes
    /// objects, as an updater from before diffs does).
    public static func decode(_ bytes: [UInt8]) throws(FileDiffIndexError) -> FileDiffIndex {
        guard bytes.count <= maxBytes else { throw .malformed("\(bytes.count) bytes, more than \(maxBytes)") }
        struct Wire: Decodable {
            struct Row: Decodable {
                let from: String
                let to: String
                let size: Int64
                let sha256: String
            }
            let id: PackageID
            let version: SemanticVersion
            let diffs: [Row]
        }
        let wire: Wire
        do { wire = try JSONDecoder().decode(Wire.self, from: Data(bytes)) } catch { throw .malformed("\(error)") }
        for row in wire.diffs {
            guard Digests.isSHA256Hex(row.from), Digests.isSHA256Hex(row.to), Digests.isSHA256Hex(row.sha256) else {
                throw .malformed("a diff's from, to and sha256 must be 64 lower-case hex digits")
            }
            guard row.from != row.to else { throw .malformed("a diff from \(row.from) to itself") }
            guard row.size > 0 else { throw .malformed("a diff of size \(row.size)") }
        }
        let index = FileDiffIndex(
            id: wire.id, version: wire.version, diffs: wire.diffs.map { Diff(from: $0.from, to: $0.to, size: $0.size, sha256: $0.sha256) })
        guard index.canonicalBytes == bytes else { throw .malformed("not in canonical form") }
        return index
    }

    /// For each content in `needed` (its SHA-256 and the size of its object), the smallest listed diff from a content
    /// in `held` that weighs less than the object; contents with none are absent (they go as objects). One request
    /// either way, so the lighter is the smaller (`bytes + requests × UpdatePlan.bytesPerRequest`).
    public func routes(for needed: [String: Int64], from held: (String) -> Bool) -> [String: Diff] {
        var chosen: [String: Diff] = [:]
        for diff in diffs {
            guard let object = needed[diff.to], diff.size < object, held(diff.from) else { continue }
            if let best = chosen[diff.to], best.size <= diff.size { continue }
            chosen[diff.to] = diff
        }
        return chosen
    }
}

public enum FileDiffIndexError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformed(String)

    public var description: String {
        switch self {
        case .malformed(let why): "diff index is malformed: \(why)"
        }
    }
}

/// Which file of a base version a changed file most likely came from (docs/formats.md, "Diffs"), for the publisher to
/// diff against: the same path; else the same path with its content hash taken out of the name (bundlers rename a
/// chunk when its bytes change: webpack's `main.3f2a1b9c.js` and `123.3f2a1b9c.js`, Rollup and Vite's
/// `index-B7x_k2Qa.js`, esbuild's `app-4KQZ6F2M.js`), the nearest in size when several share that name. Pure.
public enum ContentPairing {
    /// Each file of `target` whose content `base` lacks, with the base file it pairs with; files with none are left out.
    public static func predecessors(of target: [FileRecord], in base: [FileRecord]) -> [(target: FileRecord, base: FileRecord)] {
        let baseContents = Set(base.map(\.sha256))
        let byPath = Dictionary(base.map { ($0.path, $0) }) { first, _ in first }
        var byStripped: [String: [FileRecord]] = [:]
        for file in base {
            if let key = strippedPath(file.path.value) { byStripped[key, default: []].append(file) }
        }
        var pairs: [(FileRecord, FileRecord)] = []
        for file in target where !baseContents.contains(file.sha256) {
            if let same = byPath[file.path], same.size > 0 {
                pairs.append((file, same))
            } else if let key = strippedPath(file.path.value), let group = byStripped[key],
                let nearest = group.filter({ $0.size > 0 }).min(by: { abs($0.size - file.size) < abs($1.size - file.size) })
            {
                pairs.append((file, nearest))
            }
        }
        return pairs
    }

    /// The path with each hash-like part of its last component replaced by `*`; nil when the name has none.
    public static func strippedPath(_ path: String) -> String? {
        let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        let name = path[slash...]
        var out = ""
        var token = ""
        var stripped = false
        func flush() {
            if isHashLike(token) {
                out += "*"
                stripped = true
            } else {
                out += token
            }
            token = ""
        }
        for character in name {
            if character == "." || character == "-" {
                flush()
                out.append(character)
            } else {
                token.append(character)
            }
        }
        flush()
        // A name that is only a hash (webpack's `[contenthash].js`, Expo's `assets/<md5>`) says nothing of what the
        // file is: every such name of a folder would share the key. Those go to the content rule instead.
        guard stripped, out.contains(where: { $0 != "*" && $0 != "." && $0 != "-" }) else { return nil }
        let stem = out.split(separator: ".").first.map(String.init) ?? ""
        guard stem.contains(where: { $0 != "*" && $0 != "-" }) else { return nil }
        return String(path[..<slash]) + out
    }

    /// A content hash as bundlers print it: 8 to 64 characters of letters and digits (and `_`, base64url's) mixing
    /// both. Words (`chunk`, `vendors`, `LICENSE`) and numbers (webpack's chunk ids, which
    /// stay put across builds) are not.
    static func isHashLike<S: StringProtocol>(_ token: S) -> Bool {
        guard token.count >= 8, token.count <= 64 else { return false }
        var digits = 0, letters = 0
        for scalar in token.unicodeScalars {
            switch scalar {
            case "0"..."9": digits += 1
            case "a"..."z", "A"..."Z": letters += 1
            case "_": break
            default: return false
            }
        }
        return digits > 0 && letters > 0
    }
}
