import Foundation

/// A page's load as WebKit measured it: Navigation Timing (response start, DOMContentLoaded, the load event) and Paint
/// Timing (first paint, first contentful paint), read from the page's Performance API once the load finished.
///
/// The page measures from its own time origin, which WebKit sets when the navigation starts in the web process; a cold
/// web view launches that process after the load was asked for. Every figure of the report is therefore moved to the
/// moment the viewer asked WebKit to load the URL (an app's "tap"), through the time origin's wall-clock value
/// (`performance.timeOrigin`, the same system clock in every process): `timeOriginMs` says how much of each figure
/// came before the page existed.
struct PageTiming {
    /// The body of the async function run in the page. First contentful paint may come after the load event, so it
    /// waits for it (the viewer's --timeout bounds the wait); a WebKit without paint timing is an error, not a hang.
    static let script = script()

    /// The script, with `before` run just before the figures are read and `fields` (`name: expression, `) added to them.
    static func script(before: String = "", fields: String = "") -> String {
        """
        if (!PerformanceObserver.supportedEntryTypes.includes("paint")) throw new Error("this WebKit has no paint timing");
        const contentful = performance.getEntriesByName("first-contentful-paint", "paint")[0] ?? await new Promise(resolve => {
            const observer = new PerformanceObserver(list => {
                const entry = list.getEntriesByName("first-contentful-paint")[0];
                if (entry) { observer.disconnect(); resolve(entry); }
            });
            observer.observe({ type: "paint", buffered: true });
        });
        // WebKit can report the load finished before the page's load event ran (seen on a page with module scripts
        // and lazy images: loadEventStart was still 0): wait for the event and for its handlers to return.
        if (document.readyState !== "complete") await new Promise(resolve => addEventListener("load", resolve, { once: true }));
        let navigation = performance.getEntriesByType("navigation")[0];
        while (navigation && navigation.loadEventEnd === 0) {
            await new Promise(resolve => setTimeout(resolve, 5));
            navigation = performance.getEntriesByType("navigation")[0];
        }
        if (!navigation) return null;
        const first = performance.getEntriesByName("first-paint", "paint")[0];
        \(before)
        return {
            \(fields)
            timeOrigin: performance.timeOrigin,
            responseStart: navigation.responseStart,
            domContentLoaded: navigation.domContentLoadedEventStart,
            loadEvent: navigation.loadEventStart,
            firstPaint: first ? first.startTime : null,
            firstContentfulPaint: contentful.startTime,
            resources: performance.getEntriesByType("resource").length,
        };
        """
    }

    /// When the page's time origin was, in ms after the load was asked for.
    let timeOrigin: Double
    /// Page-relative figures (ms after the time origin), by report name.
    let figures: [(name: String, value: Double?)]
    let resources: Int

    /// nil when the page gave no navigation entry (the script returns null), no load event time, or values that are not numbers.
    init?(_ measured: [String: Any], loadRequestedAt: Date) {
        guard let origin = measured["timeOrigin"] as? Double, let loadEvent = measured["loadEvent"] as? Double, loadEvent > 0,
            let contentful = measured["firstContentfulPaint"] as? Double
        else { return nil }
        timeOrigin = origin - loadRequestedAt.timeIntervalSince1970 * 1000
        figures = [
            ("responseStartMs", measured["responseStart"] as? Double), ("domContentLoadedMs", measured["domContentLoaded"] as? Double),
            ("loadEventMs", loadEvent), ("firstPaintMs", measured["firstPaint"] as? Double), ("firstContentfulPaintMs", contentful),
        ]
        resources = measured["resources"] as? Int ?? 0
    }

    /// The report's `timing` object: every figure in ms after the load was asked for, to 0.1 ms.
    var report: [String: Any] {
        var report: [String: Any] = ["timeOriginMs": Self.rounded(timeOrigin), "resources": resources]
        for (name, value) in figures { report[name] = value.map { Self.rounded(timeOrigin + $0) } ?? NSNull() }
        return report
    }

    private static func rounded(_ milliseconds: Double) -> Double { (milliseconds * 10).rounded() / 10 }
}
