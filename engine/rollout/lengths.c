/* lengths.c: response lengths per row (lengths.h). */
#define _POSIX_C_SOURCE 200809L
#include "lengths.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "sampling.h"

/* Row generators of the lengths: the run's seed, a stream of its own. */
#define LENGTHS_STREAM 0x6c656e67746873ull /* "lengths" */

/* A standard normal from two uniforms (Box-Muller). */
static double normal01(eng_rng *g) {
    const double u1 = 1.0 - eng_rng_uniform(g); /* (0, 1]: log is finite */
    const double u2 = eng_rng_uniform(g);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

static int clamp_len(double x, int Tr) {
    if (!(x >= 1.0)) return 1; /* NaN too */
    if (x >= (double)Tr) return Tr;
    return (int)x;
}

void eng_lengths_draw(const eng_length_dist *d, uint64_t seed, int Tr, int R, int *len) {
    for (int r = 0; r < R; r++) {
        eng_rng g = eng_rng_for_row(seed ^ LENGTHS_STREAM, (uint64_t)r);
        switch (d->kind) {
        case ENG_LENGTHS_UNIFORM: {
            const int lo = clamp_len(ceil(d->min_ratio * Tr), Tr);
            len[r] = lo + (int)(eng_rng_next(&g) % (uint64_t)(Tr - lo + 1));
            break;
        }
        case ENG_LENGTHS_LOGNORMAL: {
            const double mu = log(d->mean) - 0.5 * d->sigma * d->sigma;
            len[r] = clamp_len(floor(exp(mu + d->sigma * normal01(&g)) + 0.5), Tr);
            break;
        }
        case ENG_LENGTHS_EMPIRICAL:
            len[r] = d->n_values > 0 ? clamp_len(d->values[eng_rng_next(&g) % (uint64_t)d->n_values], Tr) : Tr;
            break;
        default:
            len[r] = Tr;
        }
    }
}

static int cmp_int(const void *a, const void *b) {
    const int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The q-quantile of sorted x[n], linear between neighbours. */
static double quantile(const int *x, int n, double q) {
    const double pos = q * (n - 1);
    const int i = (int)pos;
    if (i + 1 >= n) return x[n - 1];
    return x[i] + (pos - i) * (x[i + 1] - x[i]);
}

eng_length_summary eng_lengths_summarize(const int *len, int n, int *scratch) {
    eng_length_summary s = {NAN, NAN, NAN, NAN};
    if (n < 1) return s;
    memcpy(scratch, len, (size_t)n * sizeof *scratch);
    qsort(scratch, (size_t)n, sizeof *scratch, cmp_int);
    s.min = scratch[0];
    s.max = scratch[n - 1];
    s.p50 = quantile(scratch, n, 0.50);
    s.p95 = quantile(scratch, n, 0.95);
    return s;
}

bc_status eng_lengths_read(const char *path, int32_t **values, int *n_values, bc_error *err) {
    *values = NULL;
    *n_values = 0;
    char *text = NULL;
    size_t len = 0;
    bc_status st = eng_read_regular(path, "response_lengths_file", ENG_PROMPTS_MAX_BYTES, &text, &len, err);
    if (st != BC_OK) return st;
    int32_t *v = NULL;
    int n = 0, cap = 0, line = 1;
    for (char *p = text; *p && st == BC_OK;) {
        if (*p == '\n') line++;
        if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') {
            p++;
            continue;
        }
        if (*p == '#') {
            while (*p && *p != '\n') p++;
            continue;
        }
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || errno || x < 1 || x > INT32_MAX || (*end && !strchr(" \t\r\n#", *end))) {
            st = bc_error_set(err, BC_ERR_FORMAT, "response_lengths_file %s:%d: \"%.20s\" is not a length >= 1", path,
                              line, p);
            break;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            int32_t *nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv) {
                st = bc_error_set(err, BC_ERR_NOMEM, "response_lengths_file %s: no memory", path);
                break;
            }
            v = nv;
        }
        v[n++] = (int32_t)x;
        p = end;
    }
    if (st == BC_OK && memchr(text, '\0', len))
        st = bc_error_set(err, BC_ERR_FORMAT, "response_lengths_file %s: holds a NUL byte; the file must be text",
                          path);
    if (st == BC_OK && n == 0)
        st = bc_error_set(err, BC_ERR_FORMAT, "response_lengths_file %s: no lengths (integers >= 1)", path);
    free(text);
    if (st != BC_OK) {
        free(v);
        return st;
    }
    *values = v;
    *n_values = n;
    return BC_OK;
}
