#ifndef SATCHEL_CZLIB_SHIM_H
#define SATCHEL_CZLIB_SHIM_H
#include <zlib.h>

// deflateInit2 and inflateInit2 are macros that pass the library version and stream size; Swift calls the
// underlying functions, so expose the values the macros would pass.
static inline const char *satchel_zlib_version(void) { return ZLIB_VERSION; }
static inline int satchel_z_stream_size(void) { return (int)sizeof(z_stream); }
#endif
