/* htmlw.h: the small pieces a self-contained HTML page with inline SVG
 * charts is written from, into a bc_text (lib/text/textbuf.h): text escaped
 * so that the page is always well-formed XML as well as HTML, numbers for
 * table cells and labels, and "nice" axis ticks on linear and log2 axes.
 * Used by the html reporter (reporters/html) and by `benchctl compare
 * --html` (core/src/analysis/compare_html.c); nothing here knows about a
 * run or about plugin.h. The library benchctl_html (lib/html; compiled into
 * the core and into the html reporter; not the ABI).
 *
 * Every function appends to t and is a no-op once t->failed is set (out of
 * memory is sticky, as in bc_text).
 */
#ifndef BENCHCTL_LIB_HTMLW_H
#define BENCHCTL_LIB_HTMLW_H

#include <stddef.h>

#include "textbuf.h"

/* Appends s as element text or as the inside of a double-quoted attribute
 * value: & < > " ' become entities; bytes that are not valid UTF-8 (and
 * U+FFFE, U+FFFF) become U+FFFD; control characters other than tab, line
 * feed and carriage return are dropped, since XML 1.0 cannot carry them.
 * NULL appends nothing. */
void bc_html_text(bc_text *t, const char *s);

/* bc_html_text of the formatted string. */
void bc_html_textf(bc_text *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* A measured value for a table cell or a label, with precision that fits
 * its size: "12345", "123.4", "12.34", "1.23", "0.0123"; "" for NaN and
 * infinities (the caller writes its own "not measured" mark). Always '.' as
 * the decimal point. Returns the length; size must be at least 32. */
int bc_html_format_number(char *buf, size_t size, double v);

/* An axis tick label: v with as many decimals as a step of step needs
 * ("0", "2.5", "0.25"), "-0" written as "0". size must be at least 32. */
int bc_html_format_tick(char *buf, size_t size, double v, double step);

#define BC_TICKS_MAX 24

/* Ticks of one axis: v[0..n), ascending, covering [lo, hi]. */
typedef struct bc_ticks {
    double lo, hi; /* the axis range (the outer ticks, or the data padded) */
    double step;   /* linear: the distance between ticks; log2: the ratio */
    int n;
    double v[BC_TICKS_MAX];
} bc_ticks;

/* Linear ticks at 1, 2 or 5 times a power of ten, about target of them
 * (2 <= target <= BC_TICKS_MAX / 2), the range widened to the outer ticks.
 * lo == hi (one value) gets a range around it; NaN or infinite bounds give
 * the range [0, 1]. */
void bc_ticks_linear(bc_ticks *tk, double lo, double hi, int target);

/* Ticks on a log2 axis over [lo, hi] (0 < lo <= hi): powers of two, every
 * k-th one so that at most target are labelled; the range is the data
 * widened by half a power of two on each side (a single value sits in the
 * middle). */
void bc_ticks_log2(bc_ticks *tk, double lo, double hi, int target);

#endif
