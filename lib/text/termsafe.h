/* termsafe.h: text from a file or a peer (a run file's backend name or
 * hostname, a worker's model name, an error message), made safe to print on
 * a terminal. Part of benchctl_text (lib/text; not the ABI).
 *
 * C0 controls (U+0000..U+001F), DEL (U+007F), C1 controls (U+0080..U+009F,
 * whether sent as UTF-8 or as a lone byte) and every byte that does not
 * start a valid UTF-8 sequence become a visible "\xNN" escape, one per byte;
 * valid printable UTF-8 passes unchanged. So an ESC (0x1b) prints as the four
 * characters \x1b and can start no terminal control sequence.
 */
#ifndef BENCHCTL_LIB_TERMSAFE_H
#define BENCHCTL_LIB_TERMSAFE_H

#include <stddef.h>

#include "textbuf.h"

/* Appends s[0..n) to t, escaped as above; keep_newline: '\n' passes
 * unchanged (a multi-line report), else it is escaped too (one line). */
void bc_text_put_terminal(bc_text *t, const char *s, size_t n, int keep_newline);

/* s (NULL: "") escaped as above into buf of size bytes (size > 0), cut short
 * before an escape or a character that would not fit whole; returns buf. */
const char *bc_terminal_safe(char *buf, size_t size, const char *s);

/* 1 when s (n bytes) prints unchanged through bc_text_put_terminal with
 * keep_newline set. */
int bc_terminal_is_safe(const char *s, size_t n);

#endif
