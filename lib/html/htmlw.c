/* htmlw.c: see htmlw.h. */
#include "htmlw.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

void bc_html_text(bc_text *t, const char *s) {
    if (!s) return;
    const unsigned char *p = (const unsigned char *)s;
    while (*p && !t->failed) {
        const unsigned char *run = p; /* bytes that need no escape, copied in one go */
        while (*p >= 0x20 && *p < 0x7F && *p != '&' && *p != '<' && *p != '>' && *p != '"' && *p != '\'') p++;
        if (p > run) bc_text_put(t, (const char *)run, (size_t)(p - run));
        unsigned char c = *p;
        if (c == '\0') break;
        switch (c) {
        case '&': bc_text_puts(t, "&amp;"); p++; continue;
        case '<': bc_text_puts(t, "&lt;"); p++; continue;
        case '>': bc_text_puts(t, "&gt;"); p++; continue;
        case '"': bc_text_puts(t, "&quot;"); p++; continue;
        case '\'': bc_text_puts(t, "&#39;"); p++; continue;
        case '\t': case '\n': case '\r': bc_text_put(t, (const char *)p, 1); p++; continue;
        default: break;
        }
        if (c < 0x20 || c == 0x7F) { /* not allowed (or discouraged) in XML 1.0 */
            p++;
            continue;
        }
        size_t n = bc_utf8_seq_len(p);
        /* U+FFFE and U+FFFF are not XML characters either. */
        if (n == 0 || (n == 3 && p[0] == 0xEF && p[1] == 0xBF && p[2] >= 0xBE)) {
            bc_text_puts(t, "\xEF\xBF\xBD"); /* U+FFFD */
            p += n ? n : 1;
        } else {
            bc_text_put(t, (const char *)p, n);
            p += n;
        }
    }
}

void bc_html_textf(bc_text *t, const char *fmt, ...) {
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        t->failed = 1;
        return;
    }
    if ((size_t)n < sizeof small) {
        bc_html_text(t, small);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        t->failed = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    bc_html_text(t, big);
    free(big);
}

/* snprintf gives the locale's decimal point; the page always has '.'. */
static int fix_point(char *buf, int n) {
    for (int i = 0; i < n; i++)
        if (buf[i] == ',') buf[i] = '.';
    return n;
}

int bc_html_format_number(char *buf, size_t size, double v) {
    if (!isfinite(v)) {
        buf[0] = '\0';
        return 0;
    }
    double a = fabs(v);
    int n;
    if (a >= 1e9 || (a > 0 && a < 1e-3))
        n = snprintf(buf, size, "%.3g", v);
    else if (a >= 1000)
        n = snprintf(buf, size, "%.0f", v);
    else if (a >= 100)
        n = snprintf(buf, size, "%.1f", v);
    else if (a >= 1)
        n = snprintf(buf, size, "%.2f", v);
    else
        n = snprintf(buf, size, "%.3g", v);
    if (n > 1 && buf[0] == '-' && strspn(buf + 1, "0.") == (size_t)(n - 1)) { /* "-0.00" */
        memmove(buf, buf + 1, (size_t)n);
        n--;
    }
    return fix_point(buf, n);
}

int bc_html_format_tick(char *buf, size_t size, double v, double step) {
    int decimals = 0;
    if (step > 0 && isfinite(step)) {
        double d = -floor(log10(step) + 1e-9);
        decimals = d > 0 ? (int)d : 0;
        if (decimals > 9) decimals = 9;
        /* a step of 2.5 or 0.25 needs one decimal more than its power of ten */
        double scaled = step * pow(10.0, decimals);
        if (fabs(scaled - floor(scaled + 0.5)) > 1e-6 && decimals < 9) decimals++;
    }
    if (fabs(v) < step * 1e-9) v = 0.0; /* -0 and rounding noise at zero */
    return fix_point(buf, snprintf(buf, size, "%.*f", decimals, v));
}

void bc_ticks_linear(bc_ticks *tk, double lo, double hi, int target) {
    memset(tk, 0, sizeof *tk);
    if (target < 2) target = 2;
    if (target > BC_TICKS_MAX / 2) target = BC_TICKS_MAX / 2;
    if (!isfinite(lo) || !isfinite(hi)) lo = 0.0, hi = 1.0;
    if (lo > hi) {
        double x = lo;
        lo = hi;
        hi = x;
    }
    if (hi - lo <= fabs(hi) * 1e-12) { /* one value: a range around it */
        double pad = hi != 0.0 ? fabs(hi) * 0.5 : 1.0;
        lo = lo >= 0.0 && lo - pad < 0.0 ? 0.0 : lo - pad;
        hi = hi + pad;
    }
    double raw = (hi - lo) / target;
    double mag = pow(10.0, floor(log10(raw)));
    double step = mag;
    if (raw > 5.0 * mag)
        step = 10.0 * mag;
    else if (raw > 2.0 * mag)
        step = 5.0 * mag;
    else if (raw > mag)
        step = 2.0 * mag;
    double first = floor(lo / step + 1e-9), last = ceil(hi / step - 1e-9);
    int n = (int)(last - first) + 1;
    if (n > BC_TICKS_MAX) n = BC_TICKS_MAX;
    for (int i = 0; i < n; i++) tk->v[i] = (first + i) * step;
    tk->n = n;
    tk->step = step;
    tk->lo = tk->v[0];
    tk->hi = tk->v[n - 1];
}

void bc_ticks_log2(bc_ticks *tk, double lo, double hi, int target) {
    memset(tk, 0, sizeof *tk);
    if (!(lo > 0) || !isfinite(lo) || !isfinite(hi) || hi < lo) lo = 1.0, hi = 1.0;
    if (target < 1) target = 1;
    if (target > BC_TICKS_MAX) target = BC_TICKS_MAX;
    int a = (int)floor(log2(lo) + 1e-9), b = (int)ceil(log2(hi) - 1e-9);
    int count = b - a + 1, k = (count + target - 1) / target;
    for (int p = a; p <= b && tk->n < BC_TICKS_MAX; p++)
        if (((p % k) + k) % k == 0) tk->v[tk->n++] = ldexp(1.0, p);
    tk->step = ldexp(1.0, k);
    tk->lo = ldexp(1.0, a) / sqrt(2.0);
    tk->hi = ldexp(1.0, b) * sqrt(2.0);
}
