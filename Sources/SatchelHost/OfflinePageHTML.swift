import SatchelCore
import SatchelEngine
import SatchelHTTP

extension ResourceEngine {
    /// What a view that keeps dying shows instead of another reload (``WebProcessRecovery``): the offline page of the
    /// package that answers `url` (its manifest's `offlinePage`), or a built-in page saying the page stopped.
    public func offlinePageHTML(for url: String) -> String {
        if case .routed(let routed) = route(ResourceRequest(url: url)), let package = routed.package, let page = offlinePage(package: package) {
            let bytes: [UInt8]? =
                switch page.body {
                case .bytes(let bytes): bytes
                case .file(let region): try? region.readAll()
                default: nil
                }
            if let bytes { return String(decoding: bytes, as: UTF8.self) }
        }
        return Self.stoppedPageHTML
    }

    /// The built-in page: plain, no package needed.
    public static let stoppedPageHTML = """
        <!doctype html><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>This page stopped</title>
        <body style="font: 16px system-ui, sans-serif; margin: 3em"><h1>This page stopped</h1>
        <p>It closed several times in a row, so it was not opened again. Try again later.</p></body>
        """
}
