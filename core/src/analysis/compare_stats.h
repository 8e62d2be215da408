/* compare_stats.h: the statistics behind `benchctl compare`, as pure
 * functions on plain arrays of doubles. Nothing here knows about runs,
 * cases or files; compare.c feeds it the per-iteration values of one metric
 * of one case from two runs, A (the baseline) and B.
 *
 * Samples: a[n_a] from run A, b[n_b] from run B, finite values only (the
 * caller leaves out NaN, "not measured"). Neither array is modified.
 *
 *   median       the interpolated median (the mean of the two middle values
 *                when n is even), as stats.h's p50.
 *   ratio        median(b) / median(a).
 *   change       the log of the ratio, signed so that positive means B is
 *                better:
 *                  higher is better (throughput):  change = ln(ratio)
 *                  lower is better (times, bytes): change = -ln(ratio)
 *                symmetric: B 2x faster is +0.693 and 2x slower -0.693
 *                whichever side is the baseline; exp(|change|) is the
 *                factor ("2.90x faster", "158x slower").
 *   bootstrap    percentile interval of the ratio: n_resamples times, draw
 *                n_a values from a and n_b from b with replacement, take the
 *                ratio of their medians; the interval is the (1-level)/2 and
 *                (1+level)/2 quantiles of those ratios (linear interpolation
 *                between order statistics, numpy's default). The draws come
 *                from xoshiro256** seeded through splitmix64 with the given
 *                seed, so the same data and seed give the same interval.
 *   Mann-Whitney U, two-sided: U_a counts the pairs (a_i, b_j) with
 *                a_i > b_j, plus one half per tied pair (scipy's U1). The
 *                p-value is 2 P(U >= max(U_a, U_b)) under the null, capped
 *                at 1, from the exact null distribution when there are no
 *                ties and n_a + n_b <= BC_MWU_EXACT_MAX_N, else from the
 *                normal approximation with the tie correction
 *                  sigma^2 = n_a n_b / 12 * ((N + 1) - sum(t^3 - t) / (N (N - 1)))
 *                (t: the size of each group of tied values, N = n_a + n_b)
 *                and a continuity correction of 0.5. These are scipy's
 *                mannwhitneyu(a, b, alternative='two-sided') with
 *                method='exact' and method='asymptotic', use_continuity=True.
 *   verdict      see bc_cmp_verdict_decide.
 */
#ifndef BENCHCTL_COMPARE_STATS_H
#define BENCHCTL_COMPARE_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"

/* The exact distribution of U is used up to this many values in all. */
#define BC_MWU_EXACT_MAX_N 40

/* Interpolated median of x[n] (n >= 1), NaN when n is 0. scratch[n] is
 * overwritten (it may not alias x). */
double bc_cmp_median(const double *x, size_t n, double *scratch);

/* The change (a log factor, positive = better) for a ratio B/A of medians;
 * NaN when the ratio is not a finite positive number. */
double bc_cmp_change(double ratio, int higher_is_better);

/* ------------------------------------------------------- Mann-Whitney U */

typedef struct bc_mwu_result {
    double u_a;    /* U of sample a (scipy's U1); u_b = n_a n_b - u_a */
    double p;      /* two-sided p-value, in [0, 1] */
    double tie_sum; /* sum over groups of tied values of t^3 - t (0: no ties) */
    int exact;     /* 1: from the exact null distribution; 0: normal approximation */
} bc_mwu_result;

/* U of sample a and the tie sum of the pooled sample. BC_ERR_NOMEM when the
 * scratch cannot be allocated; BC_ERR_INVALID when n_a or n_b is 0. */
bc_status bc_mwu_statistic(const double *a, size_t n_a, const double *b, size_t n_b, double *u_a, double *tie_sum);

/* Two-sided p from the exact null distribution of U (no ties): 2 P(U >= max(u_a, n_a n_b - u_a)),
 * capped at 1. NaN when the table cannot be allocated or u_a is not an integer. */
double bc_mwu_p_exact(size_t n_a, size_t n_b, double u_a);

/* Two-sided p from the normal approximation with tie and continuity
 * correction. 1 when every value is tied (sigma = 0). */
double bc_mwu_p_normal(size_t n_a, size_t n_b, double u_a, double tie_sum);

/* The whole test: statistic, then the exact p when there are no ties and
 * n_a + n_b <= BC_MWU_EXACT_MAX_N, else the normal approximation. */
bc_status bc_mwu_test(const double *a, size_t n_a, const double *b, size_t n_b, bc_mwu_result *out);

/* The smallest two-sided p the exact test can give for these sizes:
 * 2 / C(n_a + n_b, n_a), capped at 1 (1 when either is 0). When it is not
 * below alpha, no data of these sizes can be significant. */
double bc_mwu_min_p(size_t n_a, size_t n_b);

/* ------------------------------------------------------------ bootstrap */

/* The default resampling: 10,000 resamples, seed 1, a 95% interval. */
#define BC_BOOTSTRAP_RESAMPLES 10000u
#define BC_BOOTSTRAP_SEED UINT64_C(1)
#define BC_BOOTSTRAP_LEVEL 0.95

/* Percentile bootstrap interval [*lo, *hi] of median(b) / median(a) (see
 * the top of this file). Both are NaN when some resample's ratio is not a
 * finite positive number (a median of 0 or below), or n_a or n_b is 0.
 * BC_ERR_NOMEM when scratch cannot be allocated; BC_ERR_INVALID for
 * n_resamples 0 or level outside (0, 1). */
bc_status bc_bootstrap_ratio_ci(const double *a, size_t n_a, const double *b, size_t n_b, unsigned n_resamples,
                                uint64_t seed, double level, double *lo, double *hi);

/* xoshiro256** seeded by splitmix64: the generator behind the bootstrap,
 * exposed for tests. */
typedef struct bc_rng {
    uint64_t s[4];
} bc_rng;
void bc_rng_seed(bc_rng *r, uint64_t seed);
uint64_t bc_rng_next(bc_rng *r);
/* Uniform in [0, n), n >= 1, without modulo bias. */
uint64_t bc_rng_below(bc_rng *r, uint64_t n);

/* -------------------------------------------------------------- verdict */

typedef enum bc_verdict {
    BC_VERDICT_BETTER = 0, /* significant and the whole interval beyond +threshold */
    BC_VERDICT_WORSE,      /* significant and the whole interval beyond -threshold */
    BC_VERDICT_SAME,       /* the whole interval within +-threshold */
    BC_VERDICT_NOISE,      /* neither: the data cannot tell */
    BC_VERDICT_UNDERPOWERED, /* the sample sizes cannot reach p < alpha at all */
    BC_VERDICT_MISSING,    /* one side has no case, or no measured value */
    BC_VERDICT_FAILED,     /* one side's case did not finish ok */
    /* a metric no direction is better for (better = neither): BETTER or
     * WORSE by the rule above, which compare says as CHANGED */
    BC_VERDICT_CHANGED,
    BC_N_VERDICTS
} bc_verdict;

/* "BETTER", "WORSE", ... */
const char *bc_verdict_name(bc_verdict v);

/* The verdict for one metric of one matched case whose both sides are ok
 * and measured. change_lo..change_hi is the interval of the change (positive
 * = better, a log factor), threshold a log factor too (compare passes
 * log1p of its relative --threshold), alpha as given (0.01), min_p
 * from bc_mwu_min_p. In this order:
 *   UNDERPOWERED  min_p >= alpha
 *   NOISE         the interval is not finite (a median of 0 or below)
 *   BETTER        p < alpha and change_lo > +threshold
 *   WORSE         p < alpha and change_hi < -threshold
 *   SAME          -threshold <= change_lo and change_hi <= +threshold
 *   NOISE         otherwise */
bc_verdict bc_cmp_verdict_decide(double p, double change_lo, double change_hi, double threshold, double alpha,
                                 double min_p);

#endif
