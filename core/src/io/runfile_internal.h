/* runfile_internal.h: what the files of the run-file reader share
 * (runfile.h is their public face):
 *   runfile.c         reading the file (plain or .gz), telling the formats
 *                     apart, the report's and the journal's top level
 *   runfile_header.c  the run: environment, settings, plugins, fields and
 *                     their descriptors
 *   runfile_case.c    one case: axes, status, measurements, its key
 *   runfile_query.c   lookups, compare --by's axis filter, freeing
 * and the jansson accessors below, which read a member as the reader wants
 * it (a missing or mistyped member is the fallback, never an error). */
#ifndef BENCHCTL_RUNFILE_INTERNAL_H
#define BENCHCTL_RUNFILE_INTERNAL_H

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runfile.h"

/* A string member, copied (malloc'ed, the caller's); NULL when absent, null
 * or not a string. */
static inline char *bc_rf_string(const json_t *obj, const char *key) {
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? strdup(s) : NULL;
}

/* A number member; fallback when absent, null or not a number. */
static inline double bc_rf_number(const json_t *obj, const char *key, double fallback) {
    const json_t *v = json_object_get(obj, key);
    return json_is_number(v) ? json_number_value(v) : fallback;
}

/* An integer member (a real is truncated, one outside int64 is the
 * fallback); fallback when absent, null or not a number. */
static inline int64_t bc_rf_int(const json_t *obj, const char *key, int64_t fallback) {
    const json_t *v = json_object_get(obj, key);
    if (json_is_integer(v)) return (int64_t)json_integer_value(v);
    if (json_is_real(v)) {
        double d = json_real_value(v);
        return d >= -9.2e18 && d <= 9.2e18 ? (int64_t)d : fallback;
    }
    return fallback;
}

/* The header (a report's top level, or the journal's "run" record) into rf. */
bc_status bc_rf_read_header(bc_runfile *rf, const json_t *top, bc_error *err);

/* Without a "fields" list (the seed format): the keys of the first profile
 * found, in their order. */
bc_status bc_rf_fields_from_profiles(bc_runfile *rf, const json_t *cases, bc_error *err);

/* rf->field_descs from top's "metrics" (runfile.h). */
bc_status bc_rf_read_field_descs(bc_runfile *rf, const json_t *top, bc_error *err);

/* Appends the case object c (top: the header it inherits defaults from). */
bc_status bc_rf_add_case(bc_runfile *rf, const json_t *top, const json_t *c, bc_error *err);

/* With more than one backend named by rf's cases, every key names its
 * case's backend. */
bc_status bc_rf_key_by_backend(bc_runfile *rf, bc_error *err);

/* Frees what one case owns. */
void bc_rf_free_case(bc_runfile_case *c);

#endif
