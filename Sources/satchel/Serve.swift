import ArgumentParser
import Dispatch
import Foundation
import Logging
import SatchelCore
import SatchelEngine
import SatchelHTTP
import SatchelOptions
import SatchelServer
import SatchelStore

extension Satchel {
    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Serve the store's packages over HTTP, as an app's web view would see them (origin and forward-proxy modes).",
            discussion: """
                The first line on stdout is `listening on http://<bind>:<port>`. Starting counts as a launch; new
                activations apply to the next request. Endpoints: /_satchel/ (status page), /_satchel/status.json,
                /_satchel/hook.js, POST /_satchel/bodies/<id>, and with --publish --reports POST /_satchel/reports. Use a browser with --proxy-server=http://<bind>:<port>
                to load https://<package host>/... through the engine.
                """)

        @OptionGroup var storeOptions: StoreOptions
        @Option(help: "Address to bind (loopback unless told otherwise).") var bind: String = "127.0.0.1"
        @Option(help: "Port; 0 picks a free one.") var port: Int = 8080
        @OptionGroup var upstream: UpstreamOptions
        @OptionGroup var host: EngineHostOptions
        @OptionGroup var cacheOptions: CacheOptions
        @Flag(help: "Drop every request body that reaches the engine, as WebKit does.") var emulateBodyLoss = false

        @Option(help: "Also serve this folder of bundles and catalogs as static files (for the updater).", completion: .directory)
        var publish: String?
        @Option(help: "With --publish: append device reports (POST /_satchel/reports, and catalog requests' report headers) to this JSON-lines file.", completion: .file())
        var reports: String?
        @Option(help: "trace, debug, info, notice, warning, error or critical.") var logLevel: String = "info"
        @Flag(help: "Turn the access log off (benchmarks).") var noAccessLog = false
        @Option(help: "Event loop threads.") var threads: Int = ProcessInfo.processInfo.activeProcessorCount
        @Option(name: .customLong("allow-connect-port"), help: "A port CONNECT tunnels may reach on allowed hosts (repeatable; default 443 only).")
        var connectPorts: [Int] = []

        func validate() throws {
            guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical") }
            guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
            for connectPort in connectPorts where !(1...65535).contains(connectPort) {
                throw ValidationError("--allow-connect-port must be between 1 and 65535, not \(connectPort)")
            }
        }

        func run() async throws {
            let level = Logger.Level(rawValue: logLevel)!
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
            let hosts = try upstream.allowedHosts()
            let overrides = try upstream.overrides()
            let packageStore = try storeOptions.openForCommand()
            // The server exists to show pages: its launch counts against the trials once, now (decision 0036).
            let launch = try Output.failing { () throws(StoreError) in try packageStore.beginLaunch() }
            for rollback in launch.rolledBack { Output.note("\(rollback.id): trial \(rollback.from) rolled back to \(rollback.to)") }
            var configuration = ServerConfiguration(
                bindHost: bind, port: port, defaultHost: host.defaultHost, allowedUpstreams: hosts, upstreamOverrides: overrides,
                injectHook: host.injectHook, emulateBodyLoss: emulateBodyLoss, publishFolder: publish, threads: threads, accessLog: !noAccessLog)
            if !connectPorts.isEmpty { configuration.connectPorts = Set(connectPorts) }
            if let reports {
                guard publish != nil else { throw ValidationError("--reports needs --publish: reports arrive with the published catalog's requests") }
                do { configuration.reports = try ReportLog(path: reports) } catch { throw Output.failure("\(error)") }
            }
            let engine: ResourceEngine
            do {
                engine = try ResourceEngine(
                    source: packageStore,
                    configuration: EngineConfiguration(cors: .anyOrigin, activation: .immediate, bodyProof: host.bodyProof))
            } catch {
                throw Output.failure("\(error)")
            }
            // Listening for SIGINT/SIGTERM before the first line is printed: a script that reads the line and
            // signals at once must not find the signal ignored and lost.
            let shutdownSignal = ShutdownSignal()
            // A server is a shared cache: `private` answers are not stored, `s-maxage` counts.
            let httpCache = try cacheOptions.open(mode: .shared)
            let policy = try upstream.policy()
            let server: LocalServer
            do throws(FetchError) {
                server = try LocalServer(
                    store: packageStore, engine: engine, policy: policy, configuration: configuration, additionalTrustRoots: upstream.trustRoots,
                    cache: httpCache)
            } catch {
                throw Output.failure("--trust-root: \(error.reason)")
            }
            let boundPort: Int
            do { boundPort = try await server.start() } catch {
                throw Output.failure("cannot listen on \(bind):\(port): \(error)")
            }
            Output.line("listening on http://\(bind):\(boundPort)")
            await shutdownSignal.wait()
            Output.note("shutting down: finishing requests in flight")
            try await server.shutdown()
        }

    }
}

/// SIGINT or SIGTERM, caught from the moment this is made (their default action is turned off then), and
/// remembered until someone waits for it.
final class ShutdownSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var fired = false
    private var waiter: CheckedContinuation<Void, Never>?
    private var sources: [any DispatchSourceSignal] = []

    init() {
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [weak self] in self?.fire() }
            source.resume()
            sources.append(source)
        }
    }

    private func fire() {
        lock.lock()
        fired = true
        let pending = waiter
        waiter = nil
        lock.unlock()
        pending?.resume()
    }

    /// Returns once a signal has arrived (at once if one already has).
    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            lock.lock()
            if fired {
                lock.unlock()
                continuation.resume()
            } else {
                waiter = continuation
                lock.unlock()
            }
        }
    }
}
