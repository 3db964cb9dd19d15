import ArgumentParser
import SatchelCore
import SatchelEngine

extension Satchel {
    struct HookScriptCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "hook-script",
            abstract: "Print the JavaScript body hook, configured, for a WKUserScript (document start) or a page.",
            discussion: "Small text bodies go in a header, larger or binary ones through the body store, urlencoded forms as POST_DATA on the action URL.")

        @Option(name: .customLong("origin"), help: "An origin whose requests are rewritten (repeatable), e.g. https://m.shop.com or satchel://m.shop.com.")
        var origins: [String] = []
        @Option(help: "Text bodies whose encoded length exceeds this go to the body store.")
        var headerThreshold: Int = 8 << 10
        @Option(help: "Header that carries small bodies.")
        var bodyHeader: String = "X-Satchel-Body"
        @Option(help: "Query parameter that carries small urlencoded forms.")
        var queryParameter: String = "POST_DATA"
        @Option(help: "The local server's body store path.")
        var bodyEndpoint: String = HookScript.Configuration.defaultBodyEndpoint
        @Option(help: "The web view's script message handler name.")
        var messageHandler: String = HookScript.Configuration.defaultMessageHandler
        @Option(help: "The engine's body-proof secret for this launch (base64url, BodyProofSecret.text): the hook proves every body it moves with it.")
        var proofSecret: String?
        @Flag(help: "A hook without proofs, for an engine that accepts unproven bodies (any page content can then forge body-bearing requests).")
        var withoutProof = false

        func validate() throws {
            guard !origins.isEmpty else { throw ValidationError("at least one --origin is required: the hook rewrites only requests to the app's own origins") }
            guard (proofSecret != nil) != withoutProof else {
                throw ValidationError("give --proof-secret (the engine's secret for this launch) or, for an engine that accepts unproven bodies, --without-proof")
            }
            if let proofSecret {
                do { _ = try BodyProofSecret(text: proofSecret) } catch { throw ValidationError("--proof-secret: \(error)") }
            }
            guard headerThreshold > 0, headerThreshold <= BodyChannels().maxHeaderValueBytes else {
                throw ValidationError("--header-threshold must be between 1 and \(BodyChannels().maxHeaderValueBytes)")
            }
        }

        func run() throws {
            var channels = BodyChannels()
            channels.headerNames = [bodyHeader] + channels.headerNames.filter { $0 != bodyHeader }
            channels.queryParameter = queryParameter
            print(HookScript.render(HookScript.Configuration(
                channels: channels, origins: origins, headerThreshold: headerThreshold, bodyEndpoint: bodyEndpoint,
                messageHandler: messageHandler, proofSecret: try proofSecret.map { try BodyProofSecret(text: $0) })), terminator: "")
        }
    }
}
