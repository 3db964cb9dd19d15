import SatchelEngine
import SatchelHTTP

extension ResponseCache {
    /// Forgets what is stored for one host, for every host a package serves (by id, its scope's patterns matched
    /// against the stored hosts), or everything (the app's "clear website data").
    public func clear(host: String? = nil, package id: String? = nil, in engine: ResourceEngine) {
        if let host { return clear(host: host.lowercased()) }
        guard let id else { return clear(host: nil) }
        let patterns = engine.servedPackages.filter { $0.manifest.id.value == id }.flatMap(\.manifest.scope.hosts)
        for stored in storedBytesPerHost().keys where patterns.contains(where: { $0.matches(stored) }) {
            clear(host: stored)
        }
    }
}
