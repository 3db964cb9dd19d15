import Foundation
import SourceChecks
import Testing

private let code = """
    import Foundation
    func size(_ path: String) -> Int64 {
        var info = stat()
        guard stat(path, &info) == 0 else { return 0 }
        return Int64(info.st_size)
    }
    let flag = UserDefaults.standard.bool(forKey: "x")
    #if os(macOS)
    let up = ProcessInfo.processInfo.systemUptime
    #endif
    // mach_absolute_time() in a comment does not count
    """

private func uses(_ source: String) -> [RequiredReasonUse] {
    let (uses, problems) = PrivacyScan.uses(in: [SourceFile(path: "t.swift", source: source)])
    #expect(problems.isEmpty)
    return uses
}

/// A manifest with the given categories, each with its given reasons.
private func manifest(_ categories: [(String, [String])], tracking: String = "<false/>", collected: Bool = true) throws -> PrivacyManifest {
    let entries = categories.map { category, reasons in
        "<dict><key>NSPrivacyAccessedAPIType</key><string>\(category)</string><key>NSPrivacyAccessedAPITypeReasons</key><array>"
            + reasons.map { "<string>\($0)</string>" }.joined() + "</array></dict>"
    }.joined()
    let xml = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0"><dict>
        <key>NSPrivacyTracking</key>\(tracking)
        \(collected ? "<key>NSPrivacyCollectedDataTypes</key><array/>" : "")
        <key>NSPrivacyAccessedAPITypes</key><array>\(entries)</array>
        </dict></plist>
        """
    return try PrivacyManifest(data: Data(xml.utf8))
}

private let timestamps = "NSPrivacyAccessedAPICategoryFileTimestamp"
private let defaults = "NSPrivacyAccessedAPICategoryUserDefaults"
private let bootTime = "NSPrivacyAccessedAPICategorySystemBootTime"

@Test func findsCallsAndTypesButNotTheStructInitialiserOrInactiveCode() {
    let found = uses(code)
    #expect(found.map { "\($0.line) \($0.symbol) \($0.category)" } == [
        "4 stat \(timestamps)",
        "7 UserDefaults \(defaults)",
    ])
}

@Test(arguments: [
    ("var info = stat()\nlet size = MemoryLayout<stat>.size", [String]()),
    ("fstat(fd, &info)", ["fstat"]),
    ("Darwin.stat(path, &info)", ["stat"]),
    ("let t = mach_absolute_time()", ["mach_absolute_time"]),
    ("let u = ProcessInfo.processInfo.systemUptime", ["systemUptime"]),
    ("let a = try FileManager.default.attributesOfItem(atPath: p)[.modificationDate]", ["modificationDate"]),
    ("let v = try url.resourceValues(forKeys: [.volumeAvailableCapacityForImportantUsageKey])", ["volumeAvailableCapacityForImportantUsageKey"]),
    ("statfs(path, &fs)\nvar fs = statfs()", ["statfs"]),
    ("let modes = UITextInputMode.activeInputModes", ["activeInputModes"]),
])
func symbolUses(source: String, symbols: [String]) {
    #expect(uses(source).map(\.symbol) == symbols)
}

@Test func manifestMissingACategory() throws {
    let problems = try manifest([(timestamps, ["C617.1"])]).problems(for: uses(code))
    #expect(problems == ["missing: \(defaults) is used (1 uses, first t.swift:7 UserDefaults) but not declared"])
}

@Test func manifestListingAnUnusedCategory() throws {
    let problems = try manifest([(timestamps, ["C617.1"]), (defaults, ["CA92.1"]), (bootTime, ["35F9.1"])]).problems(for: uses(code))
    #expect(problems == ["unused: \(bootTime) is declared, but no scanned code uses it"])
}

@Test func manifestThatMatches() throws {
    #expect(try manifest([(defaults, ["CA92.1"]), (timestamps, ["C617.1", "0A2A.1"])]).problems(for: uses(code)).isEmpty)
}

@Test func reasonsMustBeApplesCodesForThatCategory() throws {
    let problems = try manifest([(timestamps, []), (defaults, ["35F9.1"])]).problems(for: uses(code))
    #expect(problems == [
        "\(timestamps) has no NSPrivacyAccessedAPITypeReasons",
        "\(defaults): 35F9.1 is not one of Apple's reasons for it (CA92.1, 1C8F.1, C56D.1, AC6B.1)",
    ])
}

@Test func trackingMustBeFalseAndCollectedDataTypesPresent() throws {
    let problems = try manifest([(timestamps, ["C617.1"]), (defaults, ["CA92.1"])], tracking: "<true/>", collected: false).problems(for: uses(code))
    #expect(problems == [
        "NSPrivacyTracking is true (expected false)",
        "NSPrivacyCollectedDataTypes is missing (an empty array is fine)",
    ])
}

@Test func theExampleFixtureParses() throws {
    let path = repositoryRoot.appendingPathComponent("tools/source-checks/Fixtures/example.xcprivacy").path
    let example = try PrivacyManifest(contentsOf: path)
    #expect(example.tracking == false)
    #expect(example.hasCollectedDataTypes)
    #expect(example.accessedAPITypes.map(\.category) == [timestamps])
}
