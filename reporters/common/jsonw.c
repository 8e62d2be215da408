/* jsonw.c: the streaming JSON writer (see jsonw.h). */
#include "jsonw.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

void bc_jw_init(bc_jw *w, int indent) {
    memset(w, 0, sizeof *w);
    w->indent = indent < 0 ? 0 : indent;
}

void bc_jw_free(bc_jw *w) {
    free(w->text.buf);
    w->text = (bc_text){0};
}

void bc_jw_reset(bc_jw *w) {
    int indent = w->indent;
    char *buf = w->text.buf;
    size_t cap = w->text.cap;
    memset(w, 0, sizeof *w);
    w->indent = indent;
    w->text.buf = buf;
    w->text.cap = cap;
    if (buf) buf[0] = '\0';
}

int bc_jw_failed(const bc_jw *w) { return w->text.failed; }

static void put(bc_jw *w, const char *s, size_t n) { bc_text_put(&w->text, s, n); }

static void puts_(bc_jw *w, const char *s) { put(w, s, strlen(s)); }

static void newline_indent(bc_jw *w, int depth) {
    if (w->indent <= 0) return;
    put(w, "\n", 1);
    for (int i = 0; i < depth * w->indent; i++) put(w, " ", 1);
}

/* Everything a value needs before it: a comma and a new line inside a
 * container, nothing right after a key. */
static void before_value(bc_jw *w) {
    if (w->after_key) {
        w->after_key = 0;
        return;
    }
    if (w->depth > 0) {
        if (w->count[w->depth - 1] > 0) put(w, ",", 1);
        newline_indent(w, w->depth);
        w->count[w->depth - 1]++;
    }
}

static void begin(bc_jw *w, char open) {
    before_value(w);
    if (w->depth >= BC_JW_MAX_DEPTH) {
        w->text.failed = 1;
        return;
    }
    put(w, &open, 1);
    w->count[w->depth++] = 0;
}

static void end(bc_jw *w, char close) {
    if (w->depth <= 0) {
        w->text.failed = 1;
        return;
    }
    w->depth--;
    if (w->count[w->depth] > 0) newline_indent(w, w->depth);
    put(w, &close, 1);
}

void bc_jw_begin_object(bc_jw *w) { begin(w, '{'); }
void bc_jw_end_object(bc_jw *w) { end(w, '}'); }
void bc_jw_begin_array(bc_jw *w) { begin(w, '['); }
void bc_jw_end_array(bc_jw *w) { end(w, ']'); }

static void put_escaped(bc_jw *w, const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    put(w, "\"", 1);
    while (*p) {
        unsigned char c = *p;
        switch (c) {
        case '"': puts_(w, "\\\""); p++; continue;
        case '\\': puts_(w, "\\\\"); p++; continue;
        case '\n': puts_(w, "\\n"); p++; continue;
        case '\r': puts_(w, "\\r"); p++; continue;
        case '\t': puts_(w, "\\t"); p++; continue;
        default: break;
        }
        if (c < 0x20 || c == 0x7F) {
            char esc[8];
            snprintf(esc, sizeof esc, "\\u%04x", c);
            puts_(w, esc);
            p++;
            continue;
        }
        /* The NUL terminator stops bc_utf8_seq_len from reading past the end:
         * a continuation check fails on it first. */
        size_t n = bc_utf8_seq_len(p);
        if (n == 0) {
            puts_(w, "\\ufffd");
            p++;
        } else {
            put(w, (const char *)p, n);
            p += n;
        }
    }
    put(w, "\"", 1);
}

void bc_jw_key(bc_jw *w, const char *key) {
    if (w->depth <= 0 || w->after_key) {
        w->text.failed = 1;
        return;
    }
    before_value(w);
    put_escaped(w, key ? key : "");
    puts_(w, w->indent > 0 ? ": " : ":");
    w->after_key = 1;
}

void bc_jw_string(bc_jw *w, const char *s) {
    if (!s) {
        bc_jw_null(w);
        return;
    }
    before_value(w);
    put_escaped(w, s);
}

int bc_format_double(char *buf, size_t size, double x) {
    if (size < 32 || !isfinite(x)) {
        if (size > 0) buf[0] = '\0';
        return 0;
    }
    int n = 0;
    /* Integral values (token counts, whole milliseconds) are written as
     * integers: "%g" would turn 30 into "3e+01", which readers take as a
     * float. Every integer below 2^53 is exact in a double. */
    if (x == floor(x) && fabs(x) < 9007199254740992.0) {
        n = snprintf(buf, size, "%.0f", x);
        return n;
    }
    for (int prec = 1; prec <= 17; prec++) {
        n = snprintf(buf, size, "%.*g", prec, x);
        if (strtod(buf, NULL) == x) break;
    }
    /* A locale with ',' as the decimal point must not leak into JSON or CSV. */
    for (char *p = buf; *p; p++)
        if (*p == ',') *p = '.';
    return n;
}

void bc_jw_double(bc_jw *w, double x) {
    char num[40];
    if (bc_format_double(num, sizeof num, x) == 0) {
        bc_jw_null(w);
        return;
    }
    before_value(w);
    puts_(w, num);
}

void bc_jw_int(bc_jw *w, int64_t x) {
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)x);
    before_value(w);
    puts_(w, num);
}

void bc_jw_uint(bc_jw *w, uint64_t x) {
    char num[32];
    snprintf(num, sizeof num, "%llu", (unsigned long long)x);
    before_value(w);
    puts_(w, num);
}

void bc_jw_bool(bc_jw *w, int b) {
    before_value(w);
    puts_(w, b ? "true" : "false");
}

void bc_jw_null(bc_jw *w) {
    before_value(w);
    puts_(w, "null");
}

void bc_jw_newline(bc_jw *w) { put(w, "\n", 1); }

void bc_jw_int_or_null(bc_jw *w, int64_t x) {
    if (x < 0)
        bc_jw_null(w);
    else
        bc_jw_int(w, x);
}
