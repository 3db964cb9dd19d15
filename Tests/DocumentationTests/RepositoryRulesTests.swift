import Foundation
import Testing

/// Rules of the code base that a reader relies on and a compiler cannot enforce.
@Suite("Rules of the code base")
struct RepositoryRulesTests {
    /// Swift files under `folder`, relative to the repository.
    static func swiftFiles(under folder: String) -> [String] {
        let root = Repository.root.appendingPathComponent(folder)
        let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
        var files: [String] = []
        while let url = enumerator?.nextObject() as? URL {
            if url.pathExtension == "swift" { files.append(folder + "/" + url.path.dropFirst(root.path.count + 1)) }
        }
        return files.sorted()
    }

    @Test("the engine and the request rules read request fields as RequestField values, never by a string, so the fields that key the server's reuse cannot miss one")
    func requestFieldsAreTyped() throws {
        // The HTTP cache's rules (Caching/) read response fields and RFC 9111's request directives; its reuse is
        // keyed by its own Vary rules, not by this list.
        let files = Self.swiftFiles(under: "Sources/SatchelEngine")
            + Self.swiftFiles(under: "Sources/SatchelCore/HTTP").filter { !$0.contains("/Caching/") }
        #expect(files.count > 10)
        let pattern = try Regex(#"request\.headers(\[|\.contains\(|\.values\()""#)
        var offenders: [String] = []
        for file in files {
            for (number, line) in try Repository.text(file).split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where line.contains(pattern) {
                offenders.append("\(file):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        #expect(offenders.isEmpty, "read these through RequestField:\n\(offenders.joined(separator: "\n"))")
    }

    @Test("the hosts translate types and do I/O: no host file names a header field or picks a status by number (the request layer and HTTP's named fields and statuses do)")
    func hostsHoldNoPolicyLiterals() throws {
        let hosts = [
            "Sources/SatchelServer/HTTPConnectionHandler.swift", "Sources/SatchelServer/ServerResponder.swift",
            "Sources/SatchelWebKit/SatchelWebViews.swift", "Sources/SatchelWebKit/SatchelSchemeHandler.swift",
            "integrations/webkitgtk/Sources/SatchelWebKitGTK/SatchelWebContext.swift",
            "integrations/webkitgtk/Sources/SatchelWebKitGTK/BodyMessageHandler.swift",
        ]
        let fieldName = try Regex(#""((Content|Cache|Set|X|Sec|If|Access|Transfer|Accept|Last)-[A-Za-z-]+|Location|ETag|Allow|Accept|Range|Origin|Cookie|Vary|Host)""#)
        let status = try Regex(#"(status\s*(==|!=|:|=)\s*|\.error\(|Self\.text\()[1-5][0-9][0-9]\b"#)
        var offenders: [String] = []
        for file in hosts {
            for (number, line) in try Repository.text(file).split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") && (line.contains(fieldName) || line.contains(status)) {
                offenders.append("\(file):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        #expect(offenders.isEmpty, "move these into the request layer, or name them (ResponseField, RequestField, HTTPStatus):\n\(offenders.joined(separator: "\n"))")
    }
}
