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
/// Appends a copy of `bytes`; a pending read completes with them.
void satchel_stream_push(GInputStream *stream, const guint8 *bytes, gsize length);
/// No more bytes: reads return 0 once the held bytes are read.
void satchel_stream_end(GInputStream *stream);
/// The body broke: reads fail with `message` once the held bytes are read.
void satchel_stream_fail(GInputStream *stream, const char *message);
/// Bytes pushed and not yet read.
gsize satchel_stream_buffered(GInputStream *stream);
/// Streams alive in this process (tests: none may be left once WebKit is done with them).
gint satchel_stream_live_count(void);

/// g_signal_connect (a macro Swift cannot call).
gulong satchel_signal_connect(gpointer instance, const char *signal, GCallback handler, gpointer data);

/// Adds a weak reference whose notify runs when `object` is finalized (a WebKitURISchemeRequest: WebKit drops it when
/// the page stops the request before it was answered).
void satchel_weak_ref(gpointer object, GWeakNotify notify, gpointer data);
void satchel_weak_unref(gpointer object, GWeakNotify notify, gpointer data);

/// A GError in G_IO_ERROR (for webkit_uri_scheme_request_finish_error).
GError *satchel_io_error_new(const char *message);

G_END_DECLS

#endif

G_BEGIN_DECLS
/// A web view on `context` and `session` whose user content is `manager` (g_object_new with properties is variadic).
WebKitWebView *satchel_web_view_new(WebKitWebContext *context, WebKitNetworkSession *session, WebKitUserContentManager *manager);
G_END_DECLS
