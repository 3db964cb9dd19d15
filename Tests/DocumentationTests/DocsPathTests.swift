import Foundation
import Testing

/// Every `docs/...` path the repository's own files name, in comments, help texts, scripts and documents alike, exists,
/// and a `#anchor` after a Markdown document is a heading there: a renamed or removed document leaves no reader at a
/// dead end.
@Suite("docs/ paths named anywhere exist")
struct DocsPathTests {
    /// Folders (and files) read: what a reader of the code and its tools meets.
    static let roots = ["Sources", "Tests", "tools", "fuzz", "integrations", "docs", "packages", "Package.swift", "README.md", ".ci"]
    static let readable: Set<String> = ["swift", "md", "py", "sh", "js", "mjs", "json", "txt", ""]

    struct Mention: CustomStringConvertible {
        var file: String
        var line: Int
        var path: String
        var anchor: String?
        var description: String { "\(file):\(line): \(path)\(anchor.map { "#" + $0 } ?? "")" }
    }

    /// The `docs/...` mentions of one file's text. A mention starts where no path or URL character comes before
    /// `docs/` (so `https://…/docs/x` and `Sources/docs/y` are not ours); trailing punctuation is not part of it. In
    /// Swift, a mention that opens a string literal is test data (a fixture's `"docs/index.html"`), not a reference.
    static func mentions(in text: String, file: String) -> [Mention] {
        var found: [Mention] = []
        let pathCharacters = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./-#")
        let before = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:-")
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let characters = Array(line)
            var index = 0
            while index + 5 <= characters.count {
                guard String(characters[index..<index + 5]) == "docs/", index == 0 || !before.contains(characters[index - 1]) else {
                    index += 1
                    continue
                }
                var end = index + 5
                while end < characters.count, pathCharacters.contains(characters[end]) { end += 1 }
                var mention = String(characters[index..<end])
                while let last = mention.last, ".-#/".contains(last) { mention.removeLast() }
                let quoted = file.hasSuffix(".swift") && index > 0 && characters[index - 1] == "\""
                if !quoted, mention.count > 5 {
                    let parts = mention.split(separator: "#", maxSplits: 1).map(String.init)
                    found.append(Mention(file: file, line: number + 1, path: parts[0], anchor: parts.count > 1 ? parts[1] : nil))
                }
                index = end
            }
        }
        return found
    }

    static func files() -> [String] {
        var result: [String] = []
        let fileManager = FileManager.default
        for root in roots {
            let url = Repository.root.appendingPathComponent(root)
            var isFolder: ObjCBool = false
            guard fileManager.fileExists(atPath: url.path, isDirectory: &isFolder) else { continue }
            if !isFolder.boolValue {
                result.append(root)
                continue
            }
            let enumerator = fileManager.enumerator(at: url, includingPropertiesForKeys: [.isDirectoryKey])
            while let item = enumerator?.nextObject() as? URL {
                let name = item.lastPathComponent
                if name.hasPrefix(".build") || name == "node_modules" || name == "corpus" || name == "__pycache__" {
                    enumerator?.skipDescendants()
                    continue
                }
                guard (try? item.resourceValues(forKeys: [.isDirectoryKey]).isDirectory) != true, readable.contains(item.pathExtension) else { continue }
                result.append(String(item.path.dropFirst(Repository.root.path.count + 1)))
            }
        }
        return result.sorted()
    }

    @Test("the scanner finds a mention, its anchor, and leaves URLs, other folders and Swift fixtures alone")
    func scanner() {
        let text = """
            // See docs/formats.md#steps, and docs/decisions/0038-steps-from-the-previous-release.md.
            let url = "https://example.com/docs/guide"; let other = "Sources/docs/x.md"
            try makeTree(folder, ["docs/index.html": "fixture"])
            """
        let found = Self.mentions(in: text, file: "Example.swift")
        #expect(found.map(\.description) == [
            "Example.swift:1: docs/formats.md#steps", "Example.swift:1: docs/decisions/0038-steps-from-the-previous-release.md",
        ])
        #expect(Self.mentions(in: "open(\"docs/performance.md\")", file: "tools/x.py").map(\.path) == ["docs/performance.md"])
    }

    @Test("every docs/ path named in Sources, Tests, tools, fuzz, integrations, docs and the README exists; every anchor is a heading")
    func pathsExist() throws {
        var checked = 0
        var anchors: [String: Set<String>] = [:]
        for file in Self.files() {
            guard let text = try? Repository.text(file) else { continue }
            for mention in Self.mentions(in: text, file: file) {
                checked += 1
                #expect(Repository.exists(mention.path), "\(mention) names a file that does not exist")
                guard let anchor = mention.anchor, mention.path.hasSuffix(".md"), Repository.exists(mention.path) else { continue }
                if anchors[mention.path] == nil {
                    anchors[mention.path] = MarkdownDocument(path: mention.path, text: try Repository.text(mention.path)).anchors
                }
                #expect(anchors[mention.path]!.contains(anchor), "\(mention): \(mention.path) has no heading #\(anchor)")
            }
        }
        #expect(checked > 200, "the scan found only \(checked) docs/ paths")
    }
}
