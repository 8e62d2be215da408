/* stats.h: the statistics benchctl reports for every per-iteration field.
 *
 * The statistics are a table (bc_stat_names, in this order); a case report
 * holds n_fields x BC_N_STATS doubles. Over the measured values of a field
 * (NaN = not measured, skipped):
 *   n       how many values were measured
 *   mean
 *   stddev  population standard deviation (divides by n)
 *   cv      coefficient of variation, stddev / |mean| (NaN when mean is 0)
 *   min, max
 *   p50     interpolated median (mean of the two middle values when n is even)
 *   p95     nearest rank: sorted[max(0, ceil(0.95 n) - 1)]
 *   p99     nearest rank: sorted[max(0, ceil(0.99 n) - 1)]
 * When no value was measured, n is 0 and every other statistic is NaN.
 * Adding a statistic is one row in stats.c; reporters read the table by name.
 */
#ifndef BENCHCTL_STATS_H
#define BENCHCTL_STATS_H

#include <stddef.h>

#include "benchctl/plugin.h"

enum {
    BC_STAT_N = 0,
    BC_STAT_MEAN,
    BC_STAT_STDDEV,
    BC_STAT_CV,
    BC_STAT_MIN,
    BC_STAT_P50,
    BC_STAT_P95,
    BC_STAT_P99,
    BC_STAT_MAX,
    BC_N_STATS
};

/* Names of the statistics, indexed by BC_STAT_*. */
extern const char *const bc_stat_names[BC_N_STATS];

/* Summarises values[0], values[stride], ... values[(count - 1) * stride]
 * into out[BC_N_STATS]. stride is in elements (1 for a plain array).
 * Allocates scratch internally; returns BC_ERR_NOMEM if that fails (out is
 * then n = 0 and NaN). */
bc_status bc_stats_compute(const double *values, size_t count, size_t stride, double out[BC_N_STATS], bc_error *err);

/* Nearest-rank percentile q (0 < q <= 100, an integer percent) of sorted[n],
 * n >= 1: sorted[max(0, ceil(q n / 100) - 1)]. */
double bc_stats_nearest_rank(const double *sorted, size_t n, unsigned q);

#endif
