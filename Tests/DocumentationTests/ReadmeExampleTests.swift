import Foundation
import Testing

@Suite("The README's library example")
struct ReadmeExampleTests {
    @Test("the README's swift block is the example this target compiles (ReadmeExample.swift), line for line")
    func readmeMatchesCompiledExample() throws {
        let readme = try Repository.text("README.md")
        let blocks = readme.components(separatedBy: "```swift\n").dropFirst().map { $0.components(separatedBy: "```")[0] }
        #expect(blocks.count == 1, "the README has \(blocks.count) swift blocks; the test compiles exactly one")
        let block = try #require(blocks.first).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let compiled = try Repository.text("Tests/DocumentationTests/ReadmeExample.swift")
            .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let begin = try #require(compiled.firstIndex { $0.contains("BEGIN README EXAMPLE") })
        let end = try #require(compiled.firstIndex { $0.contains("END README EXAMPLE") })
        let body = compiled[(begin + 1)..<end].map { $0.hasPrefix("    ") ? String($0.dropFirst(4)) : $0 }
        let imports = compiled.filter { $0.hasPrefix("import ") }
        let readmeImports = block.filter { $0.hasPrefix("import ") }
        let readmeBody = Array(block.filter { !$0.hasPrefix("import ") }.drop { $0.isEmpty }.reversed().drop { $0.isEmpty }.reversed())
        #expect(readmeImports == imports)
        #expect(readmeBody == body, "README.md's example and ReadmeExample.swift differ")
    }
}
