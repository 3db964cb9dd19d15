// The parts of libIndexStore's C interface (the toolchain's indexstore/indexstore.h, format version 0.x) that the
// availability check reads, as function-pointer types: the library is opened with dlopen at run time, so nothing
// here links against it and the package builds with any toolchain.
#ifndef C_INDEX_STORE_H
#define C_INDEX_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  const char *data;
  size_t length;
} ci_string_ref;

typedef void *ci_opaque;
typedef bool (*ci_unit_name_applier)(void *context, ci_string_ref unit_name);
typedef bool (*ci_opaque_applier)(void *context, ci_opaque item);

typedef ci_opaque (*ci_store_create_fn)(const char *store_path, ci_opaque *error);
typedef void (*ci_dispose_fn)(ci_opaque);
typedef const char *(*ci_error_get_description_fn)(ci_opaque error);
typedef bool (*ci_store_units_apply_fn)(ci_opaque store, unsigned sorted, void *context, ci_unit_name_applier applier);
typedef ci_opaque (*ci_reader_create_fn)(ci_opaque store, const char *name, ci_opaque *error);
typedef ci_string_ref (*ci_string_getter_fn)(ci_opaque);
typedef bool (*ci_apply_fn)(ci_opaque reader, void *context, ci_opaque_applier applier);
typedef int (*ci_dependency_get_kind_fn)(ci_opaque dependency);
typedef ci_opaque (*ci_occurrence_get_symbol_fn)(ci_opaque occurrence);
typedef uint64_t (*ci_occurrence_get_roles_fn)(ci_opaque occurrence);
typedef void (*ci_occurrence_get_line_col_fn)(ci_opaque occurrence, unsigned *line, unsigned *column);

#endif
