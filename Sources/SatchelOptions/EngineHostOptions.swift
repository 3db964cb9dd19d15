import ArgumentParser
import SatchelEngine

/// How an engine host presents packages to pages, shared by `satchel serve` and the WebKitGTK viewer
/// (`integrations/webkitgtk`, `satchel-webview`), so the flags mean the same in both.
public struct EngineHostOptions: ParsableArguments {
    @Flag(help: "Inject the body hook into pages (a user script in the viewer; into served HTML in satchel serve).")
    public var injectHook = false

    @Option(help: "Host assumed when a request or URL names none (origin-mode requests; a bare path given to the viewer).")
    public var defaultHost: String?

    @Flag(help: "Restore bodies without the hook's proof of origin, as legacy hooks (a BODY header, pair-encoded POST_DATA) send them. Any page content can then forge a cookie-bearing POST to the packages' origins.")
    public var acceptUnprovenBodies = false

    public init() {}

    /// The hook's configuration for these origins, or nil without `--inject-hook`. The engine host adds the
    /// launch's proof secret.
    public func hookConfiguration(origins: [String]) -> HookScript.Configuration? {
        injectHook ? HookScript.Configuration(origins: origins) : nil
    }

    /// Whether restored bodies must carry this launch's proof: a fresh secret per launch, unless
    /// `--accept-unproven-bodies`.
    public var bodyProof: BodyProofPolicy { acceptUnprovenBodies ? .notRequired : .required(.random()) }
}
