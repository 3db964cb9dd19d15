#ifndef SATCHEL_GLIB_H
#define SATCHEL_GLIB_H

#include <gio/gio.h>
#include <webkit/webkit.h>

G_BEGIN_DECLS

/// What a SatchelStream tells its owner (Swift). Every call happens on the thread that reads the stream (the GLib
/// main context's thread, where WebKit reads it).
typedef struct {
    void *context;
    /// The reader has taken what the stream held (at most `low_water` bytes are left): it can take more.
    void (*drained)(void *context);
    /// The reader gave up before the end: its GCancellable fired, or the stream was closed or dropped unfinished.
    /// Called at most once.
    void (*abandoned)(void *context);
    /// The stream is being finalized; `context` is not used after this.
    void (*release)(void *context);
} SatchelStreamCallbacks;

/// A GInputStream whose bytes are pushed by its owner as they arrive and read asynchronously by WebKit
/// (`read_async` waits for the next push). It holds what was pushed and not yet read, nothing more: the owner
/// pushes the next chunk only after `drained`, so memory stays bounded by one chunk.
GInputStream *satchel_stream_new(SatchelStreamCallbacks callbacks, gsize low_water);
/// Asks the receiver of a paced stream to call `satchel_stream_acknowledge(stream, mark)` once it has taken the first
/// `mark` bytes handed over (on the stream's thread; at once is allowed).
typedef void (*SatchelStreamPing)(GInputStream *stream, guint64 mark, gpointer data);
/// Paces the stream by its receiver: reads complete only while fewer than `window` handed-over bytes are
/// unacknowledged, and after every `ping_interval` bytes handed over `ping` asks for an acknowledgement (one at a
/// time). `destroy` frees `data` when the stream is finalized. Call at most once, before the first read.
void satchel_stream_set_pacing(GInputStream *stream, gsize window, gsize ping_interval, SatchelStreamPing ping, gpointer data, GDestroyNotify destroy);
/// The receiver has taken the first `mark` bytes handed over.
void satchel_stream_acknowledge(GInputStream *stream, guint64 mark);
/// Pacing by the web process that receives the stream's bytes. WebKit sends every read to the web process at once, with
/// no flow control, and queues in the UI process whatever the socket cannot take: a stream read faster than the web
/// process dispatches its data piles up there (1 GiB measured as 0.6-0.9 GiB of UI-process memory). The ping is a
/// round trip to `view`'s web process on the same ordered IPC channel, so its answer means the bytes sent before it
/// have left the UI process. NULL `view`: no pacing.
void satchel_stream_pace_with_web_view(GInputStream *stream, WebKitWebView *view, gsize window, gsize ping_interval);
/// Bytes handed to the stream's reader so far, and how many of them were acknowledged (pacing).
guint64 satchel_stream_handed(GInputStream *stream);
guint64 satchel_stream_acknowledged(GInputStream *stream);
/// Appends a copy of `bytes`; a pending read completes with them.
void satchel_stream_push(GInputStream *stream, const guint8 *bytes, gsize length);
/// No more bytes: reads return 0 once the held bytes are read.
void satchel_stream_end(GInputStream *stream);
/// The body broke: reads fail with `message` once the held bytes are read.
void satchel_stream_fail(GInputStream *stream, const char *message);
/// Bytes pushed and not yet read.
gsize satchel_stream_buffered(GInputStream *stream);

/// g_signal_connect (a macro Swift cannot call).
gulong satchel_signal_connect(gpointer instance, const char *signal, GCallback handler, gpointer data);

/// Adds a weak reference whose notify runs when `object` is finalized (a WebKitURISchemeRequest: WebKit drops it when
/// the page stops the request before it was answered).
void satchel_weak_ref(gpointer object, GWeakNotify notify, gpointer data);
void satchel_weak_unref(gpointer object, GWeakNotify notify, gpointer data);

/// A SoupServer with no options (soup_server_new is variadic).
SoupServer *satchel_soup_server_new(void);

/// A GError in G_IO_ERROR (for webkit_uri_scheme_request_finish_error).
GError *satchel_io_error_new(const char *message);

G_END_DECLS

#endif

G_BEGIN_DECLS
/// A web context whose web processes are killed past `memory_limit_mb` megabytes (WebKit's memory-pressure settings,
/// a construct-only property: g_object_new is variadic); 0: WebKit's defaults, which kill nothing.
WebKitWebContext *satchel_web_context_new(guint memory_limit_mb);
/// A web view on `context` and `session` whose user content is `manager` (g_object_new with properties is variadic).
WebKitWebView *satchel_web_view_new(WebKitWebContext *context, WebKitNetworkSession *session, WebKitUserContentManager *manager,
                                    WebKitAutoplayPolicy autoplay);
G_END_DECLS
