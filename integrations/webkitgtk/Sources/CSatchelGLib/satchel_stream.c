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
} SatchelStream;

typedef struct {
    GInputStreamClass parent_class;
} SatchelStreamClass;

G_DEFINE_TYPE(SatchelStream, satchel_stream, G_TYPE_INPUT_STREAM)

static gint live_streams = 0;

static gsize unread(SatchelStream *self) { return self->buffer->len - self->offset; }

/// Copies up to `count` held bytes into `into`; tells the owner when the stream has room again.
static gsize take(SatchelStream *self, void *into, gsize count)
{
    gsize n = MIN(count, unread(self));
    memcpy(into, self->buffer->data + self->offset, n);
    self->offset += n;
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
    if (!self->pending) return;
    GTask *task = self->pending;
    if (unread(self) > 0) {
        self->pending = NULL;
        gssize n = (gssize)take(self, self->pending_buffer, self->pending_count);
        g_task_return_int(task, n);
        g_object_unref(task);
    } else if (self->failure) {
        self->pending = NULL;
        g_task_return_error(task, g_error_copy(self->failure));
        g_object_unref(task);
    } else if (self->ended) {
        self->pending = NULL;
        g_task_return_int(task, 0);
        g_object_unref(task);
    }
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
    if (unread(self) > 0) return (gssize)take(self, buffer, count);
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
    if (self->callbacks.release) self->callbacks.release(self->callbacks.context);
    g_atomic_int_dec_and_test(&live_streams);
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
    g_atomic_int_inc(&live_streams);
}

GInputStream *satchel_stream_new(SatchelStreamCallbacks callbacks, gsize low_water)
{
    SatchelStream *self = g_object_new(satchel_stream_get_type(), NULL);
    self->callbacks = callbacks;
    self->low_water = low_water;
    return G_INPUT_STREAM(self);
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

gint satchel_stream_live_count(void) { return g_atomic_int_get(&live_streams); }

gulong satchel_signal_connect(gpointer instance, const char *signal, GCallback handler, gpointer data)
{
    return g_signal_connect_data(instance, signal, handler, data, NULL, 0);
}

void satchel_weak_ref(gpointer object, GWeakNotify notify, gpointer data) { g_object_weak_ref(G_OBJECT(object), notify, data); }

void satchel_weak_unref(gpointer object, GWeakNotify notify, gpointer data) { g_object_weak_unref(G_OBJECT(object), notify, data); }

GError *satchel_io_error_new(const char *message) { return g_error_new_literal(G_IO_ERROR, G_IO_ERROR_FAILED, message); }

WebKitWebView *satchel_web_view_new(WebKitWebContext *context, WebKitNetworkSession *session, WebKitUserContentManager *manager)
{
    return WEBKIT_WEB_VIEW(g_object_new(WEBKIT_TYPE_WEB_VIEW, "web-context", context, "network-session", session,
                                        "user-content-manager", manager, NULL));
}
