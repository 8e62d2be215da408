/* jsonw.h: a small streaming JSON writer into a growable memory buffer,
 * shared by the json and jsonl reporters (static library
 * benchctl_reporter_common, compiled into each plugin; not part of the ABI).
 *
 * Always produces valid JSON: strings are escaped (control characters as
 * \uXXXX, invalid UTF-8 bytes as U+FFFD), non-finite doubles become null,
 * doubles are written in the shortest form that reads back to the same value.
 * Commas, colons and indentation are placed by the writer; callers only say
 * begin/end, key and value. Out of memory is sticky: every later call is a
 * no-op and bc_jw_failed() says so.
 *
 * Ownership: the caller owns the bc_jw (usually on its stack); bc_jw_free
 * releases the buffer.
 */
#ifndef BENCHCTL_REPORTERS_JSONW_H
#define BENCHCTL_REPORTERS_JSONW_H

#include <stddef.h>
#include <stdint.h>

#include "report_file.h"

#define BC_JW_MAX_DEPTH 32

typedef struct bc_jw {
    bc_text text;      /* the JSON written so far (text.buf, NUL-terminated, owned; text.len bytes);
                          text.failed: out of memory or misuse, sticky */
    int indent;        /* spaces per level; 0 = everything on one line */
    int depth;         /* open objects/arrays */
    int count[BC_JW_MAX_DEPTH]; /* values written so far at each depth */
    int after_key;     /* a key was written and waits for its value */
} bc_jw;

void bc_jw_init(bc_jw *w, int indent);
void bc_jw_free(bc_jw *w);
/* Forgets the text but keeps the buffer (for one-line-at-a-time writers). */
void bc_jw_reset(bc_jw *w);
int bc_jw_failed(const bc_jw *w);

void bc_jw_begin_object(bc_jw *w);
void bc_jw_end_object(bc_jw *w);
void bc_jw_begin_array(bc_jw *w);
void bc_jw_end_array(bc_jw *w);
void bc_jw_key(bc_jw *w, const char *key);

void bc_jw_string(bc_jw *w, const char *s); /* NULL writes null */
void bc_jw_double(bc_jw *w, double x);      /* NaN and inf write null */
void bc_jw_int(bc_jw *w, int64_t x);
void bc_jw_uint(bc_jw *w, uint64_t x);
void bc_jw_bool(bc_jw *w, int b);
void bc_jw_null(bc_jw *w);

/* Ends a finished document with a newline (for files and journal lines). */
void bc_jw_newline(bc_jw *w);

/* An integer where negative means unknown: writes null when x < 0. */
void bc_jw_int_or_null(bc_jw *w, int64_t x);

/* "key": value in one call, for objects written field by field. */
static inline void bc_jw_key_string(bc_jw *w, const char *k, const char *v) { bc_jw_key(w, k); bc_jw_string(w, v); }
static inline void bc_jw_key_double(bc_jw *w, const char *k, double v) { bc_jw_key(w, k); bc_jw_double(w, v); }
static inline void bc_jw_key_int(bc_jw *w, const char *k, int64_t v) { bc_jw_key(w, k); bc_jw_int(w, v); }
static inline void bc_jw_key_uint(bc_jw *w, const char *k, uint64_t v) { bc_jw_key(w, k); bc_jw_uint(w, v); }
static inline void bc_jw_key_bool(bc_jw *w, const char *k, int v) { bc_jw_key(w, k); bc_jw_bool(w, v); }
static inline void bc_jw_key_int_or_null(bc_jw *w, const char *k, int64_t v) { bc_jw_key(w, k); bc_jw_int_or_null(w, v); }

/* Formats x in the shortest "%.*g" form that strtod reads back exactly
 * (at most 17 significant digits), always with '.' as the decimal point.
 * Writes "" and returns 0 when x is NaN or infinite; else returns the length.
 * size must be at least 32. */
int bc_format_double(char *buf, size_t size, double x);

#endif
