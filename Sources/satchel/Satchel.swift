import ArgumentParser
import SatchelCore

@main
struct Satchel: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "satchel",
        abstract: "Build, check and serve versioned offline packages for hybrid apps.",
        discussion: """
            Exit codes: 0 success, 1 failure (an invalid bundle, a refused input), 64 usage error.
            """,
        version: SatchelRuntime.version.description,
        subcommands: [
            Pack.self, Verify.self, Inspect.self, Keygen.self,
            Install.self, List.self, Activate.self, Confirm.self, Rollback.self, Launch.self, Remove.self, GC.self, Check.self,
            CatalogCommand.self, Diff.self, Update.self, RolloutCommand.self,
            Resolve.self, HookScriptCommand.self, Serve.self,
            TrustCommand.self, Sign.self,
        ]
    )
}
