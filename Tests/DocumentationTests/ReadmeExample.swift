import SatchelCore
import SatchelEngine
import SatchelHTTP
import SatchelNetwork
import SatchelStore
import SatchelUpdate

// README.md's library example, compiled: the test below checks that the README's ```swift block is exactly these
// imports and this function's body, so an example that stops compiling fails the build, and one that drifts from
// this copy fails the test.
func readmeExample(storeFolder: String, publicKeyText: String, downloadedBundle: String) async throws {
    // BEGIN README EXAMPLE
    // The app's store: only bundles signed by this key are installed; the bundles the app ships are the floor,
    // served straight from their archives.
    let publicKey = try VerifyingKey(base64: publicKeyText)
    let store = try PackageStore(root: storeFolder, configuration: StoreConfiguration(
        trustedKeys: [publicKey], builtIns: ["Resources/offline"]))
    for refusal in store.builtInRefusals { print("built-in refused:", refusal) }   // the rest still serve

    // Verify and install (on trial); this program shows pages, so it counts its launch (a WebKit container counts its own).
    let installed = try store.install(bundle: downloadedBundle)
    let launch = try store.beginLaunch()        // a trial past its launches falls back by itself
    print("installed \(installed.id) \(installed.version); rolled back: \(launch.rolledBack.count)")
    // Once the new version has proved itself: try store.confirm(installed.id)

    // Answer from packages: the versions active when the engine starts are pinned for this launch.
    let engine = try ResourceEngine(source: store, configuration: EngineConfiguration(customSchemes: ["satchel"]))
    switch engine.handle(ResourceRequest(url: "satchel://m.shop.com/index.html", headers: ["Range": "bytes=0-99"])) {
    case .response(let response): print(response.status)          // 206; a `.file` body is read in chunks or sent with sendfile
    case .miss(let miss): print("not in a package:", miss.upstreamURL)
    }

    // The whole path, network included: body restored, strategy, package or network, offline page.
    let network = NIOFetcher()
    let loader = ResourceLoader(engine: engine, fetcher: network,
                                policy: NetworkPolicy(allowedHosts: [try HostPattern("m.shop.com")]))
    let answer = await loader.respond(to: ResourceRequest(url: "satchel://m.shop.com/api/cart"))
    print(answer.response.status, answer.outcome.rawValue)

    // Updates: signed, unexpired catalog; the cheapest of a step, objects, a delta or the bundle, resumed downloads, installed on trial.
    let updater = Updater(store: store, fetcher: network, options: UpdaterOptions(
        catalogURL: "https://cdn.shop.com/offline/catalog.json", trustedKeys: [publicKey], runtime: try SemanticVersion("2.3.0")))
    let report = try await updater.run { progress in
        if case .downloading(let id, _, let received, let total) = progress { print(id, received, "of", total) }
    }
    for outcome in report.outcomes { print(outcome.id, outcome.action.rawValue, outcome.to) }
    try await network.shutdown()
    // END README EXAMPLE
}
