import Foundation
import Testing

@Suite("docs/apple.md's code")
struct AppleGuideTests {
    @Test("every swift block of docs/apple.md is, in order, a region the Apple type-check compiles (AppleGuide.swift)")
    func guideMatchesCompiledCode() throws {
        let guide = try Repository.text("docs/apple.md")
        let blocks = guide.components(separatedBy: "```swift\n").dropFirst().map { $0.components(separatedBy: "```")[0] }
        let compiled = try Repository.text("integrations/apple-typecheck/Sources/apple-typecheck/AppleGuide.swift")
        let regions = compiled.components(separatedBy: "// BEGIN APPLE GUIDE\n").dropFirst().map { $0.components(separatedBy: "// END APPLE GUIDE")[0] }
        #expect(regions.count >= 3, "AppleGuide.swift has \(regions.count) regions")
        #expect(blocks.count == regions.count, "docs/apple.md has \(blocks.count) swift blocks, AppleGuide.swift \(regions.count) regions")
        for (index, (block, region)) in zip(blocks, regions).enumerated() {
            #expect(block == region, "swift block \(index + 1) of docs/apple.md differs from region \(index + 1) of AppleGuide.swift")
        }
    }
}
