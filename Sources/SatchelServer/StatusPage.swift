import Foundation
import SatchelCore
import SatchelStore

/// The status page at `/_satchel/`: installed packages and the latest requests, self-contained (no external
/// assets), readable without a stylesheet download.
enum StatusPage {
    static func html(packages: [InstalledPackage], requests: [RequestLog.Entry], configuration: ServerConfiguration) -> String {
        let escape = HTMLText.escaped
        let packageRows = packages.map { package in
            """
            <tr><td class="id">\(escape(package.id))</td><td>\(escape(package.active))</td>\
            <td><span class="badge \(package.state.rawValue)">\(package.state.rawValue)\(package.state == .trial ? " · \(package.launches) launches" : "")</span></td>\
            <td>\(package.hosts.map(escape).joined(separator: "<br>"))</td><td><code>\(escape(package.pathPrefix))</code></td>\
            <td class="num">\(package.fileCount)</td><td class="num">\(formatBytes(package.bytes))</td>\
            <td>\(package.otherVersions.map(escape).joined(separator: ", "))</td>\
            <td>\(package.builtIn.map { "<span class=\"badge built-in\">\(escape($0))</span>" } ?? "")</td><td>\(escape(package.channel))</td></tr>
            """
        }.joined(separator: "\n")
        let requestRows = requests.prefix(100).map { entry in
            """
            <tr><td>\(entry.time)</td><td>\(escape(entry.method))</td><td class="url">\(escape(entry.url))</td>\
            <td class="num">\(entry.status)</td><td><span class="badge \(entry.outcome.rawValue)">\(entry.outcome.rawValue)</span></td>\
            <td>\(entry.bodyChannel.map { "<span class=\"badge body\">\(escape($0))</span>" } ?? "")</td>\
            <td class="num">\(entry.milliseconds) ms</td></tr>
            """
        }.joined(separator: "\n")
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>Satchel · local server</title>
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <style>
            body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }
            header { background: #22304a; color: #fff; padding: 18px 28px; }
            header h1 { margin: 0; font-size: 22px; } header p { margin: 4px 0 0; opacity: .8; }
            main { padding: 20px 28px; } h2 { font-size: 17px; margin: 26px 0 10px; }
            table { border-collapse: collapse; width: 100%; background: #fff; box-shadow: 0 1px 3px rgba(0,0,0,.08); border-radius: 6px; overflow: hidden; }
            th, td { padding: 8px 12px; text-align: left; border-bottom: 1px solid #eceef2; vertical-align: top; }
            th { background: #eef1f6; font-weight: 600; font-size: 13px; text-transform: uppercase; letter-spacing: .03em; color: #4a5568; }
            td.num { text-align: right; font-variant-numeric: tabular-nums; } td.id { font-weight: 600; }
            td.url { font-family: ui-monospace, monospace; font-size: 13px; word-break: break-all; }
            .badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; background: #e2e8f0; }
            .confirmed, .offline-hit { background: #d1fae5; color: #065f46; } .trial { background: #fef3c7; color: #92400e; }
            .built-in { background: #e0e7ff; color: #3730a3; }
            .range, .not-modified { background: #dbeafe; color: #1e40af; } .network { background: #ede9fe; color: #5b21b6; }
            .error { background: #fee2e2; color: #991b1b; } .offline-page { background: #fde68a; } .body { background: #fce7f3; color: #9d174d; }
            .empty { color: #718096; font-style: italic; }
            </style></head>
            <body><header><h1>Satchel local server</h1>
            <p>hook injection \(configuration.injectHook ? "on" : "off") · body-loss emulation \(configuration.emulateBodyLoss ? "on" : "off") · <a style="color:#cbd5e0" href="/_satchel/status.json">status.json</a></p></header>
            <main>
            <h2>Packages (\(packages.count))</h2>
            <table id="packages"><tr><th>Package</th><th>Active</th><th>State</th><th>Hosts</th><th>Prefix</th><th>Files</th><th>Size</th><th>Other versions</th><th>Built-in</th><th>Channel</th></tr>
            \(packageRows.isEmpty ? "<tr><td colspan=9 class=empty>no packages installed</td></tr>" : packageRows)
            </table>
            <h2>Latest requests</h2>
            <table id="requests"><tr><th>Time</th><th>Method</th><th>URL</th><th>Status</th><th>Outcome</th><th>Body</th><th>Latency</th></tr>
            \(requestRows.isEmpty ? "<tr><td colspan=7 class=empty>no requests yet</td></tr>" : requestRows)
            </table>
            </main></body></html>
            """
    }

    static func formatBytes(_ count: Int64) -> String {
        count >= 1_000_000 ? String(format: "%.1f MB", Double(count) / 1e6) : count >= 1000 ? "\(count / 1000) KB" : "\(count) B"
    }
}
