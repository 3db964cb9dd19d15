import Foundation

/// The repository's files, found from this source file (Tests/DocumentationTests/), so the tests read the docs that
/// sit beside the code they were built with.
enum Repository {
    static let root: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func text(_ relative: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(relative), encoding: .utf8)
    }

    static func exists(_ relative: String) -> Bool {
        FileManager.default.fileExists(atPath: root.appendingPathComponent(relative).path)
    }

    /// Every Markdown document a reader reaches from the README: the README, everything under docs/, and the READMEs
    /// of the example packages and integrations.
    static func markdownFiles() throws -> [String] {
        var files = ["README.md", "packages/README.md", "integrations/webkitgtk/README.md"]
        let docs = root.appendingPathComponent("docs")
        let enumerator = FileManager.default.enumerator(at: docs, includingPropertiesForKeys: nil)
        while let url = enumerator?.nextObject() as? URL {
            if url.pathExtension == "md" { files.append("docs/" + url.path.dropFirst(docs.path.count + 1)) }
        }
        return files.sorted()
    }
}

/// What a Markdown document links to and which headings it has, outside fenced code blocks.
struct MarkdownDocument {
    let path: String
    let links: [(line: Int, target: String)]
    /// GitHub's anchors of the document's headings.
    let anchors: Set<String>

    init(path: String, text: String) {
        self.path = path
        var links: [(Int, String)] = []
        var anchors = Set<String>()
        var counts: [String: Int] = [:]
        var inFence = false
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.hasPrefix("```") {
                inFence.toggle()
                continue
            }
            if inFence { continue }
            if line.hasPrefix("#") {
                let title = line.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces)
                let slug = Self.slug(title)
                let seen = counts[slug, default: 0]
                counts[slug] = seen + 1
                anchors.insert(seen == 0 ? slug : "\(slug)-\(seen)")
            }
            links += Self.targets(in: String(line)).map { (index + 1, $0) }
        }
        self.links = links
        self.anchors = anchors
    }

    /// GitHub's heading anchor: lower-cased, inline code marks and punctuation dropped, spaces to hyphens.
    static func slug(_ title: String) -> String {
        var slug = ""
        for character in title.lowercased() {
            if character.isLetter || character.isNumber || character == "-" || character == "_" {
                slug.append(character)
            } else if character == " " {
                slug.append("-")
            }
        }
        return slug
    }

    /// The targets of `[text](target)` links on a line, outside inline code spans.
    static func targets(in line: String) -> [String] {
        var result: [String] = []
        var inCode = false
        var index = line.startIndex
        while index < line.endIndex {
            let character = line[index]
            if character == "`" { inCode.toggle() }
            if !inCode, character == "]", line[line.index(after: index)...].hasPrefix("(") {
                let start = line.index(index, offsetBy: 2)
                if let end = line[start...].firstIndex(of: ")") {
                    result.append(String(line[start..<end]))
                    index = end
                }
            }
            index = line.index(after: index)
        }
        return result
    }
}
