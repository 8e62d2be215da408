/* stats.c: mean, interpolated median, nearest-rank p95, min, max and
 * population standard deviation of one field; NaN values are skipped. */
#include "stats.h"

#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void stats_set_empty(bc_stats *out) {
    out->n = 0;
    out->mean = out->p50 = out->p95 = out->min = out->max = out->stddev = NAN;
}

bc_status bc_stats_compute(const double *values, size_t count, size_t stride, bc_stats *out, bc_error *err) {
    stats_set_empty(out);
    if (count == 0) return BC_OK;
    double *sorted = malloc(count * sizeof *sorted); /* owned here, freed below */
    if (!sorted) return bc_error_set(err, BC_ERR_NOMEM, "statistics: out of memory for %zu values", count);
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        double v = values[i * stride];
        if (!isnan(v)) sorted[n++] = v;
    }
    if (n == 0) {
        free(sorted);
        return BC_OK;
    }
    qsort(sorted, n, sizeof *sorted, cmp_double);

    double sum = 0.0;
    for (size_t i = 0; i < n; i++) sum += sorted[i];
    double mean = sum / (double)n;
    double sq = 0.0;
    for (size_t i = 0; i < n; i++) sq += (sorted[i] - mean) * (sorted[i] - mean);

    out->n = (uint32_t)n;
    out->mean = mean;
    out->stddev = sqrt(sq / (double)n);
    out->min = sorted[0];
    out->max = sorted[n - 1];
    out->p50 = (n % 2) ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    /* nearest rank: ceil(0.95 n) computed in integers to avoid 0.95 * 20 = 19.000000000000004 */
    size_t rank = (95 * n + 99) / 100;
    out->p95 = sorted[rank > 0 ? rank - 1 : 0];
    free(sorted);
    return BC_OK;
}
