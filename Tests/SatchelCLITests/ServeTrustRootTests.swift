import Foundation
import SatchelTestSupport
import Testing

private struct ServeDidNotStart: Error, CustomStringConvertible {
    let firstLine: String
    var description: String { "satchel serve did not start; it printed: \(firstLine)" }
}

/// `satchel serve` running as a process: started with its arguments, stopped at the end of the test.
private final class ServeProcess {
    let child: ChildProcess
    let base: String

    init(_ arguments: [String]) async throws {
        child = try ChildProcess(CLI.binary, ["serve"] + arguments)
        // The first line says where it listens: `listening on http://127.0.0.1:PORT`.
        let said = await child.output(containing: "\n", on: .stdout) ?? ""
        let text = said.split(separator: "\n").first.map(String.init)?.trimmingCharacters(in: .whitespaces) ?? ""
        guard text.hasPrefix("listening on ") else {
            child.send(SIGTERM)
            throw ServeDidNotStart(firstLine: text)
        }
        base = String(text.dropFirst("listening on ".count))
    }

    /// Ends it (SIGTERM); nothing waits for it to go, its port being its own.
    func stop() {
        child.send(SIGTERM)
    }
}

@Suite("satchel serve --trust-root")
struct ServeTrustRootTests {
    @Test("an https upstream with its own CA is reached with --trust-root and refused (502, TLS) without; a missing file is a usage error")
    func trustRoot() async throws {
        try await withTemporaryFolder { folder in
            let (certificate, key) = try await makeLocalhostCertificate(in: folder)
            let origin = try await TestOrigin(tls: (certificate, key))
            defer { origin.stop() }
            let common = [
                "--store", folder + "/store", "--port", "0", "--no-access-log", "--default-host", "up.example",
                "--allow-upstream", "up.example", "--upstream", "up.example=\(origin.base)",
            ]

            let trusting = try await ServeProcess(common + ["--trust-root", certificate])
            defer { trusting.stop() }
            let echo = try JSONDecoder().decode(TestOrigin.Echo.self, from: Data(try await run("/usr/bin/curl", ["-sf", trusting.base + "/echo"]).utf8))
            #expect(echo.headers.first == ["Host", "localhost:\(origin.port)"])

            let plain = try await ServeProcess(common)
            defer { plain.stop() }
            let refused = try await run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code} %header{x-satchel-error}", plain.base + "/echo"])
            #expect(refused.hasPrefix("502 "), "\(refused)")
            #expect(refused.contains("TLS"), "\(refused)")

            let missing = try await CLI.run(["serve", "--store", folder + "/store", "--port", "0", "--trust-root", folder + "/missing.pem"])
            #expect(missing.status != 0)
            #expect(missing.stderr.contains("--trust-root: cannot read \(folder)/missing.pem"), "\(missing.stderr)")

            // A file that is there but holds no certificate: refused before listening, naming the file.
            try Data("not a certificate\n".utf8).write(to: URL(fileURLWithPath: folder + "/garbage.pem"))
            let garbage = try await CLI.run(["serve", "--store", folder + "/store", "--port", "0", "--trust-root", folder + "/garbage.pem"])
            #expect(garbage.status != 0)
            #expect(garbage.stderr.hasPrefix("error: --trust-root: cannot load the trust roots \(folder)/garbage.pem"), "\(garbage.stderr)")
        }
    }
}
