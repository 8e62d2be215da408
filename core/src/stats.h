/* stats.h: summary statistics of one per-iteration field (bc_stats).
 *
 * Over the measured values of a field (NaN = not measured, skipped):
 *   mean, population stddev (divides by n), min, max,
 *   p50: interpolated median (mean of the two middle values when n is even),
 *   p95: nearest rank, sorted[max(0, ceil(0.95 n) - 1)].
 * When no value was measured, n = 0 and every statistic is NaN.
 */
#ifndef BENCHCTL_STATS_H
#define BENCHCTL_STATS_H

#include <stddef.h>

#include "benchctl/plugin.h"

/* Summarises values[0], values[stride], ... values[(count - 1) * stride].
 * stride is in elements (1 for a plain array). Allocates scratch internally;
 * returns BC_ERR_NOMEM if that fails (out is then all NaN, n = 0). */
bc_status bc_stats_compute(const double *values, size_t count, size_t stride, bc_stats *out, bc_error *err);

#endif
