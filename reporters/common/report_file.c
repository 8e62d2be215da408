/* report_file.c: see report_file.h. */
#include "report_file.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bc_text_put(bc_text *t, const char *s, size_t n) {
    if (t->failed) return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (t->len + n + 1 > cap) cap *= 2;
        char *nb = realloc(t->buf, cap);
        if (!nb) {
            t->failed = 1;
            return;
        }
        t->buf = nb;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

void bc_text_puts(bc_text *t, const char *s) { bc_text_put(t, s, strlen(s)); }

void bc_text_printf(bc_text *t, const char *fmt, ...) {
    char small[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        t->failed = 1;
        return;
    }
    if ((size_t)n < sizeof small) {
        bc_text_put(t, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1); /* a long line: format it again, whole */
    if (!big) {
        t->failed = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    bc_text_put(t, big, (size_t)n);
    free(big);
}

bc_status bc_report_check_output(const bc_host *host, const char *who, const char *path, bc_error *err) {
    if (!path || !*path) return bc_error_set(err, BC_ERR_SETTING, "%s: setting path is empty", who);
    if (!BC_HAS(host, bc_host, output_check) || !host->output_check) return BC_OK;
    return host->output_check(host, path, err);
}

bc_status bc_report_write_file(const bc_host *host, const char *path, const char *buf, size_t len, bc_error *err) {
    bc_output *out = host->output_open(host, path, err);
    if (!out) return err && err->code ? err->code : BC_ERR_IO;
    bc_status st = host->output_write(out, buf, len, err);
    if (st != BC_OK) {
        host->output_abort(out);
        return st;
    }
    return host->output_commit(out, err);
}
