/* stats.c: the statistics table (see stats.h for each definition). */
#include "stats.h"

#include <math.h>
#include <stdlib.h>

const char *const bc_stat_names[BC_N_STATS] = {
    [BC_STAT_N] = "n",     [BC_STAT_MEAN] = "mean", [BC_STAT_STDDEV] = "stddev",
    [BC_STAT_CV] = "cv",   [BC_STAT_MIN] = "min",   [BC_STAT_P50] = "p50",
    [BC_STAT_P95] = "p95", [BC_STAT_P99] = "p99",   [BC_STAT_MAX] = "max",
};

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bc_stats_nearest_rank(const double *sorted, size_t n, unsigned q) {
    /* ceil(q n / 100) in integers, so 0.95 * 20 is 19, not 19.000000000000004 */
    size_t rank = ((size_t)q * n + 99) / 100;
    return sorted[rank > 0 ? rank - 1 : 0];
}

/* The statistics of sorted[n], n >= 1, ascending. */
static void stats_of_sorted(const double *sorted, size_t n, double out[BC_N_STATS]) {
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) sum += sorted[i];
    double mean = sum / (double)n;
    double sq = 0.0;
    for (size_t i = 0; i < n; i++) sq += (sorted[i] - mean) * (sorted[i] - mean);
    double stddev = sqrt(sq / (double)n);

    out[BC_STAT_N] = (double)n;
    out[BC_STAT_MEAN] = mean;
    out[BC_STAT_STDDEV] = stddev;
    out[BC_STAT_CV] = mean != 0.0 ? stddev / fabs(mean) : NAN;
    out[BC_STAT_MIN] = sorted[0];
    out[BC_STAT_P50] = (n % 2) ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    out[BC_STAT_P95] = bc_stats_nearest_rank(sorted, n, 95);
    out[BC_STAT_P99] = bc_stats_nearest_rank(sorted, n, 99);
    out[BC_STAT_MAX] = sorted[n - 1];
}

bc_status bc_stats_compute(const double *values, size_t count, size_t stride, double out[BC_N_STATS], bc_error *err) {
    out[BC_STAT_N] = 0.0;
    for (int s = 1; s < BC_N_STATS; s++) out[s] = NAN;
    if (count == 0) return BC_OK;
    double *sorted = malloc(count * sizeof *sorted); /* owned here, freed below */
    if (!sorted) return bc_error_set(err, BC_ERR_NOMEM, "statistics: out of memory for %zu values", count);
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        double v = values[i * stride];
        if (!isnan(v)) sorted[n++] = v;
    }
    if (n > 0) {
        qsort(sorted, n, sizeof *sorted, cmp_double);
        stats_of_sorted(sorted, n, out);
    }
    free(sorted);
    return BC_OK;
}

size_t bc_stats_median_ci(const double *sorted, size_t n, double *lo, double *hi) {
    *lo = *hi = NAN;
    if (n < BC_MEDIAN_CI_MIN_N) return 0;
    /* P(B <= j) summed from j = 0 with the pmf in logs (2^-n underflows for
     * large n): log pmf(0) = -n ln 2, pmf(j + 1) = pmf(j) (n - j) / (j + 1).
     * k grows while the two tails outside [k, n + 1 - k] stay within 5%. */
    double log_pmf = -(double)n * log(2.0), cdf = 0.0;
    size_t k = 0;
    for (size_t j = 0; j < n / 2; j++) {
        cdf += exp(log_pmf); /* P(B <= j) */
        if (2.0 * cdf > 0.05) break;
        k = j + 1; /* coverage of [x(j+1), x(n-j)] is 1 - 2 P(B <= j) >= 0.95 */
        log_pmf += log((double)(n - j) / (double)(j + 1));
    }
    if (k == 0) return 0;
    *lo = sorted[k - 1];
    *hi = sorted[n - k];
    return k;
}

double bc_stats_median_rel_ci(const double *values, size_t count, size_t stride, bc_error *err) {
    double *sorted = malloc((count ? count : 1) * sizeof *sorted); /* owned here, freed below */
    if (!sorted) {
        bc_error_set(err, BC_ERR_NOMEM, "statistics: out of memory for %zu values", count);
        return NAN;
    }
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        if (!isnan(values[i * stride])) sorted[n++] = values[i * stride];
    double rel = NAN, lo, hi;
    if (n >= BC_MEDIAN_CI_MIN_N) {
        qsort(sorted, n, sizeof *sorted, cmp_double);
        double median = (n % 2) ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
        if (bc_stats_median_ci(sorted, n, &lo, &hi) && median != 0.0) rel = 0.5 * (hi - lo) / fabs(median);
    }
    free(sorted);
    return rel;
}
