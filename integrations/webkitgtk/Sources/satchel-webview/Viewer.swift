import ArgumentParser
import CSatchelGLib
import CWebKitGTK
import Foundation
import SatchelCache
import SatchelCore
import SatchelEngine
import SatchelHTTP
import SatchelNetwork
import SatchelOptions
import SatchelStore
import SatchelWebKit
import SatchelWebKitGTK

@main
struct SatchelWebview: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "satchel-webview",
        abstract: "Open a URL in a WebKitGTK window whose custom scheme (satchel://) is answered by the engine.",
        discussion: """
            Other URLs load normally. With --script, --screenshot or --timing it exits when done (0, or 1 when the load, the \
            script, the screenshot or the timing failed or --timeout passed); otherwise the window stays open. It needs a \
            display: use `xvfb-run -a satchel-webview …` headless. --json prints one object: url, title, result, screenshot, \
            error, loadMs, trial {id, version, decision (confirmed, rolled-back, undecided), why, detail, serving, fallbackPaintedMs} when \
            the page is served from a version on trial (the viewer then exits once it judged the page and the fallback loaded), tasks {started, active, stillActive (phase and URL of up to 20 unfinished tasks)}, and with --timing, timing {timeOriginMs, responseStartMs, \
            domContentLoadedMs, loadEventMs, firstPaintMs, firstContentfulPaintMs, resources}, with --cache, cache {hits, misses, \
            revalidations, staleAnswers, stored, bytes, entries, hosts}.
            """)

    @Argument(help: "The URL to open (satchel://host/path, or a path under --default-host).") var url: String
    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var upstream: UpstreamOptions
    @OptionGroup var host: EngineHostOptions
    @OptionGroup var cacheOptions: CacheOptions
    @Option(help: "A file holding the body of an async JavaScript function, run after the load event; its awaited, JSON-serialisable value is the result.", completion: .file())
    var script: String?
    @Option(help: "Save a PNG of the visible page here (after the script, if any).", completion: .file()) var screenshot: String?
    @Option(help: "Seconds before giving up (load, script and screenshot together).") var timeout: Double = 60
    @Flag(help: "Print one JSON object on stdout.") var json = false
    @Flag(help: "Measure the page's load (WebKit's navigation and paint timing, waiting for first contentful paint) and report it (timing in --json).")
    var timing = false
    @Option(help: "Window size, WIDTHxHEIGHT.") var windowSize: String = "1280x900"
    @Flag(help: "Open the page in a warm view: one whose web process was started (about:blank) before the clock starts.")
    var warm = false
    @Option(help: "Megabytes a web process may use before WebKit kills it (the view then recovers with reason exceeded-memory-limit).")
    var memoryLimit: Int?
    @Option(help: "Terminations within --termination-window after which a view shows the offline page instead of reloading.")
    var maxTerminations = 3
    @Option(help: "Seconds of the window --max-terminations counts in.") var terminationWindow: Double = 60
    @Option(help: "Seconds a view may stay unresponsive before its web process is terminated and the view recovered.")
    var unresponsiveTimeout: Double = 5
    @Option(help: "Seconds a navigation may take to its load event before it is stopped and the view shows the offline page (recovery reason load-timeout); 0: no bound.")
    var loadTimeout: Double = 30
    @Option(help: "Seconds a page of a version on trial must stay healthy after it loaded and painted (and called ready(), with --require-ready) before the trial is confirmed; an error of its own scripts meanwhile rolls it back.")
    var trialGrace: Double = 3
    @Flag(help: "Confirm a trial only once the page called window.satchel.ready() (within --load-timeout).")
    var requireReady = false
    @Option(help: "Wait for this many recoveries (each through its load and first paint) before the report, which lists them (recoveries in --json).")
    var recoveries = 0
    @Option(help: "Terminate the web process with WebKit's API this many seconds after the script finished (a recovery follows).")
    var terminateAfter: Double?
    @Option(name: .customLong("cookie"), help: "A cookie NAME=VALUE for the opened URL's host, path /, set in the app's jar before the page loads (repeatable).")
    var cookies: [String] = []
    @Option(help: "Answer the page's JS dialogs as the app's handler would: accept (OK, a prompt's default text) or dismiss; without it, the default policy answers (an alert acknowledged, a confirm dismissed, a prompt null). The report lists them (dialogs in --json).")
    var dialogs: DialogAnswering?
    @Option(help: "Seconds the --dialogs handler takes before it answers (the page waits on the dialog meanwhile).")
    var dialogDelay: Double = 0
    @Option(help: "After the page loads, open this URL, then go back (the container's goBack), and run the script in the page restored; the report gains canGoBackOnRoot and canGoBackAway.")
    var backFrom: String?
    @Option(help: "Which media may start by itself: allowed, muted (browsers' rule) or never (a gesture first).")
    var autoplay: MediaPolicy.Autoplay = .allowed
    @Option(help: "The app's name/version in every view's user agent (e.g. Shop/2.3.0), which the network fallback sends too.")
    var appName: String?
    @Option(help: "Append one JSON line per event here as it happens (loaded, ready: the script finished, recovered), for a driver that acts between them.", completion: .file())
    var events: String?

    func validate() throws {
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
        guard parsedSize != nil else { throw ValidationError("--window-size must look like 1280x900") }
        if let script, !FileManager.default.isReadableFile(atPath: script) { throw ValidationError("cannot read --script file \(script)") }
        if let memoryLimit, memoryLimit <= 0 { throw ValidationError("--memory-limit must be a positive number of megabytes") }
        guard maxTerminations > 0 else { throw ValidationError("--max-terminations must be at least 1") }
        guard terminationWindow > 0, unresponsiveTimeout > 0 else { throw ValidationError("--termination-window and --unresponsive-timeout must be positive") }
        guard recoveries >= 0 else { throw ValidationError("--recoveries cannot be negative") }
        guard loadTimeout >= 0 else { throw ValidationError("--load-timeout cannot be negative") }
        guard trialGrace >= 0 else { throw ValidationError("--trial-grace cannot be negative") }
        if let appName {
            do { _ = try ApplicationName(parsing: appName) } catch { throw ValidationError("--app-name: \(error)") }
        }
        if let terminateAfter, terminateAfter < 0 { throw ValidationError("--terminate-after cannot be negative") }
        for cookie in cookies where !cookie.contains("=") || cookie.hasPrefix("=") {
            throw ValidationError("--cookie \(cookie): expected NAME=VALUE")
        }
    }

    var parsedSize: (Int32, Int32)? {
        let parts = windowSize.split(separator: "x").compactMap { Int32($0) }
        return parts.count == 2 && parts.allSatisfy({ $0 > 0 }) ? (parts[0], parts[1]) : nil
    }

    /// The URL to load: a bare path goes under `--default-host` on the custom scheme.
    var target: String {
        if url.hasPrefix("/"), let host = host.defaultHost { return "satchel://\(host)\(url)" }
        return url
    }

    func run() throws {
        gtk_init()
        let packageStore = try storeOptions.open()
        // No launch is counted here: the context counts it at the first page it answers (decision 0036).
        let engine = try ResourceEngine(source: packageStore, configuration: EngineConfiguration(cors: .anyOrigin, bodyProof: host.bodyProof))
        // The hook rewrites requests to the app's own origins: every package host and allow-listed upstream host
        // (exact names; a wildcard cannot be an origin) under the custom schemes.
        let hosts = Set(engine.servedPackages.flatMap { $0.manifest.scope.hosts.map(\.value) } + upstream.allowUpstream.map { $0.lowercased() })
            .filter { !$0.hasPrefix("*.") }
        let origins = engine.configuration.customSchemes.sorted().flatMap { scheme in hosts.sorted().map { "\(scheme)://\($0)" } }
        let fetcher = try Self.makeFetcher(trustRoots: upstream.trustRoots)
        let recovery = WebProcessRecovery.Configuration(
            maxTerminations: maxTerminations, window: .milliseconds(Int(terminationWindow * 1000)),
            unresponsiveTimeout: .milliseconds(Int(unresponsiveTimeout * 1000)),
            loadTimeout: loadTimeout > 0 ? .milliseconds(Int(loadTimeout * 1000)) : nil)
        let satchel = try SatchelWebContext(
            engine: engine, policy: try upstream.policy(), fetcher: fetcher, hook: host.hookConfiguration(origins: origins), memoryLimit: memoryLimit,
            recovery: recovery, cache: try cacheOptions.open(mode: .private), applicationName: try appName.map { try ApplicationName(parsing: $0) },
            media: MediaPolicy(autoplay: autoplay), trials: packageStore,
            trialJudging: TrialJudge.Configuration(
                grace: .milliseconds(Int(trialGrace * 1000)),
                // No bound on the load (0) still needs the judge to end one day: a day is as good as never here.
                loadTimeout: .milliseconds(Int((loadTimeout > 0 ? loadTimeout : 86_400) * 1000)), requireReady: requireReady))
        if let dialogs {
            let delay = dialogDelay
            satchel.dialogHandler = { _, dialog, answer in
                let given = dialogs == .accept ? ScriptDialogAnswer(accepted: true, text: dialog.defaultText ?? "") : ScriptDialogAnswer(accepted: false)
                Task {
                    if delay > 0 { try? await Task.sleep(for: .milliseconds(Int(delay * 1000))) }
                    answer(given)
                }
            }
        }
        try Self.setCookies(cookies, for: target, in: satchel)
        let view = warm ? try Self.warmView(satchel, timeout: timeout) : satchel.makeWebView()
        let session = ViewerSession(
            satchel: satchel, view: view, target: target, script: try script.map { try String(contentsOfFile: $0, encoding: .utf8) },
            screenshot: screenshot, timing: timing, json: json, size: parsedSize!, recoveries: recoveries, terminateAfter: terminateAfter,
            events: try events.map(EventLog.init(path:)),
            beforeExit: { ViewerSession.waitOnMainContext(seconds: 5) { try? await fetcher.shutdown() } })
        if let backFrom { session.backTrip = .away(backFrom) }
        session.start(timeout: timeout)
        let loop = g_main_loop_new(nil, 0)
        g_main_loop_run(loop)
    }

    /// `--cookie`: each NAME=VALUE in the jar for the target's host, path /, before anything loads.
    static func setCookies(_ cookies: [String], for target: String, in satchel: SatchelWebContext) throws {
        var refused: [String] = []
        for cookie in cookies {
            let outcome = LockedBox<Result<Cookie, CookieRejection>?>(nil)
            ViewerSession.waitOnMainContext(seconds: 5) {
                let result: Result<Cookie, CookieRejection>?
                do { result = try await satchel.cookies.set(cookie + "; Path=/", for: target) } catch { result = nil }
                outcome.withLock { $0 = result }
            }
            switch outcome.withLock({ $0 }) {
            case .success: continue
            case .failure(let why): refused.append("--cookie \(cookie): \(why)")
            case nil: refused.append("--cookie \(cookie): the cookie store did not answer")
            }
        }
        if !refused.isEmpty { throw ViewerFailure(refused.joined(separator: "; ")) }
    }

    /// A view from a pool of one, once its web process runs (before the page's clock starts).
    static func warmView(_ satchel: SatchelWebContext, timeout: Double) throws -> UnsafeMutablePointer<WebKitWebView> {
        let pool = WarmViewPool(context: satchel, capacity: 1, refill: .manual)
        pool.warm()
        let deadline = Date().addingTimeInterval(timeout)
        while pool.readyCount == 0, Date() < deadline { g_main_context_iteration(nil, 1) }
        guard pool.readyCount > 0 else { throw ViewerFailure("--warm: the view did not warm within --timeout (\(timeout) s)") }
        return pool.take()
    }

    /// The one place the viewer's network stack is chosen: SatchelNetwork's NIOFetcher on NIO's shared event loops (header fields
    /// as sent, repeated `Set-Cookie` kept apart, upstream backpressure), shut down before the viewer exits.
    static func makeFetcher(trustRoots: [String]) throws(FetchError) -> NIOFetcher { try NIOFetcher(additionalTrustRoots: trustRoots) }
}

/// A failure of the viewer itself (not of the page), printed as `Error: …`.
struct ViewerFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// `--events`: one JSON object per line, written and flushed as each thing happens, so that a driver (tools/webkit-test)
/// can act between them (kill the web process once the script has its requests in flight).
final class EventLog {
    private let file: FileHandle

    init(path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil), let file = FileHandle(forWritingAtPath: path) else {
            throw ViewerFailure("cannot write --events file \(path)")
        }
        self.file = file
    }

    func write(_ event: String, _ fields: [String: Any] = [:]) {
        var object = fields
        object["event"] = event
        object["time"] = Date().timeIntervalSince1970
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else { return }
        file.write(data + Data("\n".utf8))
    }
}

/// `--dialogs`: how the viewer, standing in for an app's handler, answers the page's dialogs.
enum DialogAnswering: String, ExpressibleByArgument, CaseIterable {
    case accept, dismiss
}

extension MediaPolicy.Autoplay: ExpressibleByArgument {}

