/* termsafe.c: see termsafe.h. */
#include "termsafe.h"

#include <stdio.h>

#include "utf8.h"

/* Bytes of the piece of s at i, remaining n - i bytes: the length of a valid
 * printable character (copied as it is), or 0 for one byte to escape. */
static size_t printable_len(const unsigned char *s, size_t i, size_t n, int keep_newline) {
    unsigned char c = s[i];
    if (c < 0x20) return keep_newline && c == '\n' ? 1 : 0;
    if (c == 0x7f) return 0;
    if (c < 0x80) return 1;
    /* bc_utf8_seq_len stops at a non-continuation byte, so bound it by n */
    unsigned char seq[4] = {0};
    size_t avail = n - i < 4 ? n - i : 4;
    for (size_t k = 0; k < avail; k++) seq[k] = s[i + k];
    size_t len = bc_utf8_seq_len(seq);
    if (len == 0 || len > avail) return 0;
    if (len == 2 && seq[0] == 0xC2 && seq[1] < 0xA0) return 0; /* C1: U+0080..U+009F */
    return len;
}

void bc_text_put_terminal(bc_text *t, const char *s, size_t n, int keep_newline) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t run = i; /* a stretch of printable characters, copied at once */
        size_t len;
        while (run < n && (len = printable_len(u, run, n, keep_newline)) > 0) run += len;
        if (run > i) bc_text_put(t, s + i, run - i);
        if (run >= n) break;
        char esc[8];
        snprintf(esc, sizeof esc, "\\x%02x", u[run]);
        bc_text_put(t, esc, 4);
        i = run + 1;
    }
}

const char *bc_terminal_safe(char *buf, size_t size, const char *s) {
    if (!s) s = "";
    const unsigned char *u = (const unsigned char *)s;
    size_t n = 0, out = 0;
    while (u[n]) n++;
    for (size_t i = 0; i < n;) {
        size_t len = printable_len(u, i, n, 0);
        size_t need = len ? len : 4;
        if (out + need + 1 > size) break;
        if (len) {
            for (size_t k = 0; k < len; k++) buf[out++] = s[i + k];
            i += len;
        } else {
            snprintf(buf + out, 5, "\\x%02x", u[i]);
            out += 4;
            i++;
        }
    }
    buf[out] = '\0';
    return buf;
}

int bc_terminal_is_safe(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t len = printable_len(u, i, n, 1);
        if (!len) return 0;
        i += len;
    }
    return 1;
}
