/* rowlat.h: per-row (per-request) latencies of one rollout, from the
 * schedule a backend hands back with generate (bc_generation_stats,
 * ABI 2.3: row_first_token_ms, row_done_step, decode_step_ms), summarised
 * over the rows as the run's fields row_ttft_ms_p50 ... (fields.c).
 *
 * For row r of R (a row is one sample: batch x samples_per_prompt rows),
 * with E = the rollout's prompt_expansion_ms (the request arrives when the
 * rollout starts, as time_to_first_token_ms counts it):
 *   ttft_r  = E + row_first_token_ms[r]                        (ms)
 *   e2e_r   = ttft_r + sum of decode_step_ms[0 .. done_r - 1]   (ms), the
 *             row's last token, done_r = row_done_step[r]
 *   tpot_r  = (e2e_r - ttft_r) / done_r, for rows with done_r >= 1 (a row
 *             that ended at its token 0 has no time per output token)
 * e2e and tpot need the decode steps to be the row's own steps, one after
 * another from its token 0: true when every row took token 0 from the same
 * prefill (every row_first_token_ms equal, a static batch). With continuous
 * batching rows join later and other rows' prefills run between steps, which
 * decode_step_ms does not hold: e2e and tpot are then unknown (NAN), ttft is
 * still exact.
 * Over the rows: p50 interpolated, p90 and p99 nearest rank (as the run's
 * statistics, analysis/stats.h). Nothing here prints or exits.
 */
#ifndef BENCHCTL_ROWLAT_H
#define BENCHCTL_ROWLAT_H

#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"

enum { BC_ROWLAT_P50 = 0, BC_ROWLAT_P90, BC_ROWLAT_P99, BC_ROWLAT_N_PCT };

typedef struct bc_row_latency {
    double ttft_ms[BC_ROWLAT_N_PCT]; /* p50, p90, p99 over the rows; NAN unknown */
    double tpot_ms[BC_ROWLAT_N_PCT];
    double e2e_ms[BC_ROWLAT_N_PCT];
} bc_row_latency;

/* Fills out from a schedule of n_rows rows and n_steps decode steps
 * (step_ms may be NULL when n_steps is 0). A schedule that does not hold
 * (NULL arrays, a done step past n_steps, a negative or non-finite time)
 * gives all NAN. BC_ERR_NOMEM (out all NAN) when scratch runs out. */
bc_status bc_row_latency_compute(int64_t n_rows, const double *row_first_token_ms, const int32_t *row_done_step,
                                 uint32_t n_steps, const double *step_ms, double expand_ms, bc_row_latency *out,
                                 bc_error *err);

/* The run's row fields of one rollout into row (the run's fields, total_ms
 * set; runner.h BC_FIELD_ROW_*): the percentiles above from g's schedule
 * (when the backend kept one) and rows_per_second = c's rows (batch x
 * samples) / (total_ms / 1000). What is unknown stays NaN. BC_ERR_NOMEM
 * when scratch runs out. */
bc_status bc_row_latency_fields(const bc_generation_stats *g, double expand_ms, const bc_case *c, double *row,
                                bc_error *err);

/* The slowest row of g's schedule (the RL frameworks' "slowest sample"):
 * the row whose last token came last, row_first_token_ms[r] plus the
 * decode steps up to row_done_step[r]. *row its index, *last_ms the ms
 * from generate's start to that token, *tokens its response length (1 +
 * its done step). Only when every row started together (a static batch:
 * the decode steps are then every row's); -1, NAN, -1 otherwise, and
 * without a schedule or with one that does not hold. */
void bc_row_slowest(const bc_generation_stats *g, int64_t *row, double *last_ms, int64_t *tokens);

#endif
