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

/* The fewest values bc_stats_median_ci can give an interval for. */
#define BC_MEDIAN_CI_MIN_N 6

/* The distribution-free 95% confidence interval of the median of sorted[n]
 * (ascending): [sorted[k-1], sorted[n-k]] (k 1-based) for the largest k
 * whose coverage, 1 - 2 P(B <= k - 1) with B ~ Binomial(n, 1/2), is at least
 * 0.95. It assumes only independent draws from one continuous distribution.
 * The smallest n with such a k is BC_MEDIAN_CI_MIN_N (k = 1, coverage
 * 1 - 2/64). Returns k, or 0 (lo and hi NAN) when n is too small. */
size_t bc_stats_median_ci(const double *sorted, size_t n, double *lo, double *hi);

/* Half the width of that interval divided by the median (interpolated, as
 * p50), over values[0], values[stride], ... (NaN values left out): the
 * relative precision run.target_rel_ci is compared with. NAN when fewer than
 * BC_MEDIAN_CI_MIN_N values were measured or the median is 0; BC_ERR_NOMEM
 * in err (and NAN) when scratch memory runs out. */
double bc_stats_median_rel_ci(const double *values, size_t count, size_t stride, bc_error *err);

#endif
