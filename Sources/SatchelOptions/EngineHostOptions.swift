import ArgumentParser
import SatchelEngine

/// How an engine host presents packages to pages, shared by `satchel serve` and the WebKitGTK viewer
/// (`integrations/webkitgtk`, `satchel-webview`), so the flags mean the same in both.
public struct EngineHostOptions: ParsableArguments {
    @Flag(help: "Inject the body hook into pages (a user script in the viewer; into served HTML in satchel serve).")
    public var injectHook = false

    @Option(help: "Host assumed when a request or URL names none (origin-mode requests; a bare path given to the viewer).")
    public var defaultHost: String?

    public init() {}

    /// The hook's configuration for these origins, or nil without `--inject-hook`.
    public func hookConfiguration(origins: [String]) -> HookScript.Configuration? {
        injectHook ? HookScript.Configuration(origins: origins) : nil
    }
}
