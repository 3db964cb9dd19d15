// WebKitGTK 6.0 (GTK 4) and the libraries its API hands out: GLib/GIO, GTK, libsoup 3.
#include <gtk/gtk.h>
#include <webkit/webkit.h>
#include <libsoup/soup.h>
