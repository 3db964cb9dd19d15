import Foundation
import Testing

@Suite("The documentation's links")
struct LinkTests {
    @Test("every relative link in README.md and docs/ resolves to a file, and every #anchor to a heading there")
    func linksResolve() throws {
        let files = try Repository.markdownFiles()
        #expect(files.contains("docs/formats.md"))
        var documents: [String: MarkdownDocument] = [:]
        for file in files { documents[file] = MarkdownDocument(path: file, text: try Repository.text(file)) }
        var checked = 0
        for file in files {
            let folder = (file as NSString).deletingLastPathComponent
            for (line, target) in documents[file]!.links {
                if target.hasPrefix("http://") || target.hasPrefix("https://") || target.hasPrefix("mailto:") { continue }
                checked += 1
                let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                let pathPart = String(parts[0])
                let resolved = pathPart.isEmpty ? file : ((folder as NSString).appendingPathComponent(pathPart) as NSString).standardizingPath
                #expect(Repository.exists(resolved), "\(file):\(line): \(target) names \(resolved), which does not exist")
                guard parts.count == 2, resolved.hasSuffix(".md") else { continue }
                let anchors = try documents[resolved]?.anchors ?? MarkdownDocument(path: resolved, text: Repository.text(resolved)).anchors
                #expect(anchors.contains(String(parts[1])), "\(file):\(line): \(target) has no heading #\(parts[1]) in \(resolved)")
            }
        }
        #expect(checked > 50, "the link scanner found only \(checked) links")
    }

    @Test("the anchor rule is GitHub's", arguments: [
        ("Schema rules for older readers", "schema-rules-for-older-readers"),
        ("`satchel serve`: the local server", "satchel-serve-the-local-server"),
        ("0012: NIOFetcher replaces AsyncHTTPClient", "0012-niofetcher-replaces-asynchttpclient"),
        ("Activate, confirm and rollback", "activate-confirm-and-rollback"),
    ])
    func slugs(title: String, anchor: String) {
        #expect(MarkdownDocument.slug(title) == anchor)
    }

    @Test("the README is a front door: at most 200 lines, and no file cites what lies outside the repository")
    func frontDoor() throws {
        let readme = try Repository.text("README.md")
        #expect(readme.split(separator: "\n", omittingEmptySubsequences: false).count <= 201)
        for file in try Repository.markdownFiles() {
            let text = try Repository.text(file)
            // The sibling folder the project started from, spelled in parts so this check is not itself a citation.
            let outside = ["..", "shared", ""].joined(separator: "/")
            #expect(!text.contains(outside) && !text.contains("DESIGN.md"), "\(file) cites a file outside the repository")
        }
    }
}
