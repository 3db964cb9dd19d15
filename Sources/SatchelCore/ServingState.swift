/// How a package's active version serves: what `satchel list` shows and what a device reports for it.
public enum ServingState: String, Sendable, Codable, CaseIterable {
    /// Installed and on trial: a launch count runs until it is confirmed or falls back.
    case trial
    case confirmed
    /// The app's built-in bundle serves (nothing newer is installed, or everything newer failed).
    case builtIn = "built-in"
    /// The active version's folder is gone (a damaged store): nothing serves the package.
    case missing
}
