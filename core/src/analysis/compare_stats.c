/* compare_stats.c: median, Mann-Whitney U, bootstrap interval of a ratio of
 * medians and the verdict rule of `benchctl compare` (definitions in
 * compare_stats.h). Pure functions: no I/O, no globals. */
#include "compare_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Median of sorted[n], n >= 1. */
static double median_sorted(const double *sorted, size_t n) {
    return n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

/* Sorts x[n] in place: insertion sort for the small arrays the bootstrap
 * resamples (a few to a few dozen values), qsort above that. */
static void sort_doubles(double *x, size_t n) {
    if (n > 32) {
        qsort(x, n, sizeof *x, cmp_double);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        double v = x[i];
        size_t j = i;
        for (; j > 0 && x[j - 1] > v; j--) x[j] = x[j - 1];
        x[j] = v;
    }
}

double bc_cmp_median(const double *x, size_t n, double *scratch) {
    if (n == 0) return NAN;
    memcpy(scratch, x, n * sizeof *x);
    sort_doubles(scratch, n);
    return median_sorted(scratch, n);
}

double bc_cmp_change(double ratio, int higher_is_better) {
    if (!(isfinite(ratio) && ratio > 0)) return NAN;
    return higher_is_better ? log(ratio) : -log(ratio);
}

/* ------------------------------------------------------- Mann-Whitney U */

typedef struct pooled {
    double value;
    int from_a;
} pooled;

static int cmp_pooled(const void *x, const void *y) {
    return cmp_double(&((const pooled *)x)->value, &((const pooled *)y)->value);
}

bc_status bc_mwu_statistic(const double *a, size_t n_a, const double *b, size_t n_b, double *u_a, double *tie_sum) {
    if (n_a == 0 || n_b == 0) return BC_ERR_INVALID;
    size_t n = n_a + n_b;
    pooled *p = malloc(n * sizeof *p);
    if (!p) return BC_ERR_NOMEM;
    for (size_t i = 0; i < n_a; i++) p[i] = (pooled){a[i], 1};
    for (size_t j = 0; j < n_b; j++) p[n_a + j] = (pooled){b[j], 0};
    qsort(p, n, sizeof *p, cmp_pooled);
    /* ranks from 1; a group of t tied values at positions i..i+t-1 all get
     * the mean of ranks i+1..i+t */
    double rank_sum_a = 0, ties = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && p[j].value == p[i].value) j++;
        double t = (double)(j - i), mid_rank = 0.5 * (double)(i + 1 + j);
        for (size_t k = i; k < j; k++)
            if (p[k].from_a) rank_sum_a += mid_rank;
        ties += t * t * t - t;
        i = j;
    }
    free(p);
    *u_a = rank_sum_a - (double)n_a * (double)(n_a + 1) / 2.0;
    *tie_sum = ties;
    return BC_OK;
}

double bc_mwu_p_exact(size_t n_a, size_t n_b, double u_a) {
    double mn = (double)n_a * (double)n_b;
    if (n_a == 0 || n_b == 0 || u_a < 0 || u_a > mn || u_a != floor(u_a)) return NAN;
    size_t m = n_a, n = n_b, n_u = m * n + 1;
    /* count[j][u]: how many orderings of i values of a and j values of b
     * give U = u, for the current i; built up from i = 0 by
     *   count_i,j(u) = count_i-1,j(u - j) + count_i,j-1(u)
     * (the largest value is from a, above all j values of b, or from b).
     * Counts stay below C(40, 20) < 2^53 for BC_MWU_EXACT_MAX_N = 40, so
     * they are exact in a double; beyond that they are still fine as
     * proportions. */
    double *prev = calloc((n + 1) * n_u, sizeof *prev), *cur = calloc((n + 1) * n_u, sizeof *cur);
    if (!prev || !cur) {
        free(prev), free(cur);
        return NAN;
    }
    for (size_t j = 0; j <= n; j++) prev[j * n_u] = 1; /* i = 0: U = 0, one way */
    for (size_t i = 1; i <= m; i++) {
        memset(cur, 0, (n + 1) * n_u * sizeof *cur);
        cur[0] = 1; /* j = 0: U = 0 */
        for (size_t j = 1; j <= n; j++) {
            double *c = cur + j * n_u;
            const double *from_b = cur + (j - 1) * n_u, *from_a = prev + j * n_u;
            size_t top = i * j; /* the largest U with i and j values */
            for (size_t u = 0; u <= top; u++) c[u] = from_b[u] + (u >= j ? from_a[u - j] : 0);
        }
        double *t = prev;
        prev = cur;
        cur = t;
    }
    const double *dist = prev + n * n_u; /* i = m, j = n */
    double u = fmax(u_a, mn - u_a), total = 0, tail = 0;
    for (size_t k = 0; k < n_u; k++) {
        total += dist[k];
        if ((double)k >= u) tail += dist[k];
    }
    free(prev), free(cur);
    double p = 2.0 * tail / total;
    return p > 1.0 ? 1.0 : p;
}

double bc_mwu_p_normal(size_t n_a, size_t n_b, double u_a, double tie_sum) {
    double n1 = (double)n_a, n2 = (double)n_b, n = n1 + n2;
    double mu = n1 * n2 / 2.0;
    double var = n1 * n2 / 12.0 * ((n + 1.0) - tie_sum / (n * (n - 1.0)));
    if (!(var > 0)) return 1.0; /* every value tied: no evidence either way */
    double z = (fmax(u_a, n1 * n2 - u_a) - mu - 0.5) / sqrt(var);
    double p = erfc(z / sqrt(2.0)); /* 2 * (1 - Phi(z)) */
    return p > 1.0 ? 1.0 : p;
}

bc_status bc_mwu_test(const double *a, size_t n_a, const double *b, size_t n_b, bc_mwu_result *out) {
    *out = (bc_mwu_result){.u_a = NAN, .p = NAN};
    bc_status st = bc_mwu_statistic(a, n_a, b, n_b, &out->u_a, &out->tie_sum);
    if (st != BC_OK) return st;
    if (out->tie_sum == 0 && n_a + n_b <= BC_MWU_EXACT_MAX_N) {
        out->exact = 1;
        out->p = bc_mwu_p_exact(n_a, n_b, out->u_a);
        return isnan(out->p) ? BC_ERR_NOMEM : BC_OK;
    }
    out->p = bc_mwu_p_normal(n_a, n_b, out->u_a, out->tie_sum);
    return BC_OK;
}

double bc_mwu_min_p(size_t n_a, size_t n_b) {
    if (n_a == 0 || n_b == 0) return 1.0;
    size_t k = n_a < n_b ? n_a : n_b, n = n_a + n_b;
    double c = 1; /* C(n, k), built as a product; inf when huge (then p is 0) */
    for (size_t i = 1; i <= k; i++) c = c * (double)(n - k + i) / (double)i;
    double p = 2.0 / c;
    return p > 1.0 ? 1.0 : p;
}

/* ------------------------------------------------------------ bootstrap */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

void bc_rng_seed(bc_rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t bc_rng_next(bc_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t bc_rng_below(bc_rng *r, uint64_t n) {
    /* reject the top values that would make some residues more likely */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n, x;
    do x = bc_rng_next(r);
    while (x >= limit);
    return x % n;
}

/* Median of n values drawn with replacement from x[n], via scratch[n]. */
static double resampled_median(bc_rng *r, const double *x, size_t n, double *scratch) {
    for (size_t i = 0; i < n; i++) scratch[i] = x[bc_rng_below(r, n)];
    sort_doubles(scratch, n);
    return median_sorted(scratch, n);
}

/* The q quantile (0 <= q <= 1) of sorted[n] by linear interpolation
 * between order statistics at position q (n - 1). */
static double quantile_sorted(const double *sorted, size_t n, double q) {
    double pos = q * (double)(n - 1);
    size_t i = (size_t)floor(pos);
    if (i + 1 >= n) return sorted[n - 1];
    double frac = pos - (double)i;
    return sorted[i] + frac * (sorted[i + 1] - sorted[i]);
}

bc_status bc_bootstrap_ratio_ci(const double *a, size_t n_a, const double *b, size_t n_b, unsigned n_resamples,
                                uint64_t seed, double level, double *lo, double *hi) {
    *lo = *hi = NAN;
    if (n_resamples == 0 || !(level > 0 && level < 1)) return BC_ERR_INVALID;
    if (n_a == 0 || n_b == 0) return BC_OK;
    double *ratios = malloc(n_resamples * sizeof *ratios), *scratch = malloc((n_a + n_b) * sizeof *scratch);
    if (!ratios || !scratch) {
        free(ratios), free(scratch);
        return BC_ERR_NOMEM;
    }
    bc_rng r;
    bc_rng_seed(&r, seed);
    int finite = 1;
    for (unsigned k = 0; k < n_resamples && finite; k++) {
        double med_a = resampled_median(&r, a, n_a, scratch);
        double med_b = resampled_median(&r, b, n_b, scratch + n_a);
        ratios[k] = med_b / med_a;
        finite = med_a > 0 && med_b > 0 && isfinite(ratios[k]);
    }
    if (finite) {
        qsort(ratios, n_resamples, sizeof *ratios, cmp_double);
        *lo = quantile_sorted(ratios, n_resamples, (1.0 - level) / 2.0);
        *hi = quantile_sorted(ratios, n_resamples, (1.0 + level) / 2.0);
    }
    free(ratios), free(scratch);
    return BC_OK;
}

/* -------------------------------------------------------------- verdict */

const char *bc_verdict_name(bc_verdict v) {
    static const char *const names[BC_N_VERDICTS] = {"BETTER", "WORSE",   "SAME",  "NOISE",
                                                      "UNDERPOWERED", "MISSING", "FAILED", "CHANGED"};
    return (unsigned)v < BC_N_VERDICTS ? names[v] : "?";
}

bc_verdict bc_cmp_verdict_decide(double p, double change_lo, double change_hi, double threshold, double alpha,
                                 double min_p) {
    if (min_p >= alpha) return BC_VERDICT_UNDERPOWERED;
    if (!isfinite(change_lo) || !isfinite(change_hi)) return BC_VERDICT_NOISE;
    int significant = p < alpha;
    if (significant && change_lo > threshold) return BC_VERDICT_BETTER;
    if (significant && change_hi < -threshold) return BC_VERDICT_WORSE;
    if (change_lo >= -threshold && change_hi <= threshold) return BC_VERDICT_SAME;
    return BC_VERDICT_NOISE;
}
