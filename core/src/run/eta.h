/* eta.h: the runner's estimate of the time a run has left.
 *
 * Cases run largest first within each group (matrix.h), so the mean wall
 * time of the cases finished so far overestimates the ones still to come.
 * Instead, a case's cost is modelled from its size:
 *   units(c)         = effective batch x (prompt + response) tokens, the
 *                      token slots one rollout processes (prompt_length 0,
 *                      a prompts file: the widest prompt seen so far);
 *   per iteration ms = a + b x units, fitted by least squares over the
 *                      finished cases, each giving one point (its units,
 *                      its wall time / its warmup + measured iterations, so
 *                      begin_case and cache work are spread over them);
 *   case ms          = per iteration ms x (warmup + the iterations it is
 *                      expected to measure), at most max_seconds_per_case
 *                      plus one iteration when that cap is set. Expected:
 *                      the fixed count; with adaptive iterations the mean
 *                      of the finished cases (min_iterations before any,
 *                      when there is a target, else max_iterations), and
 *                      for the running case, once its CI is known, the n
 *                      at which a CI shrinking as 1 / sqrt(n) meets the
 *                      target.
 * With one finished case, or when the fit is degenerate (all cases the same
 * size, a negative slope or intercept), the line goes through the origin and
 * the mean point (cost proportional to units). Before any case finished
 * there is no estimate (NAN).
 */
#ifndef BENCHCTL_ETA_H
#define BENCHCTL_ETA_H

#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"

typedef struct bc_eta {
    size_t n;                /* points of the fit */
    double su, sut, st, suu; /* sums of units, units x ms, ms, units^2 */
    size_t n_cases;          /* finished cases that measured something */
    double measured_sum;     /* their measured iterations */
    uint32_t widest_prompt;  /* widest prompt seen, for prompt_length 0 */
} bc_eta;

/* The token slots one rollout of c processes (see the top). */
double bc_eta_units(const bc_eta *e, const bc_case *c);

/* Adds one point to the fit: a case of units whose iterations (warmup and
 * measured) took iteration_ms each, wall time included. For the case still
 * running, the runner adds it to a copy. */
void bc_eta_add_point(bc_eta *e, double units, double iteration_ms);

/* Adds a finished case: its units, the warmup and measured iterations it
 * ran, its wall time, and the prompt width that ran (-1 unknown). A case
 * that measured nothing (it failed early) adds only its prompt width. */
void bc_eta_add(bc_eta *e, double units, uint32_t warmup, uint32_t measured, double wall_ms, int64_t prompt_width);

/* The modelled ms of one iteration of a case of units; NAN without data. */
double bc_eta_iteration_ms(const bc_eta *e, double units);

/* Measured iterations a case is expected to run: the mean of the finished
 * cases rounded, within [lo, hi]; none_yet before any. */
uint32_t bc_eta_expected_iterations(const bc_eta *e, uint32_t lo, uint32_t hi, uint32_t none_yet);

/* The iterations a case that has measured n, with a relative CI of rel_ci
 * so far, needs to reach target (the CI shrinks as 1 / sqrt(n)):
 * n (rel_ci / target)^2 rounded up, within [lo, hi]; none_yet when rel_ci
 * is not known. */
uint32_t bc_eta_iterations_to_target(uint32_t n, double rel_ci, double target, uint32_t lo, uint32_t hi,
                                     uint32_t none_yet);

/* The modelled wall ms of a case of units that runs warmup + measured
 * iterations: per iteration ms x their count, at most max_seconds x 1000
 * plus one iteration when max_seconds > 0 (NAN: no cap); NAN without data.
 * What the runner's ETA sums over the cases still to come, and what `plan
 * --estimate-from RUN` sums over the plan with e fitted on RUN's cases. */
double bc_eta_case_ms(const bc_eta *e, double units, uint32_t warmup, uint32_t measured, double max_seconds);

#endif
