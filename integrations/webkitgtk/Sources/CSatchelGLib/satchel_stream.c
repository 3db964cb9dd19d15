#include "satchel_glib.h"
#include <string.h>

typedef struct {
    GInputStream parent_instance;
    GByteArray *buffer;  // bytes pushed; those before `offset` were read
    gsize offset;
    gsize low_water;
    gboolean owes_drained;  // a push is waiting for its `drained`
    gboolean ended;
    GError *failure;
    gboolean abandoned;
    GTask *pending;  // a read waiting for bytes
    void *pending_buffer;
    gsize pending_count;
    GCancellable *cancellable;  // WebKit passes the same one to every read of a response
    gulong cancel_handler;
    SatchelStreamCallbacks callbacks;
    // Pacing (satchel_stream_set_pacing): bytes handed to reads, how many of them the receiver acknowledged, and the
    // mark of the one ping allowed in flight.
    gboolean paced;
    gsize window;
    gsize ping_interval;
    SatchelStreamPing ping;
    gpointer ping_data;
    GDestroyNotify ping_destroy;
    guint64 handed;
    guint64 acknowledged;
    guint64 pinged_at;
    gboolean ping_in_flight;
    gboolean serving;  // inside serve_pending (a ping acknowledged at once must not re-enter it)
} SatchelStream;

typedef struct {
    GInputStreamClass parent_class;
} SatchelStreamClass;

G_DEFINE_TYPE(SatchelStream, satchel_stream, G_TYPE_INPUT_STREAM)

static gsize unread(SatchelStream *self) { return self->buffer->len - self->offset; }

/// Whether more may be handed over: pacing is off, or fewer than `window` handed bytes are unacknowledged.
static gboolean may_hand_over(SatchelStream *self)
{
    return !self->paced || self->handed - self->acknowledged < self->window;
}

/// Asks the receiver to acknowledge everything handed over so far (one ping in flight at a time).
static void ping(SatchelStream *self)
{
    if (!self->paced || self->ping_in_flight || self->pinged_at == self->handed) return;
    self->ping_in_flight = TRUE;
    self->pinged_at = self->handed;
    self->ping((GInputStream *)self, self->pinged_at, self->ping_data);
}

/// Copies up to `count` held bytes into `into`; tells the owner when the stream has room again.
static gsize take(SatchelStream *self, void *into, gsize count)
{
    gsize n = MIN(count, unread(self));
    memcpy(into, self->buffer->data + self->offset, n);
    self->offset += n;
    self->handed += n;
    if (unread(self) == 0) {
        g_byte_array_set_size(self->buffer, 0);
        self->offset = 0;
    }
    if (self->owes_drained && unread(self) <= self->low_water) {
        self->owes_drained = FALSE;
        if (self->callbacks.drained) self->callbacks.drained(self->callbacks.context);
    }
    return n;
}

static void abandon(SatchelStream *self)
{
    if (self->abandoned || self->ended || self->failure) return;
    self->abandoned = TRUE;
    if (self->callbacks.abandoned) self->callbacks.abandoned(self->callbacks.context);
}

/// Completes the pending read if there is something to complete it with.
static void serve_pending(SatchelStream *self)
{
    if (!self->pending || self->serving) return;
    self->serving = TRUE;
    GTask *task = self->pending;
    if (unread(self) > 0 && !may_hand_over(self)) {
        ping(self);  // the read waits for the acknowledgement
    } else if (unread(self) > 0) {
        self->pending = NULL;
        gssize n = (gssize)take(self, self->pending_buffer, self->pending_count);
        g_task_return_int(task, n);
        g_object_unref(task);
        if (self->handed - self->pinged_at >= self->ping_interval) ping(self);
    } else if (self->failure) {
        self->pending = NULL;
        g_task_return_error(task, g_error_copy(self->failure));
        g_object_unref(task);
    } else if (self->ended) {
        self->pending = NULL;
        g_task_return_int(task, 0);
        g_object_unref(task);
    }
    self->serving = FALSE;
    // A ping acknowledged at once (above) may have made room for this read.
    if (self->pending && unread(self) > 0 && may_hand_over(self)) serve_pending(self);
}

static void on_cancelled(GCancellable *cancellable, gpointer data)
{
    SatchelStream *self = data;
    if (self->pending) {
        GTask *task = self->pending;
        self->pending = NULL;
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_CANCELLED, "the reader cancelled");
        g_object_unref(task);
    }
    abandon(self);
}

static void read_async(GInputStream *stream, void *buffer, gsize count, int priority, GCancellable *cancellable,
                       GAsyncReadyCallback callback, gpointer user_data)
{
    SatchelStream *self = (SatchelStream *)stream;
    GTask *task = g_task_new(stream, cancellable, callback, user_data);
    g_task_set_priority(task, priority);
    if (g_cancellable_is_cancelled(cancellable)) {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_CANCELLED, "the reader cancelled");
        g_object_unref(task);
        abandon(self);
        return;
    }
    if (cancellable && cancellable != self->cancellable) {
        if (self->cancellable) {
            g_cancellable_disconnect(self->cancellable, self->cancel_handler);
            g_object_unref(self->cancellable);
        }
        self->cancellable = g_object_ref(cancellable);
        self->cancel_handler = g_cancellable_connect(cancellable, G_CALLBACK(on_cancelled), self, NULL);
    }
    self->pending = task;
    self->pending_buffer = buffer;
    self->pending_count = count;
    serve_pending(self);
}

static gssize read_finish(GInputStream *stream, GAsyncResult *result, GError **error)
{
    return g_task_propagate_int(G_TASK(result), error);
}

static gssize read_fn(GInputStream *stream, void *buffer, gsize count, GCancellable *cancellable, GError **error)
{
    SatchelStream *self = (SatchelStream *)stream;
    if (unread(self) > 0 && may_hand_over(self)) return (gssize)take(self, buffer, count);
    if (self->failure) {
        g_propagate_error(error, g_error_copy(self->failure));
        return -1;
    }
    if (self->ended) return 0;
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK, "no bytes yet: read this stream asynchronously");
    return -1;
}

static gboolean close_fn(GInputStream *stream, GCancellable *cancellable, GError **error)
{
    abandon((SatchelStream *)stream);  // closed before its end: the reader is gone
    return TRUE;
}

static void close_async(GInputStream *stream, int priority, GCancellable *cancellable, GAsyncReadyCallback callback, gpointer data)
{
    GTask *task = g_task_new(stream, cancellable, callback, data);
    close_fn(stream, cancellable, NULL);
    g_task_return_boolean(task, TRUE);
    g_object_unref(task);
}

static gboolean close_finish(GInputStream *stream, GAsyncResult *result, GError **error)
{
    return g_task_propagate_boolean(G_TASK(result), error);
}

static void satchel_stream_finalize(GObject *object)
{
    SatchelStream *self = (SatchelStream *)object;
    abandon(self);
    if (self->cancellable) {
        g_cancellable_disconnect(self->cancellable, self->cancel_handler);
        g_object_unref(self->cancellable);
    }
    g_byte_array_unref(self->buffer);
    g_clear_error(&self->failure);
    if (self->ping_destroy) self->ping_destroy(self->ping_data);
    if (self->callbacks.release) self->callbacks.release(self->callbacks.context);
    G_OBJECT_CLASS(satchel_stream_parent_class)->finalize(object);
}

static void satchel_stream_class_init(SatchelStreamClass *klass)
{
    GInputStreamClass *stream_class = G_INPUT_STREAM_CLASS(klass);
    stream_class->read_fn = read_fn;
    stream_class->read_async = read_async;
    stream_class->read_finish = read_finish;
    stream_class->close_fn = close_fn;
    stream_class->close_async = close_async;
    stream_class->close_finish = close_finish;
    G_OBJECT_CLASS(klass)->finalize = satchel_stream_finalize;
}

static void satchel_stream_init(SatchelStream *self)
{
    self->buffer = g_byte_array_new();
}

GInputStream *satchel_stream_new(SatchelStreamCallbacks callbacks, gsize low_water)
{
    SatchelStream *self = g_object_new(satchel_stream_get_type(), NULL);
    self->callbacks = callbacks;
    self->low_water = low_water;
    return G_INPUT_STREAM(self);
}

void satchel_stream_set_pacing(GInputStream *stream, gsize window, gsize ping_interval, SatchelStreamPing ping, gpointer data, GDestroyNotify destroy)
{
    SatchelStream *self = (SatchelStream *)stream;
    g_return_if_fail(!self->paced && window > 0 && ping != NULL);
    self->paced = TRUE;
    self->window = window;
    self->ping_interval = MAX(1, MIN(ping_interval, window));
    self->ping = ping;
    self->ping_data = data;
    self->ping_destroy = destroy;
}

void satchel_stream_acknowledge(GInputStream *stream, guint64 mark)
{
    SatchelStream *self = (SatchelStream *)stream;
    if (mark == self->pinged_at) self->ping_in_flight = FALSE;
    if (mark > self->acknowledged) self->acknowledged = mark;
    if (self->handed - self->pinged_at >= self->ping_interval) ping(self);
    serve_pending(self);
}

guint64 satchel_stream_handed(GInputStream *stream) { return ((SatchelStream *)stream)->handed; }

guint64 satchel_stream_acknowledged(GInputStream *stream) { return ((SatchelStream *)stream)->acknowledged; }

/// A ping to a web view's web process (see satchel_stream_pace_with_web_view).
typedef struct {
    GInputStream *stream;  // a reference, so the stream outlives the round trip
    guint64 mark;
} WebViewPing;

static void web_view_ping_done(GObject *view, GAsyncResult *result, gpointer data)
{
    WebViewPing *ping = data;
    // The answer does not matter (false: there is no such command), nor does an error (a view being closed): the
    // round trip is over, so the web process dispatched everything sent before it.
    webkit_web_view_can_execute_editing_command_finish(WEBKIT_WEB_VIEW(view), result, NULL);
    satchel_stream_acknowledge(ping->stream, ping->mark);
    g_object_unref(ping->stream);
    g_free(ping);
}

static void web_view_ping(GInputStream *stream, guint64 mark, gpointer data)
{
    WebKitWebView *view = g_weak_ref_get((GWeakRef *)data);
    if (!view) {  // the view is gone and its loads with it: nothing left to pace against
        satchel_stream_acknowledge(stream, mark);
        return;
    }
    WebViewPing *ping = g_new(WebViewPing, 1);
    ping->stream = g_object_ref(stream);
    ping->mark = mark;
    // Validating a command that does not exist: a message the web process answers without touching the page (no
    // event, no layout), and only after dispatching every message sent before it on the same ordered channel, this
    // stream's data included.
    webkit_web_view_can_execute_editing_command(view, "SatchelStreamPacing", NULL, web_view_ping_done, ping);
    g_object_unref(view);
}

static void free_weak_ref(gpointer data)
{
    g_weak_ref_clear((GWeakRef *)data);
    g_free(data);
}

void satchel_stream_pace_with_web_view(GInputStream *stream, WebKitWebView *view, gsize window, gsize ping_interval)
{
    if (!view) return;
    GWeakRef *weak = g_new0(GWeakRef, 1);
    g_weak_ref_init(weak, view);
    satchel_stream_set_pacing(stream, window, ping_interval, web_view_ping, weak, free_weak_ref);
}

void satchel_stream_push(GInputStream *stream, const guint8 *bytes, gsize length)
{
    SatchelStream *self = (SatchelStream *)stream;
    if (self->ended || self->failure || self->abandoned) {
        if (self->callbacks.drained) self->callbacks.drained(self->callbacks.context);
        return;
    }
    if (self->offset > 0) {
        g_byte_array_remove_range(self->buffer, 0, (guint)self->offset);
        self->offset = 0;
    }
    g_byte_array_append(self->buffer, bytes, (guint)length);
    self->owes_drained = TRUE;
    serve_pending(self);
    if (self->owes_drained && unread(self) <= self->low_water) {
        self->owes_drained = FALSE;
        if (self->callbacks.drained) self->callbacks.drained(self->callbacks.context);
    }
}

void satchel_stream_end(GInputStream *stream)
{
    SatchelStream *self = (SatchelStream *)stream;
    self->ended = TRUE;
    serve_pending(self);
}

void satchel_stream_fail(GInputStream *stream, const char *message)
{
    SatchelStream *self = (SatchelStream *)stream;
    if (!self->failure) self->failure = g_error_new_literal(G_IO_ERROR, G_IO_ERROR_FAILED, message);
    serve_pending(self);
}

gsize satchel_stream_buffered(GInputStream *stream) { return unread((SatchelStream *)stream); }

gulong satchel_signal_connect(gpointer instance, const char *signal, GCallback handler, gpointer data)
{
    return g_signal_connect_data(instance, signal, handler, data, NULL, 0);
}

void satchel_weak_ref(gpointer object, GWeakNotify notify, gpointer data) { g_object_weak_ref(G_OBJECT(object), notify, data); }

void satchel_weak_unref(gpointer object, GWeakNotify notify, gpointer data) { g_object_weak_unref(G_OBJECT(object), notify, data); }

SoupServer *satchel_soup_server_new(void) { return soup_server_new("server-header", "Satchel", NULL); }

GError *satchel_io_error_new(const char *message) { return g_error_new_literal(G_IO_ERROR, G_IO_ERROR_FAILED, message); }

WebKitWebView *satchel_web_view_new(WebKitWebContext *context, WebKitNetworkSession *session, WebKitUserContentManager *manager,
                                    WebKitAutoplayPolicy autoplay)
{
    // Website policies are a construct-only property: autoplay is decided when the view is made, never after.
    WebKitWebsitePolicies *policies = webkit_website_policies_new_with_policies("autoplay", autoplay, NULL);
    WebKitWebView *view = WEBKIT_WEB_VIEW(g_object_new(WEBKIT_TYPE_WEB_VIEW, "web-context", context, "network-session", session,
                                                       "user-content-manager", manager, "website-policies", policies, NULL));
    g_object_unref(policies);
    return view;
}

WebKitWebContext *satchel_web_context_new(guint memory_limit_mb)
{
    if (memory_limit_mb == 0)
        return webkit_web_context_new();
    // Without a kill threshold the limit only makes WebKit release memory: nothing is ever killed (measured: a page
    // grew to 8.8 GB untouched). 1.0 kills at the limit; WebKit checks every poll interval.
    WebKitMemoryPressureSettings *settings = webkit_memory_pressure_settings_new();
    webkit_memory_pressure_settings_set_memory_limit(settings, memory_limit_mb);
    webkit_memory_pressure_settings_set_kill_threshold(settings, 1.0);
    webkit_memory_pressure_settings_set_poll_interval(settings, 0.5);
    WebKitWebContext *context = WEBKIT_WEB_CONTEXT(g_object_new(WEBKIT_TYPE_WEB_CONTEXT, "memory-pressure-settings", settings, NULL));
    webkit_memory_pressure_settings_free(settings);
    return context;
}
