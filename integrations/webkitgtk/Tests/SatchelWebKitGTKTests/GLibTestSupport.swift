import CSatchelGLib
import CWebKitGTK
import Foundation
import SatchelCore
import SatchelEngine
import SatchelWebKit
@testable import SatchelWebKitGTK

/// A GLib main context run by a thread of its own, as GTK runs the default one: what the adapter's executor, streams and
/// relay are attached to in these tests (no display needed).
final class MainContextThread: @unchecked Sendable {
    /// `GMainContext*`.
    let context: OpaquePointer
    private let loop: OpaquePointer
    private let finished = DispatchSemaphore(value: 0)

    init() {
        context = g_main_context_new()
        loop = g_main_loop_new(context, 0)
        let started = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            g_main_context_push_thread_default(context)
            // Signals once the loop runs (and so owns the context).
            let source = g_idle_source_new()
            g_source_set_callback(source, { data in
                Unmanaged<DispatchSemaphore>.fromOpaque(data!).takeUnretainedValue().signal()
                return gboolean(G_SOURCE_REMOVE)
            }, Unmanaged.passUnretained(started).toOpaque(), nil)
            g_source_attach(source, context)
            g_source_unref(source)
            g_main_loop_run(loop)
            g_main_context_pop_thread_default(context)
            finished.signal()
        }
        thread.start()
        started.wait()
    }

    var executor: GLibMainContextExecutor { GLibMainContextExecutor(context: context) }

    /// Runs `body` on the context's thread and returns its result.
    func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            executor.execute { continuation.resume(returning: body()) }
        }
    }

    func stop() {
        g_main_loop_quit(loop)
        g_main_context_wakeup(context)
        finished.wait()
        g_main_loop_unref(loop)
        g_main_context_unref(context)
    }
}

/// A folder holding one package's files, served by an engine (no store needed).
struct TestPackage {
    static let files: [String: [UInt8]] = [
        "index.html": Array("<h1>hi</h1>".utf8),
        "large.bin": (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) },
    ]

    let folder: String
    let engine: ResourceEngine

    /// `routes`: e.g. `/live/=network-only`, so that a path reaches the network fallback.
    init(routes: [String] = []) throws {
        folder = NSTemporaryDirectory() + "satchel-gtk-tests-" + UUID().uuidString
        let root = folder + "/pkg"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        var records: [FileRecord] = []
        for (path, bytes) in Self.files {
            try Data(bytes).write(to: URL(fileURLWithPath: root + "/" + path))
            let safe = try SafePath(validating: path)
            records.append(FileRecord(path: safe, size: Int64(bytes.count), sha256: Digests.sha256Hex(bytes), mime: MIMETable.entry(for: safe).type))
        }
        let manifest = try Manifest(
            id: PackageID("app"), version: SemanticVersion("1.0.0"), createdAt: Timestamp(secondsSinceEpoch: 0),
            scope: Scope(hosts: [HostPattern("app.example")]), routes: try routes.map { try Route(parsing: $0) }, files: records)
        struct Source: PackageSource {
            let package: ServedPackage
            func servedPackages() throws -> [ServedPackage] { [package] }
            func changeToken() -> [Int64] { [0] }
            func pin(_ packages: [ServedPackage]) throws -> any Sendable { 0 }
        }
        engine = try ResourceEngine(source: Source(package: ServedPackage(manifest: manifest, folder: root)))
    }

    func remove() { try? FileManager.default.removeItem(atPath: folder) }
}

/// Reads a `GInputStream` as WebKit does (8 KiB `read_async` calls on the thread-default context until 0 or an error),
/// noting the most bytes the stream held at any read. Create and start it on the context's thread.
final class StreamReader: @unchecked Sendable {
    let stream: UnsafeMutablePointer<GInputStream>
    let cancellable = g_cancellable_new()!
    /// Where reads land (WebKit's own 8 KiB buffer lives as long as the request).
    private let buffer = UnsafeMutableRawPointer.allocate(byteCount: 8192, alignment: 8)
    private(set) var bytes: [UInt8] = []
    private(set) var mostHeld = 0
    private(set) var error: String?
    private(set) var done = false
    /// Cancel once this many bytes were read (nil: never).
    var cancelAfter: Int?
    private var onDone: ((StreamReader) -> Void)?

    init(_ stream: UnsafeMutablePointer<GInputStream>) {
        self.stream = stream
        g_object_ref(UnsafeMutableRawPointer(stream))
    }

    func start(onDone: @escaping (StreamReader) -> Void) {
        self.onDone = onDone
        readNext()
    }

    private func readNext() {
        let me = Unmanaged.passRetained(self).toOpaque()
        g_input_stream_read_async(stream, buffer, 8192, G_PRIORITY_DEFAULT, cancellable, { source, result, data in
            let reader = Unmanaged<StreamReader>.fromOpaque(data!).takeRetainedValue()
            var error: UnsafeMutablePointer<GError>?
            let count = g_input_stream_read_finish(UnsafeMutableRawPointer(source)!.assumingMemoryBound(to: GInputStream.self), result, &error)
            reader.completed(count, error)
        }, me)
    }

    deinit {
        buffer.deallocate()
        g_object_unref(UnsafeMutableRawPointer(cancellable))
    }

    private func completed(_ count: gssize, _ failure: UnsafeMutablePointer<GError>?) {
        mostHeld = max(mostHeld, Int(satchel_stream_buffered(stream)) + max(0, count))
        if let failure {
            error = String(cString: failure.pointee.message)
            g_error_free(failure)
            return finish()
        }
        if count == 0 { return finish() }
        bytes += UnsafeRawBufferPointer(start: buffer, count: Int(count))
        if let limit = cancelAfter, bytes.count >= limit { g_cancellable_cancel(cancellable) }
        readNext()
    }

    private func finish() {
        done = true
        g_object_unref(UnsafeMutableRawPointer(stream))
        onDone?(self)
        onDone = nil
    }
}
