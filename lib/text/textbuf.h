/* textbuf.h: bc_text, a growable NUL-terminated text buffer that the JSON
 * and HTML writers (reporters/common/jsonw.h, lib/html/htmlw.h) and the
 * reporters append to. Out of memory is sticky: once failed is set, every
 * later put is a no-op, so a writer checks once, at the end.
 * Part of benchctl_text (lib/text; compiled into the core and into each
 * plugin that uses it; not the ABI).
 *
 * Ownership: the caller owns the bc_text (usually on its stack, zeroed) and
 * frees buf with free().
 */
#ifndef BENCHCTL_LIB_TEXTBUF_H
#define BENCHCTL_LIB_TEXTBUF_H

#include <stddef.h>

typedef struct bc_text {
    char *buf;       /* NUL-terminated text, owned by the caller */
    size_t len, cap; /* bytes used (without the NUL), bytes allocated */
    int failed;      /* out of memory; sticky: every later put is a no-op */
} bc_text;

void bc_text_put(bc_text *t, const char *s, size_t n);
void bc_text_puts(bc_text *t, const char *s);
void bc_text_printf(bc_text *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
