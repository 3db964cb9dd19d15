import ArgumentParser
import Foundation
import SatchelCore
import SatchelEngine
import SatchelHTTP

/// Which hosts the network fallback may reach and where their requests go: shared by `satchel serve` and the
/// WebKitGTK viewer, which answer misses through the same ``NetworkPolicy``.
public struct UpstreamOptions: ParsableArguments {
    @Option(name: .customLong("allow-upstream"), help: "A host the network fallback (and CONNECT) may reach (repeatable; '*.' allowed).")
    public var allowUpstream: [String] = []

    @Option(name: .customLong("upstream"), help: "<host>=<url>: send that host's network requests to another origin (repeatable).")
    public var upstreams: [String] = []

    @Option(
        name: .customLong("trust-root"),
        help: ArgumentHelp("A PEM file of certificate authorities to trust for https upstreams, besides the system's (repeatable).", valueName: "pem-file"))
    public var trustRoots: [String] = []

    public init() {}

    public mutating func validate() throws {
        _ = try allowedHosts()
        _ = try overrides()
        for file in trustRoots where !FileManager.default.isReadableFile(atPath: file) {
            throw ValidationError("--trust-root: cannot read \(file)")
        }
    }

    /// `--allow-upstream` as host patterns.
    public func allowedHosts() throws -> [HostPattern] {
        do { return try allowUpstream.map { try HostPattern($0.lowercased()) } } catch { throw ValidationError("--allow-upstream: \(error)") }
    }

    /// `--upstream host=url` as a host -> origin map.
    public func overrides() throws -> [String: String] {
        var overrides: [String: String] = [:]
        for spec in upstreams {
            let parts = spec.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, !parts[0].isEmpty, RequestURL(String(parts[1])) != nil else {
                throw ValidationError("--upstream must look like host=http://origin:port, not \(spec)")
            }
            overrides[parts[0].lowercased()] = String(parts[1])
        }
        return overrides
    }

    /// The network policy these options describe.
    public func policy(timeouts: FetchTimeouts = FetchTimeouts()) throws -> NetworkPolicy {
        NetworkPolicy(allowedHosts: try allowedHosts(), upstreamOverrides: try overrides(), timeouts: timeouts)
    }
}
